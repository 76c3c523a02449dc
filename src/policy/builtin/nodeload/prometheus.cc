#include "policy/builtin/nodeload/prometheus.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <arpa/inet.h>
#include <charconv>
#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "common/file.h"
#include "common/host_port.h"
#include "common/text.h"

namespace schedext::policy::nodeload {
namespace {

using nlohmann::json;

// At most this much of a server's error text goes into a message.
constexpr size_t kMaxQuotedError = 300;

std::string Cut(std::string_view text) {
  if (text.size() <= kMaxQuotedError) {
    return std::string(text);
  }
  return std::string(text.substr(0, kMaxQuotedError)) + "...";
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "10.0.0.1:9100" → "10.0.0.1", "[::1]:9100" → "::1"; anything else as is.
std::string_view TrimPort(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || !AllDigits(text.substr(colon + 1))) {
    return text;
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  if (host.find(':') != std::string_view::npos) {
    return text;  // a bare IPv6 address: its last group is no port
  }
  return host;
}

// Prometheus sends sample values as strings: "0.25", "NaN", "+Inf", "1e-3".
std::optional<double> ParseSampleValue(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) {
    if (text == "+Inf" || text == "-Inf" || text == "NaN") {
      return std::numeric_limits<double>::quiet_NaN();
    }
    return std::nullopt;
  }
  return value;
}

std::string ErrorOfReply(const json& reply) {
  std::string type = "unknown";
  std::string message;
  if (auto it = reply.find("errorType"); it != reply.end() && it->is_string()) {
    type = it->get<std::string>();
  }
  if (auto it = reply.find("error"); it != reply.end() && it->is_string()) {
    message = it->get<std::string>();
  }
  return type + ": " + Cut(message);
}

StatusOr<std::string> ReadToken(const std::string& path) {
  SCHEDEXT_ASSIGN_OR_RETURN(const std::string text, ReadFile(path, "read bearer token file"));
  const std::string_view token = TrimSpace(text);
  if (token.empty()) {
    return FailedPreconditionError("bearer token file " + Quote(path) + " is empty");
  }
  return std::string(token);
}

bool IsIpAddress(const std::string& host) {
  unsigned char buffer[16];
  return ::inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// Server verification done by OpenSSL as configured here (see
// http_kube_client.cc: with the library's own check on, cpp-httplib 0.11.4
// also trusts the system store and accepts a CN match).
bool ConfigureVerification(SSL_CTX* ctx, const PrometheusUrl& url, const std::string& ca_file) {
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (ca_file.empty()) {
    SSL_CTX_set_default_verify_paths(ctx);
  } else {
    X509_STORE* store = X509_STORE_new();
    if (store == nullptr) {
      return false;
    }
    if (X509_STORE_load_locations(store, ca_file.c_str(), nullptr) != 1) {
      X509_STORE_free(store);
      return false;
    }
    SSL_CTX_set_cert_store(ctx, store);  // takes ownership
  }
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  const int ok = IsIpAddress(url.host)
                     ? X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str())
                     : X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), 0);
  return ok == 1;
}

std::string DescribeError(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "cannot connect";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out";
    case httplib::Error::Read:
      return "reading the reply failed";
    case httplib::Error::Write:
      return "sending the query failed";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "server certificate not verified";
    default:
      return httplib::to_string(error);
  }
}

}  // namespace

StatusOr<PrometheusUrl> ParsePrometheusUrl(std::string_view url) {
  PrometheusUrl out;
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    out.tls = true;
    rest = url.substr(8);
  } else {
    return InvalidArgumentError("must be an http:// or https:// URL");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (path.find_first_of("?#") != std::string_view::npos) {
    return InvalidArgumentError("must not have a query or fragment");
  }
  while (!path.empty() && path.back() == '/') {
    path.remove_suffix(1);
  }
  out.path_prefix = std::string(path);
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgumentError("must not carry credentials (use bearerTokenFile)");
  }
  const StatusOr<HostPort> split = SplitHostPort(authority);
  if (!split.ok()) {
    return split.status();
  }
  if (split->host.empty()) {
    return InvalidArgumentError("has no host");
  }
  out.host = std::string(split->host);
  out.port = out.tls ? 443 : 80;
  if (split->port.has_value()) {
    const std::optional<int> port = ParsePortNumber(*split->port, 1);
    if (!port.has_value()) {
      return InvalidArgumentError("invalid port \"" + std::string(*split->port) + "\"");
    }
    out.port = *port;
  }
  return out;
}

