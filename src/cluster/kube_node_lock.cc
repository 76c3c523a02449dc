// KubeBinder's node lock (binder.h NodeLockRequest): HAMi's
// hami.io/mutex.lock protocol, read from its nodelock package — the value
// "<RFC3339 time>,<namespace>,<pod>", free when older than the expiry or
// when its pod is gone, written with the node's resourceVersion.
#include <chrono>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cluster/api_reply.h"
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

bool Digits(std::string_view s, size_t at, size_t n, int64_t& out) {
  if (at + n > s.size()) return false;
  out = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Go's time.RFC3339 as time.Parse reads it: "2006-01-02T15:04:05" with
// optional fractional seconds, then "Z" or "±hh:mm".
bool ParseRfc3339(std::string_view s, int64_t& unix) {
  int64_t y, mo, d, h, mi, se;
  if (!Digits(s, 0, 4, y) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, mo) ||
      s[7] != '-' || !Digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, h) || s[13] != ':' || !Digits(s, 14, 2, mi) || s[16] != ':' ||
      !Digits(s, 17, 2, se)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return false;
  size_t at = 19;
  if (at < s.size() && s[at] == '.') {
    ++at;
    const size_t first = at;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') ++at;
    if (at == first) return false;
  }
  int64_t offset = 0;
  if (at < s.size() && (s[at] == 'Z' || s[at] == 'z')) {
    ++at;
  } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
    int64_t oh, om;
    if (!Digits(s, at + 1, 2, oh) || at + 3 >= s.size() || s[at + 3] != ':' ||
        !Digits(s, at + 4, 2, om) || oh > 23 || om > 59) {
      return false;
    }
    offset = (s[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    at += 6;
  } else {
    return false;
  }
  if (at != s.size()) return false;
  unix = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset;
  return true;
}

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
  const auto now = std::chrono::system_clock::now();
  unix = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::time_t t = static_cast<std::time_t>(unix);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
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

// PATCH of the annotation (null removes it), conditional on `resource_version`.
StatusOr<HttpResult> PatchLock(KubeClient& client, const std::string& path,
                               std::string_view annotation, const std::string& resource_version,
                               const std::optional<std::string>& value) {
  nlohmann::json patch;
  patch["metadata"]["resourceVersion"] = resource_version;
  patch["metadata"]["annotations"][std::string(annotation)] =
      value.has_value() ? nlohmann::json(*value) : nlohmann::json(nullptr);
  return client.Patch(path, patch.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      "application/merge-patch+json");
}

bool HeldBy(const LockValue& lock, const NodeLockRequest& r) {
  return lock.pod_namespace == r.pod_namespace && lock.pod_name == r.pod_name;
}

}  // namespace

Status KubeBinder::LockNode(const NodeLockRequest& r) {
  const std::string path = "/api/v1/nodes/" + PercentEncode(r.node);
  const std::string what = "lock node " + std::string(r.node) + " (" + std::string(r.annotation) + ")";
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
    StatusOr<HttpResult> patched =
        PatchLock(client_, path, r.annotation, node->resource_version, value);
    if (!patched.ok()) return Status(patched.status().code(), what + ": " + patched.status().message());
    if (patched->status == 200) return OkStatus();
    if (patched->status != 409) {
      return Status(CodeForHttpStatus(patched->status), what + ": " + DescribeReply(*patched));
    }
  }
  return UnavailableError(what + ": the node changed under " + std::to_string(kAttempts) +
                          " writes in a row");
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
    StatusOr<HttpResult> patched =
        PatchLock(client_, path, r.annotation, node->resource_version, std::nullopt);
    if (!patched.ok()) return Status(patched.status().code(), what + ": " + patched.status().message());
    if (patched->status == 200) return OkStatus();
    if (patched->status != 409) {
      return Status(CodeForHttpStatus(patched->status), what + ": " + DescribeReply(*patched));
    }
  }
  return UnavailableError(what + ": the node changed under " + std::to_string(kAttempts) +
                          " writes in a row");
}

}  // namespace schedext::cluster
