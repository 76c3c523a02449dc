// The log sink and its text and JSON formats. See logging.h.
#include "server/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "schedext/wire/encoder.h"

namespace schedext::server {
namespace {

// %* in a JSON log pattern: the message, escaped as a JSON string body.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string quoted;
    wire::AppendJsonString(std::string_view(msg.payload.data(), msg.payload.size()), quoted);
    dest.append(quoted.data() + 1, quoted.data() + quoted.size() - 1);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

}  // namespace

Status SetUpLogging(const config::LogConfig& log) {
  const spdlog::level::level_enum level = spdlog::level::from_str(log.level);
  if (level == spdlog::level::off && log.level != "off") {
    return InvalidArgumentError("log level \"" + log.level +
                                "\": use trace, debug, info, warn, error, critical or off");
  }
  auto logger = spdlog::stderr_color_mt("schedext");
  if (log.format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%f%z %^%l%$ %v");
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return OkStatus();
}

}  // namespace schedext::server
