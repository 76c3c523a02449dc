// KubeClient: the few Kubernetes API calls schedext makes, as raw HTTP, behind
// an interface that tests replace. The HTTP implementation (cpp-httplib +
// OpenSSL) is built from a KubeClientConfig: in-cluster or kubeconfig.
//
// Thread-safety: every method may be called from several threads at once; a
// Watch blocks its calling thread until the stream ends.
#ifndef SCHEDEXT_CLUSTER_KUBE_CLIENT_H_
#define SCHEDEXT_CLUSTER_KUBE_CLIENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "schedext/status.h"

namespace schedext::cluster {

struct HttpResult {
  int status = 0;  // HTTP status code
  std::string body;
};

// PostBy's message when the deadline left no time to send.
inline constexpr std::string_view kNotSentByDeadline =
    "not sent: the deadline passed before the request's turn to go out";

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // GET `path_and_query` (e.g. "/api/v1/nodes?limit=500"). A transport
  // failure or timeout is a non-OK Status; any HTTP status is a result.
  virtual StatusOr<HttpResult> Get(std::string_view path_and_query) = 0;
  // POST / PATCH a JSON body (`content_type` for PATCH: merge or strategic
  // merge patch).
  virtual StatusOr<HttpResult> Post(std::string_view path, std::string_view body) = 0;
  virtual StatusOr<HttpResult> Patch(std::string_view path, std::string_view body,
                                     std::string_view content_type) = 0;
  // POST only if the request can go out by `not_after` (its turn under the
  // client's rate limit included); otherwise nothing is sent and the answer
  // is kUnavailable. For a bind whose caller stops waiting at a known time:
  // KubeBinder, on bind threads.
  virtual StatusOr<HttpResult> PostBy(std::string_view path, std::string_view body,
                                      std::chrono::steady_clock::time_point not_after) {
    if (std::chrono::steady_clock::now() > not_after) {
      return UnavailableError(std::string(kNotSentByDeadline));
    }
    return Post(path, body);
  }
  // GET a watch stream and calls `on_event` with each newline-delimited JSON
  // event as it arrives. Returns when the server ends the stream (OK), the
  // connection fails (kUnavailable), the reply is not 200 (the status code and
  // body in the message, code kFailedPrecondition for 410 Gone), `on_event`
  // returns false, or CancelWatches() is called (OK).
  virtual Status Watch(std::string_view path_and_query,
                       const std::function<bool(std::string_view event)>& on_event) = 0;
  // Makes every running and future Watch return promptly (shutdown).
  virtual void CancelWatches() = 0;
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_KUBE_CLIENT_H_
