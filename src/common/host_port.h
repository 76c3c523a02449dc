// An authority split into host and port, written once for the three places
// that read one: server.listen / statusListen, the API server URL and the
// Prometheus URL. Each caller keeps its own rules on top (which hosts it
// accepts, the port it defaults to).
#pragma once

#include <optional>
#include <string_view>

#include "schedext/status.h"

namespace schedext {

struct HostPort {
  std::string_view host;  // without the brackets of an IPv6 literal
  // The text after the ':' that follows the host (it may be empty, as in
  // "host:"); nullopt when no ':' follows it.
  std::optional<std::string_view> port;
  bool bracketed = false;  // the host was written as [...]
};

// Splits "host", "host:port", "[v6]" or "[v6]:port" (RFC 3986 §3.2.2). An
// unbracketed host holding a ':' is refused rather than guessed at ("::1:80"
// has no single reading). Errors carry no context; the caller adds it.
StatusOr<HostPort> SplitHostPort(std::string_view authority);

// `text` as a port number from `min_port` to 65535: ASCII digits only (no
// sign, no spaces), at most five of them; nullopt otherwise.
std::optional<int> ParsePortNumber(std::string_view text, int min_port);

}  // namespace schedext
