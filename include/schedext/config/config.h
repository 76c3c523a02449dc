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

#include "schedext/status.h"

namespace schedext::config {

// Section server.tls: the listener serves HTTPS when certFile and keyFile are
// set (kube-scheduler's enableHTTPS + tlsConfig). With clientCAFile, the
// handshake requires a client certificate signed by that CA: the only caller
// authentication kube-scheduler can do. The files are re-read when they change.
struct TlsConfig {
  std::string cert_file;       // PEM certificate chain, leaf first
  std::string key_file;        // PEM private key of the leaf
  std::string client_ca_file;  // PEM CA bundle; empty: no client certificate asked
  bool enabled() const { return !cert_file.empty(); }
};

// Section server.record: a sample of the verbs' traffic written to files for
// `schedext replay` (record/recorder.h). Off while `dir` is empty.
struct RecordConfig {
  std::string dir;
  double sample_rate = 1.0;              // 0..1, the fraction of requests recorded
  size_t max_bytes = size_t{64} << 20;   // per file; a larger record is dropped
  int max_files = 8;                     // the oldest files beyond this are deleted
  std::vector<std::string> verbs = {"filter", "prioritize", "preempt"};  // and/or bind
  bool enabled() const { return !dir.empty(); }
};

// Section server: the listener. Limits and deadlines are per connection; the
// defaults are what a production server in front of kube-scheduler needs.
struct ServerConfig {
  std::string host = "0.0.0.0";  // IPv4, IPv6 (no brackets) or a host name
  int port = 8888;
  // I/O threads (event-driven: a connection costs memory, not a thread);
  // 0: one per core.
  int threads = 0;
  // Open connections beyond this are closed as soon as they are accepted.
  int max_connections = 4096;
  // The header section of a request (request line to blank line): 431 above.
  size_t max_header_bytes = size_t{64} << 10;
  // 413 from Content-Length before any body byte is read (a 15,000-node
  // full-mode body is ~174 MB).
  size_t max_body_bytes = size_t{512} << 20;
  // Deadlines for the whole header section (from a connection's accept or a
  // request's first byte) and for the whole body, not per read: a client that
  // trickles bytes is cut off when they pass. readTimeoutSeconds in a config
  // file is the old name of headerTimeoutSeconds.
  int header_timeout_seconds = 10;
  int body_timeout_seconds = 60;
  // Deadline for writing one whole reply.
  int write_timeout_seconds = 60;
  // An idle keep-alive connection is closed after this; above Go's 90 s idle
  // timeout, so kube-scheduler closes first and never races the close.
  int keep_alive_timeout_seconds = 120;
  size_t keep_alive_max_count = 100000;  // requests per connection
  // bind calls the Kubernetes API and may block for seconds: it runs on this
  // many threads of its own, never on an I/O thread, each keeping one
  // connection to the API server (binds in flight at once). Beyond
  // max_pending_binds waiting binds, a bind is answered 503 at once.
  int bind_threads = 8;
  int max_pending_binds = 1024;
  // A bind not sent to the API server within this many milliseconds of its
  // arrival (queued behind other binds or the client's rate limit) is
  // answered with an error and never sent: kube-scheduler's extender
  // httpTimeout (5 s by default) has run out or nearly, so it has retried or
  // will retry the pod, and a late Binding would act behind its back. Keep it
  // below that httpTimeout by the API server's bind latency.
  int bind_deadline_millis = 4000;
  // Seconds to wait for in-flight requests on SIGTERM before exiting anyway.
  int shutdown_grace_seconds = 25;
  // A request's buffers (body, JSON parser, reply) are kept for the next
  // request up to this size (node-cache requests: a 15,000-name body is
  // 0.7 MB); larger ones are freed after the request, or kept once (below).
  size_t keep_buffer_bytes = size_t{1} << 20;
  // Keep one set of buffers larger than keepBufferBytes for the next large
  // request instead of freeing it: the next 5,000-node full-mode filter finds
  // its ~150 MB already mapped. Resident memory stays at the peak of one such
  // request however many connections send them; false frees them each time.
  bool keep_large_buffers = true;
  // Full-mode filter and prioritize bodies of at least this many bytes are
  // decoded by two threads, the connection's and a helper started for the
  // request, each taking part of the nodes (a 5,000-node body, 59 MB: 23 ->
  // 13 ms). 0 turns it off (one thread per request, e.g. under a CPU limit
  // of one core).
  size_t parallel_decode_bytes = size_t{4} << 20;
  // Verbs whose body has at least this many bytes run on threads of their
  // own (as many as the I/O threads), not on the connection's I/O thread:
  // decoding and deciding a 1.4 MB pod then never delays the other
  // connections of that thread. Smaller bodies (a 5,000-name filter is
  // 0.23 MB) run on the I/O thread, which saves a thread hop. 0: every verb
  // runs on those threads.
  size_t offload_body_bytes = size_t{256} << 10;
  // After handling anything, an I/O thread keeps polling its sockets this
  // long (microseconds) before it sleeps in epoll_wait, so a keep-alive
  // client's next request finds it running. Trades that much CPU per request
  // for the tail latency of a VM whose idle vCPUs are slow to wake
  // (docs/benchmarks.md). 0 (the default): sleep at once. Not with a CPU
  // limit: the spinning counts against it.
  int io_spin_micros = 0;
  // The status listener (server.statusListen, "HOST:PORT"): plain HTTP, only
  // GET /healthz, /readyz, /version and /metrics, for kubelet probes and
  // Prometheus, which carry no client certificate. Off (port -1) unless set.
  std::string status_host = "0.0.0.0";
  int status_port = -1;
  TlsConfig tls;
  RecordConfig record;
};

struct LogConfig {
  std::string level = "info";   // trace, debug, info, warn, error, critical, off
  std::string format = "text";  // text or json
};

// Section cluster.leaderElection: one serving replica among several, on a
// coordination.k8s.io/v1 Lease (cluster/leader_election.h). Off by default
// (local runs, sidecars); deploy/ turns it on.
struct LeaderElectionConfig {
  bool enabled = false;
  std::string lease_name = "schedext";
  // Empty: the pod's namespace ($POD_NAMESPACE, then the service account's
  // namespace file), else "default"; resolved at start-up.
  std::string lease_namespace;
  // Empty: "<hostname>_<pid>", resolved at start-up.
  std::string identity;
  // client-go's defaults; validated lease > renew > 1.2 × retry.
  int lease_duration_seconds = 15;
  int renew_deadline_seconds = 10;
  int retry_period_seconds = 2;
};

// Section cluster.events: SchedextUnschedulable Events on pods that a
// profile's filter rejects on every node (explain/pending_events.h,
// docs/pending-pods.md). On by default; a profile opts out with
// profiles[].events: false.
struct EventsConfig {
  bool enabled = true;
  int queue_size = 256;  // jobs waiting for the writer; a full queue drops
  // The writer's own API client's rate limit, apart from binds'.
  int qps = 5;
  int burst = 10;
  // At most one series update (count, lastObservedTime) per pod this often.
  int update_interval_seconds = 30;
  // A pod not seen unschedulable for this long gets a new Event next time.
  int series_window_seconds = 360;
  int max_pods = 4096;     // pods remembered for deduplication (LRU)
  int nodes_listed = 3;    // nearest nodes named in the note
};

// The connection to the Kubernetes API (cluster cache, node-cache mode, bind).
struct ClusterConfig {
  // auto: connect when --kubeconfig / kubeconfig, $KUBECONFIG or the in-cluster
  // environment is there, else run without a cluster; required: refuse to
  // start without one; disabled: never connect.
  std::string mode = "auto";
  std::string kubeconfig;  // empty: $KUBECONFIG, then in-cluster
  std::string context;     // empty: the kubeconfig's current-context
  // Client-side rate limit of API requests. Binds are nearly all of them:
  // kube-scheduler sends them as fast as it decides, so this must not be
  // slower than the scheduler (API Priority and Fairness protects the API
  // server; a bind it refuses with 429 fails and the scheduler retries it).
  int qps = 200;
  int burst = 400;
  int timeout_seconds = 10;      // per API request (connect, read, write)
  int assume_ttl_seconds = 30;   // a bound pod counts at once for this long
                                 // unless the watch confirms it; 0: forever
  int page_size = 500;           // LIST page size
  // /readyz answers 200 while an informer relists after the first sync (the
  // cache then still serves its last view); false: not ready until it is done.
  bool ready_during_relist = false;
  LeaderElectionConfig leader_election;
  EventsConfig events;
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
  // SchedextUnschedulable Events for this profile's rejections (when
  // cluster.events.enabled).
  bool events = true;
};

struct Config {
  ServerConfig server;
  LogConfig log;
  ClusterConfig cluster;
  std::vector<ProfileConfig> profiles;
  // The profile also served at /<verb>; the first profile when empty.
  std::string default_profile;
  // Whether some profile uses the policy `name` (e.g. "NodeLabel").
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
