#include "common/host_port.h"

namespace schedext {

StatusOr<HostPort> SplitHostPort(std::string_view authority) {
  HostPort out;
  std::string_view after;  // what follows the host
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("missing ']' after the IPv6 address");
    }
    out.host = authority.substr(1, close - 1);
    out.bracketed = true;
    after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      return InvalidArgumentError("unexpected text after the IPv6 address");
    }
  } else {
    const size_t colon = authority.find(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      after = authority.substr(colon);
      if (after.find(':', 1) != std::string_view::npos) {
        return InvalidArgumentError(
            "an IPv6 address must be in brackets, as in \"[::1]:8888\"");
      }
    }
  }
  if (!after.empty()) {
    out.port = after.substr(1);
  }
  return out;
}

std::optional<int> ParsePortNumber(std::string_view text, int min_port) {
  if (text.empty() || text.size() > 5) {
    return std::nullopt;
  }
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + (c - '0');
  }
  if (value < min_port || value > 65535) {
    return std::nullopt;
  }
  return value;
}

}  // namespace schedext
