#include "cluster/api_endpoint.h"

#include <arpa/inet.h>

#include <optional>
#include <string_view>

#include "common/host_port.h"

namespace schedext::cluster {

StatusOr<ApiEndpoint> ParseApiServer(const std::string& server) {
  ApiEndpoint e;
  std::string_view rest = server;
  if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    e.tls = false;
    e.port = 80;
    rest.remove_prefix(7);
  } else {
    return InvalidArgumentError("server \"" + server + "\": expected https://host[:port]");
  }
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") {
      return InvalidArgumentError("server \"" + server +
                                  "\": a path after host:port is not supported");
    }
    rest = rest.substr(0, slash);
  }
  const StatusOr<HostPort> split = SplitHostPort(rest);
  if (!split.ok()) {
    return InvalidArgumentError("server \"" + server + "\": " + split.status().message());
  }
  e.host = std::string(split->host);
  if (e.host.empty()) {
    return InvalidArgumentError("server \"" + server + "\": no host");
  }
  if (split->port.has_value()) {
    const std::optional<int> port = ParsePortNumber(*split->port, 1);
    if (!port.has_value()) {
      return InvalidArgumentError("server \"" + server + "\": bad port");
    }
    e.port = *port;
  }
  unsigned char buf[sizeof(in6_addr)];
  e.host_is_ip = inet_pton(AF_INET, e.host.c_str(), buf) == 1 ||
                 inet_pton(AF_INET6, e.host.c_str(), buf) == 1;
  e.url = std::string(e.tls ? "https://" : "http://") +
          (e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host) + ":" +
          std::to_string(e.port);
  return e;
}

}  // namespace schedext::cluster
