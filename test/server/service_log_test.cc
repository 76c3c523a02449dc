// ExtenderService's request log lines: request-derived text is escaped and
// cut, and client-triggered warnings are rate-limited and counted in /metrics.
// The default spdlog logger is replaced by one writing into a string for the
// test's lifetime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "testing/test_service.h"

namespace schedext::server {
namespace {

using ::testing::HasSubstr;

class ServiceLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_pattern("%l %v");  // one line per message, as the text format
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);

    // No binder: every bind fails ("no Kubernetes API connection") and warns.
    auto built = schedext::testing::MakeTestService(
        {.config_yaml =
             "profiles:\n  - name: default\n    policies:\n      - name: TaintToleration\n"});
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    metrics_ = std::move(built->metrics);
    service_ = std::move(built->service);
  }
  void TearDown() override { spdlog::set_default_logger(previous_); }

  int Bind(const std::string& pod_name) {
    const std::string body = nlohmann::json{
        {"PodName", pod_name},
        {"PodNamespace", "default"},
        {"PodUID", "u-1"},
        {"Node", "n1"}}.dump();
    return Handle(Verb::kBind, body);
  }
  int Handle(Verb verb, const std::string& body) {
    wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(body);
    return service_->Handle(verb, 0, buffer, scratch_, out_, summary_);
  }
  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    std::istringstream in(log_.str());
    for (std::string line; std::getline(in, line);) {
      lines.push_back(line);
    }
    return lines;
  }
  std::string MetricsText() const {
    std::string text;
    metrics_->Render(text);
    return text;
  }

  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> previous_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<ExtenderService> service_;
  Scratch scratch_;
  std::string out_;
  RequestSummary summary_;
};

TEST_F(ServiceLogTest, APodNameWithANewlineCannotForgeALogLine) {
  const std::string forged =
      "web-1\n2026-12-01T00:00:00.000000+00:00 info bind default/x to n1: ok";
  ASSERT_EQ(Bind(forged), 200);
  // The reply still carries the name as given (JSON-escaped by the encoder).
  EXPECT_THAT(out_, HasSubstr("web-1\\n2026-12-01"));
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u) << log_.str();
  EXPECT_EQ(lines[0].rfind("warning bind profile=default pod=default/web-1\\n2026-12-01T00:00:00"
                           ".000000+00:00 info bind default/x to n1: ok nodes=1 status=200",
                           0),
            0u)
      << lines[0];
  // The name inside the error message is escaped too.
  EXPECT_THAT(lines[0], HasSubstr("error: bind default/web-1\\n2026-12-01T00:00:00"));
}

TEST_F(ServiceLogTest, AHugeNameMakesABoundedLine) {
  const std::string huge(3900000, 'a');
  ASSERT_EQ(Bind(huge), 200);
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  // 256 bytes of the name in pod=, 1024 of the error message, the rest fixed.
  EXPECT_LT(lines[0].size(), 1500u) << lines[0].size();
  EXPECT_THAT(lines[0],
              HasSubstr("pod=default/" + std::string(256, 'a') + "\xE2\x80\xA6(3900000 bytes) "));
  EXPECT_TRUE(lines[0].ends_with(" bytes)")) << lines[0].substr(lines[0].size() - 40);
}

TEST_F(ServiceLogTest, ControlCharactersAreEscaped) {
  // (The decoder refuses invalid UTF-8 with a 400, so it cannot reach a name;
  // request_log_test covers its escaping.)
  ASSERT_EQ(Bind(std::string("a\rb\tc\x1b[2J\x7f") + "\xE2\x80\xA8z\\n"), 200);
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("pod=default/a\\rb\\tc\\x1b[2J\\x7f\\u2028z\\\\n nodes="));
  EXPECT_EQ(std::count_if(lines[0].begin(), lines[0].end(),
                          [](char c) { return static_cast<unsigned char>(c) < 0x20; }),
            0);
}

TEST_F(ServiceLogTest, BadRequestFloodIsRateLimitedCountedAndSummarized) {
  constexpr int kFlood = 2000;
  for (int i = 0; i < kFlood; ++i) {
    ASSERT_EQ(Handle(Verb::kFilter, "nope"), 400);
  }
  size_t logged = 0;
  for (const std::string& line : Lines()) {
    logged += line.find("filter profile=default") != std::string::npos ? 1 : 0;
  }
  // The burst (20) plus what the 10/s refill allowed while the loop ran.
  EXPECT_GE(logged, 20u);
  EXPECT_LT(logged, static_cast<size_t>(kFlood));
  EXPECT_THAT(MetricsText(), HasSubstr("\nschedext_log_suppressed_total " +
                                       std::to_string(kFlood - logged) + "\n"));

  // Failed requests have a budget of their own: the flood does not hide them.
  ASSERT_EQ(Bind("web-1"), 200);
  EXPECT_THAT(log_.str(), HasSubstr("warning bind profile=default pod=default/web-1 "));
}

TEST_F(ServiceLogTest, TheSummaryComesWithTheNextAllowedWarning) {
  // Failed binds share one limiter: exhaust its burst, drop a few more.
  for (int i = 0; i < 25; ++i) {
    ASSERT_EQ(Bind("web-1"), 200);
  }
  const std::string before = log_.str();
  size_t warned = 0;
  for (const std::string& line : Lines()) {
    warned += line.find("warning bind ") == 0 ? 1 : 0;
  }
  ASSERT_LT(warned, 25u);
  // Nothing is said about the drops until a warning is allowed again (100 ms
  // at 10/s); then the summary line comes first.
  EXPECT_EQ(before.find("suppressed"), std::string::npos);
  for (int i = 0; i < 100 && log_.str() == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(Bind("web-2"), 200);
  }
  const std::string after = log_.str().substr(before.size());
  EXPECT_THAT(after, HasSubstr("warning suppressed "));
  EXPECT_THAT(after, HasSubstr(" warnings about failed requests in the last "));
  EXPECT_LT(after.find("suppressed"), after.find("pod=default/web-2"));
}

}  // namespace
}  // namespace schedext::server
