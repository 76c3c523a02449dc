#include "schedext/cluster/kube_binder.h"

#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cluster/api_reply.h"

namespace schedext::cluster {
namespace {

// Insertion-ordered, so the body reads like kube-scheduler's.
using ordered_json = nlohmann::ordered_json;

using internal::CodeForHttpStatus;
using internal::DescribeReply;
using internal::PercentEncode;

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
  if (!request.annotations.empty()) {
    ordered_json annotations = ordered_json::object();
    for (const auto& [key, value] : request.annotations) {
      annotations[key] = value;
    }
    meta["annotations"] = std::move(annotations);
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
  const std::string pod_path = "/api/v1/namespaces/" + PercentEncode(request.pod_namespace) +
                               "/pods/" + PercentEncode(request.pod_name);
  std::string body;
  try {
    body = BindingBody(request);
  } catch (const std::exception& e) {
    return InternalError(std::string("bind: encode the Binding: ") + e.what());
  }
  StatusOr<HttpResult> reply = request.not_after == std::chrono::steady_clock::time_point::max()
                                   ? client_.Post(pod_path + "/binding", body)
                                   : client_.PostBy(pod_path + "/binding", body, request.not_after);
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