StatusOr<VectorReply> ParseVectorReply(std::string_view body, std::string_view node_label,
                                       bool trim_port) {
  const json reply = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded()) {
    return InvalidArgumentError("reply is not JSON");
  }
  if (!reply.is_object()) {
    return InvalidArgumentError("reply: must be an object");
  }
  auto status = reply.find("status");
  if (status == reply.end() || !status->is_string()) {
    return InvalidArgumentError("reply: status: must be a string");
  }
  if (*status != "success") {
    return UnavailableError("query failed: " + ErrorOfReply(reply));
  }
  auto data = reply.find("data");
  if (data == reply.end() || !data->is_object()) {
    return InvalidArgumentError("reply: data: must be an object");
  }
  auto type = data->find("resultType");
  if (type == data->end() || !type->is_string()) {
    return InvalidArgumentError("reply: data.resultType: must be a string");
  }
  if (*type != "vector") {
    return InvalidArgumentError("reply: data.resultType: must be \"vector\" (an instant vector "
                                "query), got \"" +
                                type->get<std::string>() + "\"");
  }
  auto result = data->find("result");
  if (result == data->end() || !result->is_array()) {
    return InvalidArgumentError("reply: data.result: must be a list");
  }
  VectorReply out;
  out.values.reserve(result->size());
  size_t index = 0;
  for (const json& series : *result) {
    const std::string where = "reply: data.result[" + std::to_string(index++) + "]";
    if (!series.is_object()) {
      return InvalidArgumentError(where + ": must be an object");
    }
    auto metric = series.find("metric");
    auto value = series.find("value");
    if (metric == series.end() || !metric->is_object()) {
      return InvalidArgumentError(where + ".metric: must be an object");
    }
    if (value == series.end() || !value->is_array() || value->size() != 2 ||
        !(*value)[1].is_string()) {
      return InvalidArgumentError(where + ".value: must be [<time>, \"<value>\"]");
    }
    std::optional<double> number = ParseSampleValue((*value)[1].get_ref<const std::string&>());
    if (!number.has_value()) {
      return InvalidArgumentError(where + ".value: invalid sample value \"" +
                                  Cut((*value)[1].get_ref<const std::string&>()) + "\"");
    }
    auto label = metric->find(std::string(node_label));
    if (label == metric->end() || !label->is_string() || label->get_ref<const std::string&>().empty()) {
      ++out.unlabelled;
      continue;
    }
    if (!std::isfinite(*number)) {
      ++out.not_finite;
      continue;
    }
    std::string_view node = label->get_ref<const std::string&>();
    if (trim_port) {
      node = TrimPort(node);
    }
    out.values.push_back({std::string(node), *number});
  }
  std::sort(out.values.begin(), out.values.end(), [](const NodeValue& a, const NodeValue& b) {
    return a.node != b.node ? a.node < b.node : a.value > b.value;
  });
  // Sorted largest first within a node: keep the first of each run.
  const auto last = std::unique(out.values.begin(), out.values.end(),
                                [](const NodeValue& a, const NodeValue& b) { return a.node == b.node; });
  out.duplicates = static_cast<size_t>(out.values.end() - last);
  out.values.erase(last, out.values.end());
  return out;
}

StatusOr<std::unique_ptr<PrometheusClient>> PrometheusClient::Make(PrometheusEndpoint endpoint) {
  StatusOr<PrometheusUrl> url = ParsePrometheusUrl(endpoint.url);
  if (!url.ok()) {
    return InvalidArgumentError("url \"" + endpoint.url + "\": " + url.status().message());
  }
  if (!url->tls && !endpoint.ca_file.empty()) {
    return InvalidArgumentError("caFile needs an https:// url");
  }
  return std::unique_ptr<PrometheusClient>(
      new PrometheusClient(std::move(endpoint), std::move(url).value()));
}

StatusOr<std::string> PrometheusClient::Query(std::string_view expr) const {
  httplib::Headers headers;
  if (!endpoint_.bearer_token_file.empty()) {
    SCHEDEXT_ASSIGN_OR_RETURN(std::string token, ReadToken(endpoint_.bearer_token_file));
    headers.emplace("Authorization", "Bearer " + token);
  }
  std::unique_ptr<httplib::ClientImpl> client;
  if (url_.tls) {
    auto ssl = std::make_unique<httplib::SSLClient>(url_.host, url_.port);
    SSL_CTX* ctx = ssl->ssl_context();
    ssl->enable_server_certificate_verification(false);  // OpenSSL's, below
    if (ctx == nullptr || !ConfigureVerification(ctx, url_, endpoint_.ca_file)) {
      return UnavailableError("prometheus " + endpoint_.url + ": cannot set up TLS (CA file \"" +
                              endpoint_.ca_file + "\")");
    }
    client = std::move(ssl);
  } else {
    client = std::make_unique<httplib::ClientImpl>(url_.host, url_.port);
  }
  const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(endpoint_.timeout);
  client->set_connection_timeout(timeout);
  client->set_read_timeout(timeout);
  client->set_write_timeout(timeout);
  client->set_keep_alive(false);  // one query per connection: never a stale one
  client->set_tcp_nodelay(true);
  client->set_follow_location(false);

  httplib::Params params{{"query", std::string(expr)}};
  const std::string path = url_.path_prefix + "/api/v1/query";
  const auto started = std::chrono::steady_clock::now();
  httplib::Result result = client->Post(path, headers, params);
  if (!result) {
    const httplib::Error error = result.error();
    const auto elapsed = std::chrono::steady_clock::now() - started;
    const bool timed_out = error == httplib::Error::ConnectionTimeout ||
                           ((error == httplib::Error::Read || error == httplib::Error::Write) &&
                            elapsed >= endpoint_.timeout);
    std::string message = "prometheus " + endpoint_.url + ": " + DescribeError(error);
    if (timed_out && error != httplib::Error::ConnectionTimeout) {
      message += " (timed out)";
    }
    if (error == httplib::Error::SSLServerVerification || error == httplib::Error::SSLConnection) {
      if (auto* ssl = dynamic_cast<httplib::SSLClient*>(client.get())) {
        const long verify = ssl->get_openssl_verify_result();
        if (verify != X509_V_OK) {
          message += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
        }
      }
    }
    return timed_out ? DeadlineExceededError(message) : UnavailableError(message);
  }
  if (result->status != 200) {
    std::string message =
        "prometheus " + endpoint_.url + ": HTTP " + std::to_string(result->status);
    const json reply = json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    if (reply.is_object() && reply.contains("error")) {
      message += ": " + ErrorOfReply(reply);
    } else if (!result->body.empty()) {
      message += ": " + Cut(result->body);
    }
    return UnavailableError(message);
  }
  return std::move(result->body);
}

}  // namespace schedext::policy::nodeload
