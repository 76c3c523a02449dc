// How schedext words and classifies the API server's answers, shared by the
// clients of the API (KubeBinder, Informer).
#ifndef SCHEDEXT_CLUSTER_API_REPLY_H_
#define SCHEDEXT_CLUSTER_API_REPLY_H_

#include <string>
#include <string_view>

#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::cluster::internal {

// "Conflict" for 409, ...; "" for a status without a well-known phrase.
std::string_view ReasonPhrase(int status);

// RFC 3986 percent-encoding of everything but the unreserved characters: for
// a path segment (a name with '/' or '?' must never reach another resource;
// names are DNS labels, but never trust that) or a query value (continue
// tokens are base64 with '+', '/', '=').
std::string PercentEncode(std::string_view text);

// "409 Conflict: <Status.message>", or the start of the body when it is not a
// Status with a message.
std::string DescribeReply(const HttpResult& reply);

// 504 ⇒ kDeadlineExceeded; 429 and 5xx ⇒ kUnavailable (a retry may pass);
// other 4xx ⇒ kFailedPrecondition (the caller's to handle: the object changed
// or is gone); anything else ⇒ kUnavailable.
StatusCode CodeForHttpStatus(int status);

}  // namespace schedext::cluster::internal

#endif  // SCHEDEXT_CLUSTER_API_REPLY_H_
