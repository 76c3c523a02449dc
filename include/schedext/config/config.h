// schedext's configuration: plain structs, loaded from YAML and validated.
//
// Errors name the field and, for YAML errors, the line and column:
// `config.yaml:12:5: profiles[0].policies[1].weight: must be a positive integer`.
// Policy `args` are kept as JSON for the policy factories, which validate them
// when the profiles are built (pipeline::Profile::Build).
#ifndef SCHEDEXT_CONFIG_CONFIG_H_
#define SCHEDEXT_CONFIG_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schedext/model/gpushare.h"
#include "schedext/status.h"

namespace schedext::config {

struct ServerConfig {
  std::string host = "0.0.0.0";  // IPv4, IPv6 (no brackets) or a host name
  int port = 8888;
  // Worker threads. Each keep-alive connection pins one while it is open.
  int threads = 32;
  size_t max_body_bytes = size_t{512} << 20;
  int keep_alive_timeout_seconds = 120;  // above Go's 90 s idle timeout
  size_t keep_alive_max_count = 100000;
  int read_timeout_seconds = 5;
  int write_timeout_seconds = 5;
  // Seconds to wait for in-flight requests on SIGTERM before exiting anyway.
  int shutdown_grace_seconds = 25;
  // A worker keeps its request buffer, JSON parser and reply buffer between
  // requests up to this size (node-cache requests: a 15,000-name body is
  // 0.7 MB); larger ones go to the spare set below or are freed after each
  // request, so 32 workers cannot each sit on a full-mode request's memory.
  size_t keep_buffer_bytes = size_t{1} << 20;
  // Requests larger than that borrow one spare set of buffers (request body,
  // parser and scratch, reply) shared by all workers, and give it back after
  // the reply instead of freeing it: the next large request finds its memory
  // already mapped. Resident memory then stays at the peak of one large
  // request (~150 MB for a 5,000-node full-mode filter) however many workers
  // serve them; false frees everything over keepBufferBytes after each request.
  bool keep_large_buffers = true;
};

struct LogConfig {
  std::string level = "info";   // trace, debug, info, warn, error, critical, off
  std::string format = "text";  // text or json
};

// The connection to the Kubernetes API (cluster cache, node-cache mode, bind).
struct ClusterConfig {
  // auto: connect when --kubeconfig / kubeconfig, $KUBECONFIG or the in-cluster
  // environment is there, else run without a cluster; required: refuse to
  // start without one; disabled: never connect.
  std::string mode = "auto";
  std::string kubeconfig;  // empty: $KUBECONFIG, then in-cluster
  std::string context;     // empty: the kubeconfig's current-context
  int qps = 20;            // client-side rate limit of API requests
  int burst = 40;
  int timeout_seconds = 10;      // per API request (connect, read, write)
  int assume_ttl_seconds = 30;   // a bound pod counts at once for this long
                                 // unless the watch confirms it; 0: forever
  int page_size = 500;           // LIST page size
  // /readyz answers 200 while an informer relists after the first sync (the
  // cache then still serves its last view); false: not ready until it is done.
  bool ready_during_relist = false;
};

struct PolicyConfig {
  std::string name;
  int64_t weight = 1;
  // The policy's arguments as a JSON object ({} when none).
  std::shared_ptr<const nlohmann::json> args;
};

struct ProfileConfig {
  std::string name;  // [a-z0-9]([-a-z0-9]*[a-z0-9])?, served at /<name>/<verb>
  std::vector<PolicyConfig> policies;
};

struct Config {
  ServerConfig server;
  LogConfig log;
  ClusterConfig cluster;
  std::vector<ProfileConfig> profiles;
  // The profile also served at /<verb>; the first profile when empty.
  std::string default_profile;
  // Section `gpushare` (every key optional, camelCase of the fields:
  // memoryResource, countResource, indexAnnotation, podMemoryAnnotation,
  // deviceMemoryAnnotation, assignedAnnotation, assumeTimeAnnotation,
  // unhealthyNamespace, unhealthyPrefix, unhealthyKey, unit). Used when a
  // profile has the GpuShare policy.
  model::GpuShareConvention gpushare;

  // Whether some profile uses the policy `name` (e.g. "GpuShare").
  bool UsesPolicy(std::string_view name) const;
};

// Parses and validates YAML text. `source` names it in messages.
StatusOr<Config> LoadConfigText(std::string_view yaml, std::string_view source);
// Reads and parses a file.
StatusOr<Config> LoadConfigFile(const std::string& path);
// The configuration used when no --config is given.
std::string_view EmbeddedDefaultConfig();

// "host:port", "[v6]:port" or ":port" into server.host / server.port.
Status ApplyListenAddress(std::string_view listen, ServerConfig& server);

}  // namespace schedext::config

#endif  // SCHEDEXT_CONFIG_CONFIG_H_
