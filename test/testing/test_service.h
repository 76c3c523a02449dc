// The set-up the server tests share: an ExtenderService built from a YAML
// configuration with the built-in policies (plus a test's own), and the same
// service behind an HttpServer on the loopback interface.
//
//   auto built = MakeTestService({.config_yaml = kConfig, .binder = &binder});
//   ASSERT_TRUE(built.ok()) << built.status().ToString();
//   built->service->Handle(...);
//
//   LoopbackServer server({.config_yaml = kConfig}, [](server::HttpServerOptions& o) {
//     o.version = "test";
//   });
//   ASSERT_TRUE(server.init().ok());
//   Exchange(server.port(), BuildRequest("GET", "/healthz", ""));
//
// Thread-safety: a LoopbackServer serves on a thread of its own; its methods
// are for the test's thread.
#ifndef SCHEDEXT_TEST_TESTING_TEST_SERVICE_H_
#define SCHEDEXT_TEST_TESTING_TEST_SERVICE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "schedext/cluster/cache.h"
#include "schedext/cluster/binder.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/registry.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "schedext/status.h"

namespace schedext::testing {

// What a test's service is made of. Only config_yaml is required.
struct ServiceSpec {
  std::string_view config_yaml = {};  // a schedext configuration with profiles
  cluster::ClusterCache* cache = nullptr;
  cluster::PodBinder* binder = nullptr;
  // Registers the test's own policies after the built-in ones.
  std::function<Status(policy::Registry&)> register_more = nullptr;
};

// The profiles of `spec`, built in order with the paths "profiles[i]".
StatusOr<std::vector<std::shared_ptr<const pipeline::Profile>>> BuildProfiles(
    const ServiceSpec& spec);

// An ExtenderService and the Metrics it counts into (one row per profile).
struct TestService {
  std::unique_ptr<server::Metrics> metrics;
  std::unique_ptr<server::ExtenderService> service;
};

// The service of `spec`; its default profile is the first.
StatusOr<TestService> MakeTestService(const ServiceSpec& spec);

// The service of `spec` behind an HttpServer on 127.0.0.1, a free port and
// two threads (then `tweak` sets what the test needs), bound and serving on
// a thread of its own from construction to Stop() or destruction.
class LoopbackServer {
 public:
  explicit LoopbackServer(const ServiceSpec& spec,
                          const std::function<void(server::HttpServerOptions&)>& tweak = nullptr);
  ~LoopbackServer() { Stop(); }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  // Whether the service was built and the server bound.
  const Status& init() const { return init_; }
  int port() const { return server_->port(); }
  int status_port() const { return server_->status_port(); }
  server::Metrics& metrics() { return *built_.metrics; }

  // Serve() must have entered its accept loop before Stop() can end it: one
  // answered GET /healthz (on the status listener when there is one) proves
  // that, as the listening socket queues the request until then. For a test
  // that may end before any request was answered; nothing when not serving.
  void AwaitServing() const;

  // Ends Serve() (the drain) and joins its thread; true when Serve() returned
  // within `timeout`. Expects Serve() to have succeeded.
  bool Stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Starts the drain without waiting (the test talks to it meanwhile).
  void StartStop() { server_->Stop(); }

 private:
  Status init_;
  TestService built_;
  std::unique_ptr<server::HttpServer> server_;
  std::thread thread_;
  std::atomic<bool> finished_{false};
  Status served_;
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_TEST_SERVICE_H_
