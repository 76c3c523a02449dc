// The API server's address as a kubeconfig names it: "https://host[:port]".
#pragma once

#include <string>

#include "schedext/status.h"

namespace schedext::cluster {

struct ApiEndpoint {
  bool tls = true;
  std::string host;  // without brackets
  int port = 443;
  bool host_is_ip = false;
  std::string url;  // scheme://authority, for messages
};

// Parses `server` (https:// or http://, a host name, IPv4, or a bracketed
// IPv6 literal, an optional port, no path). Errors name the server.
StatusOr<ApiEndpoint> ParseApiServer(const std::string& server);

}  // namespace schedext::cluster
