// KubeBinder's node lock (binder.h NodeLockRequest): HAMi's
// hami.io/mutex.lock protocol, read from its nodelock package — the value
// "<RFC3339 time>,<namespace>,<pod>", free when older than the expiry or
// when its pod is gone, written with the node's resourceVersion.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cluster/api_reply.h"
#include "common/civil_time.h"
#include "schedext/cluster/kube_binder.h"

namespace schedext::cluster {
namespace {

using internal::CodeForHttpStatus;
using internal::DescribeReply;
using internal::PercentEncode;

// Reads and writes per call: a conflict means another writer (the kubelet's
// status, another binder) changed the node between the two.
constexpr int kAttempts = 5;

struct LockValue {
  int64_t written_unix = 0;
  std::string pod_namespace;  // empty: a bare time (no pod named)
  std::string pod_name;
};

// ParseNodeLock: a bare time, or exactly three comma-separated parts.
std::optional<LockValue> ParseLock(std::string_view value) {
  LockValue out;
  const size_t first = value.find(',');
  if (first == std::string_view::npos) {
    if (!ParseRfc3339(value, out.written_unix)) return std::nullopt;
    return out;
  }
  const size_t second = value.find(',', first + 1);
  if (second == std::string_view::npos || value.find(',', second + 1) != std::string_view::npos ||
      !ParseRfc3339(value.substr(0, first), out.written_unix)) {
    return std::nullopt;
  }
  out.pod_namespace = std::string(value.substr(first + 1, second - first - 1));
  out.pod_name = std::string(value.substr(second + 1));
  return out;
}

std::string NowRfc3339(int64_t& unix) {
  unix = std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count();
  char buffer[32];
  return std::string(FormatRfc3339Utc(unix, buffer));
}

struct NodeRead {
  std::string resource_version;
  std::optional<std::string> lock;
};

StatusOr<NodeRead> ReadNode(KubeClient& client, const std::string& path,
                            std::string_view annotation) {
  StatusOr<HttpResult> reply = client.Get(path);
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) {
    return Status(CodeForHttpStatus(reply->status), "GET node: " + DescribeReply(*reply));
  }
  const nlohmann::json node = nlohmann::json::parse(reply->body, nullptr, false);
  const nlohmann::json* meta = node.is_object() && node.contains("metadata") ? &node["metadata"]
                                                                             : nullptr;
  if (meta == nullptr || !meta->is_object() || !meta->contains("resourceVersion") ||
      !(*meta)["resourceVersion"].is_string()) {
    return InternalError("GET node: no metadata.resourceVersion in the answer");
  }
  NodeRead out;
  out.resource_version = (*meta)["resourceVersion"].get<std::string>();
  if (meta->contains("annotations") && (*meta)["annotations"].is_object()) {
    const nlohmann::json& annotations = (*meta)["annotations"];
    const auto it = annotations.find(std::string(annotation));
    if (it != annotations.end() && it->is_string()) out.lock = it->get<std::string>();
  }
  return out;
}

// One PATCH of the annotation (null removes it), conditional on
// `resource_version`: OK, an error, or nullopt when the node changed since it
// was read (409: read it again).
std::optional<Status> PatchLock(KubeClient& client, const std::string& path,
                                std::string_view annotation, const std::string& resource_version,
                                const std::optional<std::string>& value, const std::string& what) {
  nlohmann::json patch;
  patch["metadata"]["resourceVersion"] = resource_version;
  patch["metadata"]["annotations"][std::string(annotation)] =
      value.has_value() ? nlohmann::json(*value) : nlohmann::json(nullptr);
  StatusOr<HttpResult> reply =
      client.Patch(path, patch.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                   "application/merge-patch+json");
  if (!reply.ok()) return Status(reply.status().code(), what + ": " + reply.status().message());
  if (reply->status == 409) return std::nullopt;
  if (reply->status != 200) {
    return Status(CodeForHttpStatus(reply->status), what + ": " + DescribeReply(*reply));
  }
  return OkStatus();
}

Status TooManyConflicts(const std::string& what) {
  return UnavailableError(what + ": the node changed under " + std::to_string(kAttempts) +
                          " writes in a row");
}

bool HeldBy(const LockValue& lock, const NodeLockRequest& r) {
  return lock.pod_namespace == r.pod_namespace && lock.pod_name == r.pod_name;
}

}  // namespace

Status KubeBinder::LockNode(const NodeLockRequest& r) {
  const std::string path = "/api/v1/nodes/" + PercentEncode(r.node);
  const std::string what =
      "lock node " + std::string(r.node) + " (" + std::string(r.annotation) + ")";
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    StatusOr<NodeRead> node = ReadNode(client_, path, r.annotation);
    if (!node.ok()) return Status(node.status().code(), what + ": " + node.status().message());
    int64_t now = 0;
    const std::string stamp = NowRfc3339(now);
    if (node->lock.has_value()) {
      const std::optional<LockValue> held = ParseLock(*node->lock);
      if (!held.has_value()) {
        return FailedPreconditionError(what + ": the node carries a malformed lock \"" +
                                       *node->lock + "\"; remove the annotation");
      }
      if (HeldBy(*held, r)) return OkStatus();  // a retried bind of the same pod
      bool free = now - held->written_unix > r.expiry.count();
      if (!free && !held->pod_name.empty()) {
        StatusOr<HttpResult> pod = client_.Get("/api/v1/namespaces/" +
                                               PercentEncode(held->pod_namespace) + "/pods/" +
                                               PercentEncode(held->pod_name));
        if (!pod.ok()) return Status(pod.status().code(), what + ": " + pod.status().message());
        free = pod->status == 404;
      }
      if (!free) {
        return FailedPreconditionError(
            what + ": held by " +
            (held->pod_name.empty() ? std::string("a pod")
                                    : held->pod_namespace + "/" + held->pod_name) +
            " since " + node->lock->substr(0, node->lock->find(',')) +
            " (its device plugin releases it once it has allocated; it expires after " +
            std::to_string(r.expiry.count()) + " s)");
      }
    }
    const std::string value =
        stamp + "," + std::string(r.pod_namespace) + "," + std::string(r.pod_name);
    if (std::optional<Status> done =
            PatchLock(client_, path, r.annotation, node->resource_version, value, what)) {
      return *done;
    }
  }
  return TooManyConflicts(what);
}

Status KubeBinder::UnlockNode(const NodeLockRequest& r) {
  const std::string path = "/api/v1/nodes/" + PercentEncode(r.node);
  const std::string what =
      "unlock node " + std::string(r.node) + " (" + std::string(r.annotation) + ")";
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    StatusOr<NodeRead> node = ReadNode(client_, path, r.annotation);
    if (!node.ok()) return Status(node.status().code(), what + ": " + node.status().message());
    if (!node->lock.has_value()) return OkStatus();
    const std::optional<LockValue> held = ParseLock(*node->lock);
    if (!held.has_value() || !HeldBy(*held, r)) return OkStatus();  // not ours to release
    if (std::optional<Status> done =
            PatchLock(client_, path, r.annotation, node->resource_version, std::nullopt, what)) {
      return *done;
    }
  }
  return TooManyConflicts(what);
}

}  // namespace schedext::cluster
