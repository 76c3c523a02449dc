// KubePodAnnotator: one JSON merge patch per call; see pod_annotator.h.
#include "schedext/cluster/pod_annotator.h"

#include <exception>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cluster/api_reply.h"

namespace schedext::cluster {
namespace {

using internal::CodeForHttpStatus;
using internal::DescribeReply;
using internal::PercentEncode;

// Insertion-ordered: uid, resourceVersion, annotations, in the order given,
// so the body is predictable in logs and tests.
using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kMergePatch = "application/merge-patch+json";

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
  const std::string path = "/api/v1/namespaces/" + PercentEncode(patch.pod_namespace) +
                           "/pods/" + PercentEncode(patch.pod_name);
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
