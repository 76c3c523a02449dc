// Minimal Kubernetes objects for the control-plane tests, as the real API
// server accepts them (a pod needs a container with an image), plus a
// KubeClient decorator that records every answer schedext's client got.
#ifndef SCHEDEXT_TEST_CONTROL_PLANE_API_OBJECTS_H_
#define SCHEDEXT_TEST_CONTROL_PLANE_API_OBJECTS_H_

#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::testing {

// A Node with capacity = allocatable = {cpu, memory, pods: 110} and `labels`.
inline std::string NodeJson(std::string_view name, std::string_view cpu = "4",
                            std::string_view memory = "8Gi",
                            const std::map<std::string, std::string>& labels = {}) {
  nlohmann::json node = {{"apiVersion", "v1"},
                         {"kind", "Node"},
                         {"metadata", {{"name", name}, {"labels", labels}}},
                         {"status",
                          {{"capacity", {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}}},
                           {"allocatable", {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}}}}}};
  if (labels.empty()) node["metadata"].erase("labels");
  return node.dump();
}

// A Pod with one container requesting `cpu` / `memory`, bound to `node` when
// not empty, deletable at once (terminationGracePeriodSeconds 0).
inline std::string PodJson(std::string_view pod_namespace, std::string_view name,
                           std::string_view node = "", std::string_view cpu = "100m",
                           std::string_view memory = "64Mi") {
  nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", pod_namespace}}},
      {"spec",
       {{"terminationGracePeriodSeconds", 0},
        {"containers",
         {{{"name", "c"},
           {"image", "registry.k8s.io/pause:3.9"},
           {"resources", {{"requests", {{"cpu", cpu}, {"memory", memory}}}}}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod.dump();
}

// A field of a JSON document ("" when absent or not a string).
inline std::string JsonString(std::string_view document, std::initializer_list<const char*> path) {
  nlohmann::json j = nlohmann::json::parse(document, nullptr, false);
  for (const char* key : path) {
    if (!j.is_object() || !j.contains(key)) return "";
    j = j[key];
  }
  return j.is_string() ? j.get<std::string>() : "";
}

// One call through RecordingClient.
struct RecordedCall {
  std::string method;  // GET, POST, PATCH, WATCH
  std::string path;
  int status = 0;  // HTTP status; 0 for a transport failure (or a watch that ended)
  std::string body;
  std::string error;  // the Status message of a failed call or watch
};

// Forwards to `inner` and records every call and its answer.
class RecordingClient final : public cluster::KubeClient {
 public:
  explicit RecordingClient(cluster::KubeClient& inner) : inner_(inner) {}

  StatusOr<cluster::HttpResult> Get(std::string_view path) override {
    return Record("GET", path, inner_.Get(path));
  }
  StatusOr<cluster::HttpResult> Post(std::string_view path, std::string_view body) override {
    return Record("POST", path, inner_.Post(path, body));
  }
  StatusOr<cluster::HttpResult> Patch(std::string_view path, std::string_view body,
                                      std::string_view content_type) override {
    return Record("PATCH", path, inner_.Patch(path, body, content_type));
  }
  Status Watch(std::string_view path,
               const std::function<bool(std::string_view event)>& on_event) override {
    Status s = inner_.Watch(path, on_event);
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({"WATCH", std::string(path), 0, "", s.ok() ? "" : s.message()});
    return s;
  }
  void CancelWatches() override { inner_.CancelWatches(); }

  std::vector<RecordedCall> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // Calls whose method is `method` and answered `status`.
  size_t Count(std::string_view method, int status) const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const RecordedCall& c : calls_) n += c.method == method && c.status == status;
    return n;
  }

 private:
  StatusOr<cluster::HttpResult> Record(std::string_view method, std::string_view path,
                                       StatusOr<cluster::HttpResult> result) {
    std::lock_guard<std::mutex> lock(mu_);
    RecordedCall call{std::string(method), std::string(path), 0, "", ""};
    if (result.ok()) {
      call.status = result->status;
      call.body = result->body;
    } else {
      call.error = result.status().message();
    }
    calls_.push_back(std::move(call));
    return result;
  }

  cluster::KubeClient& inner_;
  mutable std::mutex mu_;
  std::vector<RecordedCall> calls_;
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_CONTROL_PLANE_API_OBJECTS_H_
