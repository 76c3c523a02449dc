// A minimal client of the Prometheus HTTP API for NodeLoad: instant queries
// (POST <url>/api/v1/query) over HTTP or HTTPS, with an optional bearer token
// and CA file, and the decoding of their instant-vector replies into one value
// per node.
//
// Only prometheus.cc includes httplib.h, OpenSSL and nlohmann/json.hpp.
// Thread-safety: PrometheusClient is immutable after Make(); Query() may be
// called from several threads (each call opens its own connection).
#ifndef SCHEDEXT_POLICY_BUILTIN_NODELOAD_PROMETHEUS_H_
#define SCHEDEXT_POLICY_BUILTIN_NODELOAD_PROMETHEUS_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/status.h"

namespace schedext::policy::nodeload {

struct PrometheusEndpoint {
  // http(s)://host[:port][/path prefix], e.g. "http://prometheus.monitoring:9090"
  // or "https://thanos.example.com/prometheus".
  std::string url;
  // Read again before every query (so a rotated token is picked up); "" sends
  // no Authorization header.
  std::string bearer_token_file;
  // PEM CA bundle that verifies the server (https only); "" uses the system's
  // trust store. The server's name (or IP) is checked against its certificate.
  std::string ca_file;
  // Connect, read and write timeout of one query.
  std::chrono::milliseconds timeout{5000};
};

// The parts of PrometheusEndpoint::url.
struct PrometheusUrl {
  bool tls = false;
  std::string host;         // without brackets for IPv6
  int port = 0;             // 80 / 443 when the URL names none
  std::string path_prefix;  // "" or "/prefix" (no trailing '/')
};

// kInvalidArgument `must be an http:// or https:// URL`, `invalid port "x"`, ...
StatusOr<PrometheusUrl> ParsePrometheusUrl(std::string_view url);

// One node's value in a query's reply.
struct NodeValue {
  std::string node;
  double value = 0;
};

// What ParseVectorReply found, besides the values.
struct VectorReply {
  std::vector<NodeValue> values;  // sorted by node name, one per node
  size_t unlabelled = 0;          // series without the node label (skipped)
  size_t not_finite = 0;          // series whose value is NaN or ±Inf (skipped)
  size_t duplicates = 0;          // series of a node seen before (the larger value kept)
};

// Decodes the body of an instant query's reply: {"status":"success","data":
// {"resultType":"vector","result":[{"metric":{...},"value":[<time>,"<v>"]}]}}.
// The node of a series is its `node_label` label, with a trailing ":<digits>"
// port cut off when `trim_port` (node_exporter's instance="10.0.0.1:9100").
// kUnavailable with Prometheus's own errorType and error for a "status":
// "error" reply; kInvalidArgument for a reply that is not JSON, not a vector
// (a scalar or range query) or malformed, naming the field.
StatusOr<VectorReply> ParseVectorReply(std::string_view body, std::string_view node_label,
                                       bool trim_port);

class PrometheusClient {
 public:
  // kInvalidArgument for a bad URL or a ca_file with an http:// URL.
  static StatusOr<std::unique_ptr<PrometheusClient>> Make(PrometheusEndpoint endpoint);

  // Runs `expr` as an instant query at the server's current time and returns
  // the body of its 200 reply. Fails with kUnavailable for a connection or TLS
  // failure (with the reason), kDeadlineExceeded for a timeout, and
  // kUnavailable naming the HTTP status and Prometheus's error for any other
  // status; kFailedPrecondition when the token file cannot be read.
  StatusOr<std::string> Query(std::string_view expr) const;

  const PrometheusEndpoint& endpoint() const { return endpoint_; }

 private:
  PrometheusClient(PrometheusEndpoint endpoint, PrometheusUrl url)
      : endpoint_(std::move(endpoint)), url_(std::move(url)) {}

  const PrometheusEndpoint endpoint_;
  const PrometheusUrl url_;
};

}  // namespace schedext::policy::nodeload

#endif  // SCHEDEXT_POLICY_BUILTIN_NODELOAD_PROMETHEUS_H_
