// A stand-in for HAMi's device plugin as far as its node lock goes (shared by
// the HAMi end-to-end and failover tests).
#ifndef SCHEDEXT_TEST_CONTROL_PLANE_HAMI_LOCK_RELEASER_H_
#define SCHEDEXT_TEST_CONTROL_PLANE_HAMI_LOCK_RELEASER_H_

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "testing/control_plane.h"

namespace schedext::testing::e2e {

// HAMi's device plugin, as far as the node lock goes: while running, it
// polls `node` and, when hami.io/mutex.lock names a pod that is bound
// there, records that pod and removes the lock (as the plugin does once
// it has allocated). A lock naming a pod that is not bound yet stays.
class LockReleaser {
 public:
  static constexpr const char* kLock = "hami.io/mutex.lock";

  // Polls every `period`.
  LockReleaser(const ControlPlane& cp, std::string node,
               std::chrono::milliseconds period = std::chrono::milliseconds(50))
      : cp_(cp), node_(std::move(node)), period_(period) {
    thread_ = std::thread([this] { Run(); });
  }
  ~LockReleaser() {
    stop_ = true;
    thread_.join();
  }
  std::vector<std::string> holders() const {
    std::lock_guard<std::mutex> lock(mu_);
    return holders_;
  }
  std::vector<std::string> errors() const {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  void Run() {
    while (!stop_) {
      Poll();
      std::this_thread::sleep_for(period_);
    }
  }
  void Poll() {
    const auto node = cp_.AdminRequest("GET", "/api/v1/nodes/" + node_);
    if (!node.ok() || node->status != 200) return;
    const nlohmann::json n = nlohmann::json::parse(node->body, nullptr, false);
    const std::string value =
        n["metadata"].value("annotations", nlohmann::json::object()).value(kLock, "");
    if (value.empty()) return;
    const size_t c1 = value.find(',');
    const size_t c2 = value.find(',', c1 == std::string::npos ? c1 : c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) {
      Error("malformed lock " + value);
      return;
    }
    const std::string pod_ns = value.substr(c1 + 1, c2 - c1 - 1);
    const std::string pod_name = value.substr(c2 + 1);
    const auto pod =
        cp_.AdminRequest("GET", "/api/v1/namespaces/" + pod_ns + "/pods/" + pod_name);
    if (!pod.ok() || pod->status != 200) return;
    const nlohmann::json bound = nlohmann::json::parse(pod->body, nullptr, false);
    if (bound["spec"].value("nodeName", "") != node_) return;
    nlohmann::json release;
    release["metadata"]["resourceVersion"] = n["metadata"].value("resourceVersion", "");
    release["metadata"]["annotations"][kLock] = nullptr;
    const auto r = cp_.AdminRequest("PATCH", "/api/v1/nodes/" + node_, release.dump());
    if (r.ok() && r->status == 200) {
      std::lock_guard<std::mutex> lock(mu_);
      holders_.push_back(pod_name);
    }
  }
  void Error(std::string e) {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.push_back(std::move(e));
  }

  const ControlPlane& cp_;
  const std::string node_;
  const std::chrono::milliseconds period_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> holders_;
  std::vector<std::string> errors_;
  std::thread thread_;
};

}  // namespace schedext::testing::e2e

#endif  // SCHEDEXT_TEST_CONTROL_PLANE_HAMI_LOCK_RELEASER_H_
