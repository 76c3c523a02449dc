#include "schedext/cluster/kube_binder.h"

#include <exception>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace schedext::cluster {
namespace {

// Insertion-ordered, so the body reads like kube-scheduler's.
using ordered_json = nlohmann::ordered_json;

// Longest part of a non-Status error body quoted in a message.
constexpr size_t kMaxQuotedBody = 512;

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

// Percent-encodes a path segment (names are DNS labels, but never trust that).
std::string EscapeSegment(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
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
  if (!reply.body.empty()) {
    std::string body = reply.body.substr(0, kMaxQuotedBody);
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) {
      body.pop_back();
    }
    out += ": " + body;
    if (reply.body.size() > kMaxQuotedBody) {
      out += "...";
    }
  } else {
    out += ": (empty body)";
  }
  return out;
}

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

std::string StringAt(const nlohmann::json& obj, const char* a, const char* b) {
  if (!obj.is_object()) return std::string();
  auto i = obj.find(a);
  if (i == obj.end() || !i->is_object()) return std::string();
  auto j = i->find(b);
  if (j == i->end() || !j->is_string()) return std::string();
  return j->get<std::string>();
}

}  // namespace

KubeBinder::KubeBinder(KubeClient& client, OnBound on_bound)
    : client_(client), on_bound_(std::move(on_bound)) {}

std::string KubeBinder::BindingBody(const BindRequest& request) {
  ordered_json meta = ordered_json::object();
  meta["name"] = request.pod_name;
  meta["namespace"] = request.pod_namespace;
  if (!request.pod_uid.empty()) {
    meta["uid"] = request.pod_uid;  // a precondition on newer API servers
  }
  ordered_json body = ordered_json::object();
  body["apiVersion"] = "v1";
  body["kind"] = "Binding";
  body["metadata"] = std::move(meta);
  body["target"] = {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", request.node}};
  // Invalid UTF-8 is replaced rather than thrown on: the API server would
  // refuse such a name anyway, with a message that says so.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status KubeBinder::Bind(const BindRequest& request) {
  if (request.pod_namespace.empty() || request.pod_name.empty() || request.node.empty()) {
    return InvalidArgumentError("bind: pod namespace, pod name and node must all be set");
  }
  const std::string pod_path = "/api/v1/namespaces/" + EscapeSegment(request.pod_namespace) +
                               "/pods/" + EscapeSegment(request.pod_name);
  std::string body;
  try {
    body = BindingBody(request);
  } catch (const std::exception& e) {
    return InternalError(std::string("bind: encode the Binding: ") + e.what());
  }
  StatusOr<HttpResult> reply = client_.Post(pod_path + "/binding", body);
  if (!reply.ok()) {
    return reply.status();  // transport: kUnavailable or kDeadlineExceeded, said by the client
  }
  if (reply->status >= 200 && reply->status < 300) {
    if (on_bound_) {
      on_bound_(request);
    }
    return OkStatus();
  }
  std::string answer = DescribeReply(*reply);
  if (reply->status == 409) {
    // kube-scheduler retries a bind whose answer it did not get; if the first
    // attempt went through, the pod is already on this very node.
    StatusOr<HttpResult> pod = client_.Get(pod_path);
    if (!pod.ok()) {
      return Status(StatusCode::kFailedPrecondition,
                    answer + " (reading the pod back failed: " + pod.status().message() + ")");
    }
    if (pod->status == 200) {
      const nlohmann::json object = nlohmann::json::parse(pod->body, nullptr, false);
      const std::string node = StringAt(object, "spec", "nodeName");
      const std::string uid = StringAt(object, "metadata", "uid");
      if (!node.empty() && node == request.node &&
          (request.pod_uid.empty() || uid == request.pod_uid)) {
        if (on_bound_) {
          on_bound_(request);
        }
        return OkStatus();
      }
      if (!node.empty() && node != request.node && answer.find(node) == std::string::npos) {
        answer += " (the pod is bound to node " + node + ")";
      }
    } else {
      answer += " (reading the pod back answered " + std::to_string(pod->status) + ")";
    }
  }
  return Status(CodeForHttpStatus(reply->status), std::move(answer));
}

}  // namespace schedext::cluster
