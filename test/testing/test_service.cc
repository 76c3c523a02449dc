#include "testing/test_service.h"

#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "schedext/config/config.h"
#include "testing/loopback.h"

namespace schedext::testing {

StatusOr<std::vector<std::shared_ptr<const pipeline::Profile>>> BuildProfiles(
    const ServiceSpec& spec) {
  policy::Registry registry;
  SCHEDEXT_RETURN_IF_ERROR(policy::RegisterBuiltinPolicies(registry));
  if (spec.register_more) {
    SCHEDEXT_RETURN_IF_ERROR(spec.register_more(registry));
  }
  SCHEDEXT_ASSIGN_OR_RETURN(config::Config config, config::LoadConfigText(spec.config_yaml, "test"));
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles;
  for (size_t i = 0; i < config.profiles.size(); ++i) {
    SCHEDEXT_ASSIGN_OR_RETURN(
        std::shared_ptr<const pipeline::Profile> profile,
        pipeline::Profile::Build(config.profiles[i], registry,
                                 "profiles[" + std::to_string(i) + "]"));
    profiles.push_back(std::move(profile));
  }
  return profiles;
}

StatusOr<TestService> MakeTestService(const ServiceSpec& spec) {
  SCHEDEXT_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const pipeline::Profile>> profiles,
                            BuildProfiles(spec));
  std::vector<std::string> names;
  for (const auto& profile : profiles) {
    names.push_back(profile->name());
  }
  TestService built;
  built.metrics = std::make_unique<server::Metrics>(std::move(names));
  built.service = std::make_unique<server::ExtenderService>(
      std::move(profiles), 0, spec.cache, spec.binder, built.metrics.get());
  return built;
}

LoopbackServer::LoopbackServer(const ServiceSpec& spec,
                               const std::function<void(server::HttpServerOptions&)>& tweak) {
  StatusOr<TestService> built = MakeTestService(spec);
  if (!built.ok()) {
    init_ = built.status();
    return;
  }
  built_ = std::move(built).value();
  server::HttpServerOptions options;
  options.server.host = "127.0.0.1";
  options.server.port = 0;
  options.server.threads = 2;
  if (tweak) {
    tweak(options);
  }
  server_ = std::make_unique<server::HttpServer>(*built_.service, built_.metrics.get(), options);
  init_ = server_->Bind();
  if (init_.ok()) {
    thread_ = std::thread([this] {
      served_ = server_->Serve();
      finished_ = true;
    });
  }
}

void LoopbackServer::AwaitServing() const {
  if (!thread_.joinable()) {
    return;
  }
  const int probe_port = server_->status_port() > 0 ? server_->status_port() : server_->port();
  const HttpReply probe = Exchange(probe_port, BuildRequest("GET", "/healthz", ""));
  EXPECT_EQ(probe.status, 200) << probe.reason;
}

bool LoopbackServer::Stop(std::chrono::milliseconds timeout) {
  if (!thread_.joinable()) {
    return true;
  }
  server_->Stop();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!finished_.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool in_time = finished_.load();
  thread_.join();
  EXPECT_TRUE(served_.ok()) << served_.ToString();
  return in_time;
}

}  // namespace schedext::testing
