// FakeLeaseStore / FakeLeaseClient: an in-memory coordination.k8s.io/v1
// Lease endpoint for LeaderElector unit tests, with the API server's write
// semantics that the elector relies on:
//   * GET .../leases/<name>: 200 with the object, 404 when absent;
//   * POST .../leases: 201, or 409 AlreadyExists;
//   * PATCH .../leases/<name> (JSON merge patch): 404 when absent; 409
//     Conflict when the patch carries a metadata.resourceVersion other than
//     the stored one; otherwise RFC 7386 merge, new resourceVersion, 200.
// Several clients (candidates) share one store; each client can be cut off
// (every call fails as a broken connection would) and can run a hook before
// each call (to advance a fake clock, or to let "someone else" write first).
//
// Thread-safety: the store and clients may be used from several threads.
#ifndef SCHEDEXT_TEST_TESTING_FAKE_LEASE_API_H_
#define SCHEDEXT_TEST_TESTING_FAKE_LEASE_API_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::testing {

class FakeLeaseStore {
 public:
  struct Request {
    std::string method;
    std::string path;
    std::string body;
    std::string content_type;
  };

  FakeLeaseStore(std::string lease_namespace, std::string name)
      : collection_("/apis/coordination.k8s.io/v1/namespaces/" + lease_namespace + "/leases"),
        path_(collection_ + "/" + name) {}

  const std::string& path() const { return path_; }
  const std::string& collection() const { return collection_; }

  // The stored object (nullopt when absent).
  std::optional<nlohmann::json> lease() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lease_;
  }
  nlohmann::json spec() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lease_ ? lease_->value("spec", nlohmann::json::object()) : nlohmann::json();
  }
  std::string holder() const {
    const nlohmann::json s = spec();
    return s.is_object() ? s.value("holderIdentity", std::string()) : std::string();
  }
  // Another writer (kubectl, a candidate outside the test): merges `spec`
  // into the stored spec, creating the lease if needed, with a new
  // resourceVersion.
  void WriteSpec(const nlohmann::json& spec) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lease_) {
      lease_ = nlohmann::json{{"metadata", {{"name", "x"}}}, {"spec", nlohmann::json::object()}};
    }
    (*lease_)["spec"].merge_patch(spec);
    (*lease_)["metadata"]["resourceVersion"] = std::to_string(++version_);
  }
  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  size_t writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const Request& r : requests_) {
      n += r.method != "GET" ? 1 : 0;
    }
    return n;
  }

  cluster::HttpResult Handle(const Request& request) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (request.method == "GET") {
      if (request.path != path_) {
        return {404, Status404()};
      }
      return lease_ ? cluster::HttpResult{200, lease_->dump()}
                    : cluster::HttpResult{404, Status404()};
    }
    const nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
    if (!body.is_object()) {
      return {400, StatusBody(400, "BadRequest", "not a JSON object")};
    }
    if (request.method == "POST") {
      if (request.path != collection_) {
        return {404, Status404()};
      }
      if (lease_) {
        return {409, StatusBody(409, "AlreadyExists", "leases \"x\" already exists")};
      }
      lease_ = body;
      (*lease_)["metadata"]["resourceVersion"] = std::to_string(++version_);
      return {201, lease_->dump()};
    }
    if (request.method == "PATCH") {
      if (request.path != path_ || !lease_) {
        return {404, Status404()};
      }
      if (request.content_type != "application/merge-patch+json") {
        return {415, StatusBody(415, "UnsupportedMediaType", "merge patch only")};
      }
      const auto meta = body.find("metadata");
      if (meta != body.end() && meta->contains("resourceVersion") &&
          (*meta)["resourceVersion"] != (*lease_)["metadata"]["resourceVersion"]) {
        return {409, StatusBody(409, "Conflict",
                                "Operation cannot be fulfilled on leases.coordination.k8s.io: "
                                "the object has been modified")};
      }
      lease_->merge_patch(body);
      (*lease_)["metadata"]["resourceVersion"] = std::to_string(++version_);
      return {200, lease_->dump()};
    }
    return {405, StatusBody(405, "MethodNotAllowed", request.method)};
  }

 private:
  static std::string StatusBody(int code, std::string_view reason, std::string_view message) {
    return nlohmann::json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                          {"message", message}, {"reason", reason},   {"code", code}}
        .dump();
  }
  static std::string Status404() { return StatusBody(404, "NotFound", "leases \"x\" not found"); }

  const std::string collection_;
  const std::string path_;
  mutable std::mutex mu_;
  std::optional<nlohmann::json> lease_;  // guarded by mu_
  uint64_t version_ = 100;               // guarded by mu_
  std::vector<Request> requests_;        // guarded by mu_
};

class FakeLeaseClient final : public cluster::KubeClient {
 public:
  explicit FakeLeaseClient(FakeLeaseStore& store) : store_(store) {}

  // While cut off, every call fails as an unreachable API server does.
  void SetCutOff(bool cut) { cut_.store(cut); }
  // Runs before each call (outside the store's lock), with the method.
  void SetHook(std::function<void(std::string_view method)> hook) {
    std::lock_guard<std::mutex> lock(mu_);
    hook_ = std::move(hook);
  }

  StatusOr<cluster::HttpResult> Get(std::string_view path) override {
    return Call({"GET", std::string(path), "", ""});
  }
  StatusOr<cluster::HttpResult> Post(std::string_view path, std::string_view body) override {
    return Call({"POST", std::string(path), std::string(body), "application/json"});
  }
  StatusOr<cluster::HttpResult> Patch(std::string_view path, std::string_view body,
                                      std::string_view content_type) override {
    return Call({"PATCH", std::string(path), std::string(body), std::string(content_type)});
  }
  Status Watch(std::string_view, const std::function<bool(std::string_view)>&) override {
    return UnavailableError("fake lease client: no watches");
  }
  void CancelWatches() override {}

 private:
  StatusOr<cluster::HttpResult> Call(FakeLeaseStore::Request request) {
    std::function<void(std::string_view)> hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      hook = hook_;
    }
    if (hook) {
      hook(request.method);
    }
    if (cut_.load()) {
      return UnavailableError("fake lease client: connection refused");
    }
    return store_.Handle(request);
  }

  FakeLeaseStore& store_;
  std::atomic<bool> cut_{false};
  std::mutex mu_;
  std::function<void(std::string_view)> hook_;  // guarded by mu_
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_FAKE_LEASE_API_H_
