// KubePodAnnotator: one JSON merge patch per call; see pod_annotator.h.
#include "schedext/cluster/pod_annotator.h"

#include <exception>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace schedext::cluster {
namespace {

// Insertion-ordered: uid, resourceVersion, annotations, in the order given,
// so the body is predictable in logs and tests.
using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kMergePatch = "application/merge-patch+json";

// Longest part of a non-Status error body quoted in a message.
constexpr size_t kMaxQuotedBody = 512;

// kube_binder.cc words its errors the same way; the helpers there are private
// to that file, so the few lines are repeated here.
std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

// Percent-encodes a path segment: a name with '/' or '?' must not reach
// another resource.
std::string EscapeSegment(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// "409 Conflict: <Status.message>", or the start of the body when it is not
// a Status with a message.
std::string DescribeReply(const HttpResult& reply) {
  std::string out = std::to_string(reply.status);
  const std::string_view phrase = ReasonPhrase(reply.status);
  if (!phrase.empty()) {
    out.append(" ").append(phrase);
  }
  const nlohmann::json status = nlohmann::json::parse(reply.body, nullptr, false);
  if (status.is_object()) {
    auto it = status.find("message");
    if (it != status.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
      return out + ": " + it->get<std::string>();
    }
  }
  if (reply.body.empty()) {
    return out + ": (empty body)";
  }
  std::string body = reply.body.substr(0, kMaxQuotedBody);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) {
    body.pop_back();
  }
  out += ": " + body;
  if (reply.body.size() > kMaxQuotedBody) {
    out += "...";
  }
  return out;
}

// The header's mapping: 409 and the other 4xx are the caller's to handle
// (the pod changed or is gone); 429 / 5xx may pass on a retry.
StatusCode CodeForHttpStatus(int status) {
  if (status == 504) {
    return StatusCode::kDeadlineExceeded;
  }
  if (status == 429 || status >= 500) {
    return StatusCode::kUnavailable;
  }
  if (status >= 400) {
    return StatusCode::kFailedPrecondition;
  }
  return StatusCode::kUnavailable;  // 1xx / 3xx: not an answer we understand
}

}  // namespace

std::string KubePodAnnotator::PatchBody(const AnnotationPatch& patch) {
  ordered_json annotations = ordered_json::object();
  for (const auto& [key, value] : patch.set) {
    annotations[key] = value;
  }
  // After the sets: a key both set and removed ends up removed.
  for (const std::string& key : patch.remove) {
    annotations[key] = nullptr;
  }
  ordered_json meta = ordered_json::object();
  meta["uid"] = patch.pod_uid;
  if (!patch.resource_version.empty()) {
    meta["resourceVersion"] = patch.resource_version;
  }
  meta["annotations"] = std::move(annotations);
  ordered_json body = ordered_json::object();
  body["metadata"] = std::move(meta);
  // Invalid UTF-8 is replaced rather than thrown on: the API server would
  // refuse such a key anyway, and say why.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<std::string> KubePodAnnotator::Annotate(const AnnotationPatch& patch) {
  if (patch.pod_namespace.empty() || patch.pod_name.empty() || patch.pod_uid.empty()) {
    return InvalidArgumentError("annotate: pod namespace, pod name and pod uid must all be set");
  }
  const std::string path = "/api/v1/namespaces/" + EscapeSegment(patch.pod_namespace) +
                           "/pods/" + EscapeSegment(patch.pod_name);
  std::string body;
  try {
    body = PatchBody(patch);
  } catch (const std::exception& e) {
    return InternalError(std::string("annotate: encode the patch: ") + e.what());
  }
  StatusOr<HttpResult> reply = client_.Patch(path, body, kMergePatch);
  if (!reply.ok()) {
    return reply.status();  // transport: kUnavailable or kDeadlineExceeded, said by the client
  }
  if (reply->status < 200 || reply->status >= 300) {
    return Status(CodeForHttpStatus(reply->status), DescribeReply(*reply));
  }
  // The patch is applied; the new resourceVersion lets the caller make its
  // rollback conditional on nobody having written the pod since.
  const nlohmann::json object = nlohmann::json::parse(reply->body, nullptr, false);
  if (object.is_object()) {
    auto meta = object.find("metadata");
    if (meta != object.end() && meta->is_object()) {
      auto rv = meta->find("resourceVersion");
      if (rv != meta->end() && rv->is_string() && !rv->get_ref<const std::string&>().empty()) {
        return rv->get<std::string>();
      }
    }
  }
  return InternalError("annotate: the patch was applied (HTTP " + std::to_string(reply->status) +
                       ") but the reply has no metadata.resourceVersion");
}

}  // namespace schedext::cluster
