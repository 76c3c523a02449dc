#include "cluster/api_reply.h"

#include <nlohmann/json.hpp>

namespace schedext::cluster::internal {
namespace {

// Longest part of a non-Status error body quoted in a message.
constexpr size_t kMaxQuotedBody = 512;

}  // namespace

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

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
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
  if (reply.body.empty()) {
    return out + ": (empty body)";
  }
  std::string body = reply.body.substr(0, kMaxQuotedBody);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) {
    body.pop_back();
  }
  out += ": " + body;
  if (reply.body.size() > kMaxQuotedBody) {
    out += "...";
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

}  // namespace schedext::cluster::internal
