#include "cluster/api_endpoint.h"

#include <arpa/inet.h>

#include <charconv>
#include <string_view>

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
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("server \"" + server + "\": unterminated IPv6 literal");
    }
    e.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return InvalidArgumentError("server \"" + server + "\": bad port");
      }
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos) {
      if (rest.find(':') != colon) {
        return InvalidArgumentError("server \"" + server +
                                    "\": an IPv6 address must be in brackets");
      }
      e.host = std::string(rest.substr(0, colon));
      port_text = rest.substr(colon + 1);
    } else {
      e.host = std::string(rest);
    }
  }
  if (e.host.empty()) {
    return InvalidArgumentError("server \"" + server + "\": no host");
  }
  if (!port_text.empty()) {
    int port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port <= 0 ||
        port > 65535) {
      return InvalidArgumentError("server \"" + server + "\": bad port");
    }
    e.port = port;
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
