// Building and validating schedext's configuration (see config.h) from the
// YAML document yaml_reader.h parses and reads: the schema (fields, bounds,
// defaults, cross-field checks) lives here, yaml-cpp's parsing and typed reads
// there. Errors carry the YAML mark as `<source>:<line>:<col>`. Every field is
// checked as it is read; the first error wins.
#include "schedext/config/config.h"

#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/file.h"
#include "common/host_port.h"
#include "common/text.h"
#include "config/yaml_reader.h"

namespace schedext::config {
namespace {

using Json = nlohmann::json;

// The default configuration: one profile, served at /<verb> and /default/<verb>.
constexpr std::string_view kEmbeddedDefault =
    R"(# schedext's built-in configuration, used when no --config is given.
# The HTTP server: every address, port 8888 (the remaining server settings keep their defaults).
server:
  listen: "0.0.0.0:8888"
# Logging: info and above, as plain text lines.
log:
  level: info
  format: text
# One profile, "default": served at /<verb> and /default/<verb>.
profiles:
  - name: default
    policies:
      # Node health checks (weight defaults to 1).
      - name: NodeHealth
      # Node taints against the pod's tolerations.
      - name: TaintToleration
        weight: 1
)";

// Profile names that would collide with schedext's own routes.
// Policies' GET routes (PolicyHandle::AddGetRoute) are not among them: their
// second segment is no verb, so a profile may share their first segment.
constexpr std::array<std::string_view, 8> kReservedProfileNames = {
    "filter", "prioritize", "preempt", "bind", "healthz", "readyz", "version", "metrics"};

constexpr std::array<std::string_view, 7> kLogLevels = {"trace", "debug", "info",    "warn",
                                                        "error", "critical", "off"};
constexpr std::array<std::string_view, 2> kLogFormats = {"text", "json"};

constexpr std::array<std::string_view, 5> kTopLevelFields = {"server", "log", "cluster",
                                                              "defaultProfile", "profiles"};
constexpr std::array<std::string_view, 11> kClusterFields = {
    "mode",           "kubeconfig", "context",          "qps",
    "burst",          "timeoutSeconds", "assumeTtlSeconds", "pageSize",
    "readyDuringRelist", "leaderElection", "events"};
constexpr std::array<std::string_view, 8> kEventsFields = {
    "enabled", "queueSize", "qps", "burst", "updateIntervalSeconds", "seriesWindowSeconds",
    "maxPods", "nodesListed"};
constexpr std::array<std::string_view, 7> kLeaderElectionFields = {
    "enabled", "leaseName", "leaseNamespace", "identity", "leaseDurationSeconds",
    "renewDeadlineSeconds", "retryPeriodSeconds"};
constexpr std::array<std::string_view, 3> kClusterModes = {"auto", "required", "disabled"};
constexpr std::array<std::string_view, 5> kRecordFields = {"dir", "sampleRate", "maxBytes",
                                                           "maxFiles", "verbs"};
constexpr std::array<std::string_view, 4> kRecordVerbs = {"filter", "prioritize", "preempt",
                                                          "bind"};
constexpr std::array<std::string_view, 23> kServerFields = {
    "listen",          "threads",          "maxConnections",       "maxHeaderBytes",
    "maxBodyBytes",    "headerTimeoutSeconds", "bodyTimeoutSeconds", "readTimeoutSeconds",
    "writeTimeoutSeconds", "keepAliveTimeoutSeconds", "keepAliveMaxCount", "bindThreads",
    "maxPendingBinds", "bindDeadlineMillis", "shutdownGraceSeconds", "keepBufferBytes",
    "keepLargeBuffers", "parallelDecodeBytes", "offloadBodyBytes", "ioSpinMicros",
    "statusListen",    "tls",             "record"};
constexpr std::array<std::string_view, 3> kTlsFields = {"certFile", "keyFile", "clientCAFile"};
constexpr std::array<std::string_view, 2> kLogFields = {"level", "format"};
constexpr std::array<std::string_view, 3> kProfileFields = {"name", "policies", "events"};
constexpr std::array<std::string_view, 3> kPolicyFields = {"name", "weight", "args"};

template <size_t N>
bool Contains(const std::array<std::string_view, N>& list, std::string_view s) {
  for (std::string_view item : list) {
    if (item == s) {
      return true;
    }
  }
  return false;
}

bool IsProfileName(std::string_view s) {
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || !lower_or_digit(s.front()) || !lower_or_digit(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!lower_or_digit(c) && c != '-') {
      return false;
    }
  }
  return true;
}

// Splits a listen address; returns an error message (without context) or "".
std::string ParseListen(std::string_view listen, std::string& host, int& port) {
  const StatusOr<HostPort> split = SplitHostPort(listen);
  if (!split.ok()) {
    return split.status().message();
  }
  if (!split->port.has_value()) {
    return split->bracketed ? "expected [host]:port" : "expected host:port";
  }
  const std::string_view host_part = split->host;
  if (split->bracketed) {
    if (host_part.empty()) {
      return "empty IPv6 address in brackets";
    }
    for (char c : host_part) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                c == ':' || c == '.' || c == '%';
      if (!ok) {
        return "invalid IPv6 address " + Quote(host_part);
      }
    }
    if (host_part.find(':') == std::string_view::npos) {
      return "invalid IPv6 address " + Quote(host_part);
    }
  } else {
    for (char c : host_part) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                c == '.' || c == '-' || c == '_';
      if (!ok) {
        return "invalid host " + Quote(host_part);
      }
    }
  }
  const std::string_view port_part = *split->port;
  if (port_part.empty()) {
    return "missing port";
  }
  const std::optional<int> value = ParsePortNumber(port_part, 0);
  if (!value.has_value()) {
    return "port " + Quote(port_part) + " is not a number from 0 to 65535";
  }
  if (!host_part.empty()) {
    host = std::string(host_part);  // ":port" keeps the current host
  }
  port = *value;
  return "";
}

// Reads one YAML document into a Config: the schema, on top of the reader's
// typed fields. Not thread-safe; one per load.
class Loader : private YamlReader {
 public:
  explicit Loader(std::string_view source) : YamlReader(source) {}

  StatusOr<Config> Load(const YAML::Node& root);

 private:
  Status ReadServer(const Field& f, ServerConfig& server) const;
  Status ReadTls(const Field& f, TlsConfig& tls) const;
  Status ReadRecord(const Field& f, RecordConfig& record) const;
  Status ReadLog(const Field& f, LogConfig& log) const;
  Status ReadCluster(const Field& f, ClusterConfig& cluster) const;
  Status ReadLeaderElection(const Field& f, LeaderElectionConfig& election) const;
  Status ReadProfiles(const Field& f, std::vector<ProfileConfig>& profiles) const;
  Status ReadEvents(const Field& f, EventsConfig& events) const;
  Status ReadProfile(const YAML::Node& node, std::string_view path, ProfileConfig& profile) const;
  Status ReadPolicy(const YAML::Node& node, std::string_view path, PolicyConfig& policy) const;
};

Status Loader::ReadServer(const Field& f, ServerConfig& server) const {
  constexpr std::string_view kPath = "server";
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields, ReadMapping(f.value, MarkOf(f), kPath, kServerFields));
  if (const Field* listen = fields.Find("listen")) {
    std::string path = Join(kPath, "listen");
    std::string text;
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*listen, path, text));
    Status s = ApplyListenAddress(text, server);
    if (!s.ok()) {
      return ErrorAt(MarkOf(*listen), path, s.message());
    }
  }
  if (const Field* status = fields.Find("statusListen")) {
    std::string path = Join(kPath, "statusListen");
    std::string text;
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*status, path, text));
    if (!text.empty()) {
      std::string error = ParseListen(text, server.status_host, server.status_port);
      if (!error.empty()) {
        return ErrorAt(MarkOf(*status), path, "listen " + Quote(text) + ": " + error);
      }
    }
  }
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "threads", kPath, 0, 1024,
                                       "an integer from 0 (one per core) to 1024",
                                       server.threads));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "maxConnections", kPath, 1, 1000000,
                                       "an integer from 1 to 1000000", server.max_connections));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "maxHeaderBytes", kPath, 1024, 16 << 20,
                                       "an integer from 1024 to 16777216",
                                       server.max_header_bytes));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "maxBodyBytes", kPath, 1, kMaxInt64,
                                       "a positive integer", server.max_body_bytes));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "readTimeoutSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600",
                                       server.header_timeout_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "headerTimeoutSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600",
                                       server.header_timeout_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "bodyTimeoutSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600", server.body_timeout_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "writeTimeoutSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600",
                                       server.write_timeout_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "keepAliveTimeoutSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600",
                                       server.keep_alive_timeout_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "keepAliveMaxCount", kPath, 1, kMaxInt64,
                                       "a positive integer", server.keep_alive_max_count));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "bindThreads", kPath, 1, 256,
                                       "an integer from 1 to 256", server.bind_threads));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "maxPendingBinds", kPath, 1, 1000000,
                                       "an integer from 1 to 1000000", server.max_pending_binds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "bindDeadlineMillis", kPath, 1, 600000,
                                       "an integer from 1 to 600000",
                                       server.bind_deadline_millis));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "shutdownGraceSeconds", kPath, 0, 3600,
                                       "an integer from 0 to 3600",
                                       server.shutdown_grace_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "keepBufferBytes", kPath, 0, kMaxInt64,
                                       "a non-negative integer", server.keep_buffer_bytes));
  SCHEDEXT_RETURN_IF_ERROR(
      ReadBoolInto(fields, "keepLargeBuffers", kPath, server.keep_large_buffers));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "parallelDecodeBytes", kPath, 0, kMaxInt64,
                                       "a non-negative integer (0: off)",
                                       server.parallel_decode_bytes));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "offloadBodyBytes", kPath, 0, kMaxInt64,
                                       "a non-negative integer", server.offload_body_bytes));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "ioSpinMicros", kPath, 0, 10000,
                                       "an integer from 0 to 10000", server.io_spin_micros));
  if (const Field* tls = fields.Find("tls")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadTls(*tls, server.tls));
  }
  if (const Field* record = fields.Find("record")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadRecord(*record, server.record));
  }
  return OkStatus();
}

Status Loader::ReadRecord(const Field& f, RecordConfig& record) const {
  constexpr std::string_view kPath = "server.record";
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields, ReadMapping(f.value, MarkOf(f), kPath, kRecordFields));
  if (const Field* dir = fields.Find("dir")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*dir, Join(kPath, "dir"), record.dir));
  }
  if (const Field* rate = fields.Find("sampleRate")) {
    const YAML::Node& v = rate->value;
    double value = -1;
    if (v.IsScalar() && v.Tag() == "?") {
      const std::string& text = v.Scalar();
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || ptr != text.data() + text.size()) {
        value = -1;
      }
    }
    if (!(value >= 0 && value <= 1)) {
      return ErrorAt(MarkOf(*rate), Join(kPath, "sampleRate"), "must be a number from 0 to 1");
    }
    record.sample_rate = value;
  }
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "maxBytes", kPath, 4096,
                                       std::numeric_limits<int64_t>::max(),
                                       "an integer of at least 4096", record.max_bytes));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "maxFiles", kPath, 1, 100000,
                                       "an integer from 1 to 100000", record.max_files));
  if (const Field* verbs = fields.Find("verbs")) {
    const std::string path = Join(kPath, "verbs");
    if (!verbs->value.IsSequence()) {
      return ErrorAt(MarkOf(*verbs), path, "must be a list of " + JoinNames(kRecordVerbs));
    }
    record.verbs.clear();
    for (const YAML::Node& item : verbs->value) {
      const std::string verb = item.IsScalar() ? item.Scalar() : std::string();
      bool known = false;
      for (std::string_view v : kRecordVerbs) {
        known = known || v == verb;
      }
      if (!known) {
        return ErrorAt(item.Mark(), path,
                       "must be a list of " + JoinNames(kRecordVerbs) + " (got " + Quote(verb) +
                           ")");
      }
      record.verbs.push_back(verb);
    }
  }
  return OkStatus();
}

Status Loader::ReadTls(const Field& f, TlsConfig& tls) const {
  constexpr std::string_view kPath = "server.tls";
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields, ReadMapping(f.value, MarkOf(f), kPath, kTlsFields));
  struct Key {
    std::string_view name;
    std::string* out;
  };
  for (const Key& key : {Key{"certFile", &tls.cert_file}, Key{"keyFile", &tls.key_file},
                         Key{"clientCAFile", &tls.client_ca_file}}) {
    if (const Field* field = fields.Find(key.name)) {
      SCHEDEXT_RETURN_IF_ERROR(ReadString(*field, Join(kPath, key.name), *key.out));
    }
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return ErrorAt(MarkOf(f), tls.cert_file.empty() ? "server.tls.certFile" : "server.tls.keyFile",
                   "must be set together with " +
                       std::string(tls.cert_file.empty() ? "keyFile" : "certFile"));
  }
  if (!tls.client_ca_file.empty() && tls.cert_file.empty()) {
    return ErrorAt(MarkOf(f), "server.tls.clientCAFile",
                   "needs certFile and keyFile (client certificates are checked on HTTPS only)");
  }
  return OkStatus();
}

Status Loader::ReadLog(const Field& f, LogConfig& log) const {
  constexpr std::string_view kPath = "log";
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields, ReadMapping(f.value, MarkOf(f), kPath, kLogFields));
  SCHEDEXT_RETURN_IF_ERROR(ReadOneOf(fields, "level", kPath, kLogLevels, log.level));
  SCHEDEXT_RETURN_IF_ERROR(ReadOneOf(fields, "format", kPath, kLogFormats, log.format));
  return OkStatus();
}

Status Loader::ReadCluster(const Field& f, ClusterConfig& cluster) const {
  constexpr std::string_view kPath = "cluster";
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields,
                            ReadMapping(f.value, MarkOf(f), kPath, kClusterFields));
  SCHEDEXT_RETURN_IF_ERROR(ReadOneOf(fields, "mode", kPath, kClusterModes, cluster.mode));
  if (const Field* k = fields.Find("kubeconfig")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*k, Join(kPath, "kubeconfig"), cluster.kubeconfig));
  }
  if (const Field* c = fields.Find("context")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*c, Join(kPath, "context"), cluster.context));
  }
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "qps", kPath, 1, 10000,
                                       "an integer from 1 to 10000", cluster.qps));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "burst", kPath, 1, 10000,
                                       "an integer from 1 to 10000", cluster.burst));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "timeoutSeconds", kPath, 1, 300,
                                       "an integer from 1 to 300", cluster.timeout_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "assumeTtlSeconds", kPath, 0, 86400,
                                       "an integer from 0 to 86400",
                                       cluster.assume_ttl_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "pageSize", kPath, 1, 100000,
                                       "an integer from 1 to 100000", cluster.page_size));
  SCHEDEXT_RETURN_IF_ERROR(
      ReadBoolInto(fields, "readyDuringRelist", kPath, cluster.ready_during_relist));
  if (const Field* le = fields.Find("leaderElection")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadLeaderElection(*le, cluster.leader_election));
  }
  if (const Field* ev = fields.Find("events")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadEvents(*ev, cluster.events));
  }
  return OkStatus();
}

Status Loader::ReadEvents(const Field& f, EventsConfig& events) const {
  constexpr std::string_view kPath = "cluster.events";
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields, ReadMapping(f.value, MarkOf(f), kPath, kEventsFields));
  SCHEDEXT_RETURN_IF_ERROR(ReadBoolInto(fields, "enabled", kPath, events.enabled));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "queueSize", kPath, 1, 65536,
                                       "an integer from 1 to 65536", events.queue_size));
  SCHEDEXT_RETURN_IF_ERROR(
      ReadIntInto(fields, "qps", kPath, 1, 1000, "an integer from 1 to 1000", events.qps));
  SCHEDEXT_RETURN_IF_ERROR(
      ReadIntInto(fields, "burst", kPath, 1, 1000, "an integer from 1 to 1000", events.burst));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "updateIntervalSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600",
                                       events.update_interval_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "seriesWindowSeconds", kPath, 1, 86400,
                                       "an integer from 1 to 86400",
                                       events.series_window_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "maxPods", kPath, 1, 1000000,
                                       "an integer from 1 to 1000000", events.max_pods));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "nodesListed", kPath, 1, 10,
                                       "an integer from 1 to 10", events.nodes_listed));
  if (events.series_window_seconds < events.update_interval_seconds) {
    const Field* w = fields.Find("seriesWindowSeconds");
    return ErrorAt(w != nullptr ? MarkOf(*w) : MarkOf(f), Join(kPath, "seriesWindowSeconds"),
                   "must be at least updateIntervalSeconds (" +
                       std::to_string(events.series_window_seconds) + " < " +
                       std::to_string(events.update_interval_seconds) + ")");
  }
  return OkStatus();
}

// Lowercase RFC 1123 subdomain (lease names) or label (namespaces).
bool IsDnsName(std::string_view s, bool allow_dots, size_t max_size) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > max_size || !alnum(s.front()) || !alnum(s.back())) {
    return false;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && allow_dots) {
      if (!alnum(s[i - 1]) || !alnum(s[i + 1])) {
        return false;  // each dot-separated label starts and ends alphanumeric
      }
    } else if (!alnum(c) && c != '-') {
      return false;
    }
  }
  return true;
}

Status Loader::ReadLeaderElection(const Field& f, LeaderElectionConfig& election) const {
  constexpr std::string_view kPath = "cluster.leaderElection";
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields,
                            ReadMapping(f.value, MarkOf(f), kPath, kLeaderElectionFields));
  SCHEDEXT_RETURN_IF_ERROR(ReadBoolInto(fields, "enabled", kPath, election.enabled));
  if (const Field* n = fields.Find("leaseName")) {
    const std::string path = Join(kPath, "leaseName");
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*n, path, election.lease_name));
    if (!IsDnsName(election.lease_name, true, 253)) {
      return ErrorAt(MarkOf(*n), path,
                     Quote(election.lease_name) +
                         " is not a valid object name (lowercase letters, digits, '-' and '.')");
    }
  }
  if (const Field* n = fields.Find("leaseNamespace")) {
    const std::string path = Join(kPath, "leaseNamespace");
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*n, path, election.lease_namespace));
    if (!IsDnsName(election.lease_namespace, false, 63)) {
      return ErrorAt(MarkOf(*n), path,
                     Quote(election.lease_namespace) +
                         " is not a valid namespace (lowercase letters, digits and '-')");
    }
  }
  if (const Field* n = fields.Find("identity")) {
    const std::string path = Join(kPath, "identity");
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*n, path, election.identity));
    if (election.identity.empty()) {
      return ErrorAt(MarkOf(*n), path, "must not be empty (leave it out for hostname_pid)");
    }
  }
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "leaseDurationSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600",
                                       election.lease_duration_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "renewDeadlineSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600",
                                       election.renew_deadline_seconds));
  SCHEDEXT_RETURN_IF_ERROR(ReadIntInto(fields, "retryPeriodSeconds", kPath, 1, 3600,
                                       "an integer from 1 to 3600",
                                       election.retry_period_seconds));
  // client-go's checks: a leader must stop before its lease can expire, and
  // get more than one jittered retry within its deadline.
  auto mark_of = [&](std::string_view name) {
    const Field* field = fields.Find(name);
    return field != nullptr ? MarkOf(*field) : MarkOf(f);
  };
  if (election.lease_duration_seconds <= election.renew_deadline_seconds) {
    return ErrorAt(mark_of("leaseDurationSeconds"), Join(kPath, "leaseDurationSeconds"),
                   "must be greater than renewDeadlineSeconds (" +
                       std::to_string(election.lease_duration_seconds) +
                       " <= " + std::to_string(election.renew_deadline_seconds) + ")");
  }
  if (election.renew_deadline_seconds * 10 <= election.retry_period_seconds * 12) {
    return ErrorAt(mark_of("renewDeadlineSeconds"), Join(kPath, "renewDeadlineSeconds"),
                   "must be greater than 1.2 × retryPeriodSeconds (" +
                       std::to_string(election.renew_deadline_seconds) + " <= 1.2 × " +
                       std::to_string(election.retry_period_seconds) + ")");
  }
  return OkStatus();
}

Status Loader::ReadProfiles(const Field& f, std::vector<ProfileConfig>& profiles) const {
  constexpr std::string_view kPath = "profiles";
  if (!f.value.IsSequence()) {
    return ErrorAt(MarkOf(f), kPath, "must be a list");
  }
  if (f.value.size() == 0) {
    return ErrorAt(MarkOf(f), kPath, "must list at least one profile");
  }
  profiles.clear();
  size_t i = 0;
  for (const YAML::Node& item : f.value) {
    std::string path = Index(kPath, i);
    ProfileConfig profile;
    SCHEDEXT_RETURN_IF_ERROR(ReadProfile(item, path, profile));
    for (size_t j = 0; j < profiles.size(); ++j) {
      if (profiles[j].name == profile.name) {
        return ErrorAt(item["name"].Mark(), path + ".name",
                       "duplicate profile name " + Quote(profile.name) + " (also " +
                           Index(kPath, j) + ")");
      }
    }
    profiles.push_back(std::move(profile));
    ++i;
  }
  return OkStatus();
}

Status Loader::ReadProfile(const YAML::Node& node, std::string_view path,
                           ProfileConfig& profile) const {
  if (!node.IsMap()) {
    return ErrorAt(node.Mark(), path, "must be a mapping");
  }
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields, ReadMapping(node, node.Mark(), path, kProfileFields));

  std::string name_path = Join(path, "name");
  const Field* name = fields.Find("name");
  if (name == nullptr) {
    return ErrorAt(node.Mark(), name_path, "must be set");
  }
  SCHEDEXT_RETURN_IF_ERROR(ReadString(*name, name_path, profile.name));
  if (!IsProfileName(profile.name)) {
    return ErrorAt(MarkOf(*name), name_path,
                   Quote(profile.name) +
                       " is not a valid profile name: use lowercase letters, digits and '-', "
                       "starting and ending with a letter or digit");
  }
  if (Contains(kReservedProfileNames, profile.name)) {
    return ErrorAt(MarkOf(*name), name_path,
                   Quote(profile.name) + " is reserved (reserved names: " +
                       JoinNames(kReservedProfileNames) + ")");
  }

  std::string policies_path = Join(path, "policies");
  const Field* policies = fields.Find("policies");
  if (policies == nullptr) {
    return ErrorAt(node.Mark(), policies_path, "must be set");
  }
  if (!policies->value.IsSequence()) {
    return ErrorAt(MarkOf(*policies), policies_path, "must be a list");
  }
  if (policies->value.size() == 0) {
    return ErrorAt(MarkOf(*policies), policies_path, "must list at least one policy");
  }
  size_t i = 0;
  for (const YAML::Node& item : policies->value) {
    PolicyConfig policy;
    SCHEDEXT_RETURN_IF_ERROR(ReadPolicy(item, Index(policies_path, i), policy));
    profile.policies.push_back(std::move(policy));
    ++i;
  }
  SCHEDEXT_RETURN_IF_ERROR(ReadBoolInto(fields, "events", path, profile.events));
  return OkStatus();
}

Status Loader::ReadPolicy(const YAML::Node& node, std::string_view path,
                          PolicyConfig& policy) const {
  if (!node.IsMap()) {
    return ErrorAt(node.Mark(), path, "must be a mapping");
  }
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields, ReadMapping(node, node.Mark(), path, kPolicyFields));

  std::string name_path = Join(path, "name");
  const Field* name = fields.Find("name");
  if (name == nullptr) {
    return ErrorAt(node.Mark(), name_path, "must be set");
  }
  SCHEDEXT_RETURN_IF_ERROR(ReadString(*name, name_path, policy.name));
  if (policy.name.empty()) {
    return ErrorAt(MarkOf(*name), name_path, "must not be empty");
  }

  SCHEDEXT_RETURN_IF_ERROR(
      ReadIntInto(fields, "weight", path, 1, 1000, "an integer from 1 to 1000", policy.weight));

  Json args = Json::object();
  if (const Field* a = fields.Find("args")) {
    std::string args_path = Join(path, "args");
    if (!a->value.IsMap()) {
      return ErrorAt(MarkOf(*a), args_path, "must be a mapping");
    }
    SCHEDEXT_RETURN_IF_ERROR(ReadJson(a->value, args_path, args));
  }
  policy.args = std::make_shared<const Json>(std::move(args));
  return OkStatus();
}

StatusOr<Config> Loader::Load(const YAML::Node& root) {
  Config config;
  if (!root.IsNull() && !root.IsMap()) {
    return ErrorAt(root.Mark(), "", "the configuration must be a mapping");
  }
  SCHEDEXT_ASSIGN_OR_RETURN(Fields fields, ReadMapping(root, root.Mark(), "", kTopLevelFields));
  if (const Field* f = fields.Find("server")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadServer(*f, config.server));
  }
  if (const Field* f = fields.Find("log")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadLog(*f, config.log));
  }
  if (const Field* f = fields.Find("cluster")) {
    SCHEDEXT_RETURN_IF_ERROR(ReadCluster(*f, config.cluster));
  }
  const Field* profiles = fields.Find("profiles");
  if (profiles == nullptr) {
    return ErrorAt(root.IsMap() ? root.Mark() : YAML::Mark::null_mark(), "profiles",
                   "must be set (at least one profile)");
  }
  SCHEDEXT_RETURN_IF_ERROR(ReadProfiles(*profiles, config.profiles));

  config.default_profile = config.profiles.front().name;
  if (const Field* f = fields.Find("defaultProfile")) {
    std::string name;
    SCHEDEXT_RETURN_IF_ERROR(ReadString(*f, "defaultProfile", name));
    bool found = false;
    std::string known;
    for (const ProfileConfig& p : config.profiles) {
      found = found || p.name == name;
      known += known.empty() ? "" : ", ";
      known += p.name;
    }
    if (!found) {
      return ErrorAt(MarkOf(*f), "defaultProfile",
                     "unknown profile " + Quote(name) + " (profiles: " + known + ")");
    }
    config.default_profile = std::move(name);
  }
  return config;
}

}  // namespace

StatusOr<Config> LoadConfigText(std::string_view yaml, std::string_view source) {
  SCHEDEXT_ASSIGN_OR_RETURN(YAML::Node root, ParseYamlDocument(yaml, source));
  return Loader(source).Load(root);
}

StatusOr<Config> LoadConfigFile(const std::string& path) {
  SCHEDEXT_ASSIGN_OR_RETURN(const std::string text, ReadFile(path, "read config"));
  return LoadConfigText(text, path);
}

std::string_view EmbeddedDefaultConfig() { return kEmbeddedDefault; }

Status ApplyListenAddress(std::string_view listen, ServerConfig& server) {
  std::string host = server.host;
  int port = server.port;
  std::string error = ParseListen(listen, host, port);
  if (!error.empty()) {
    return InvalidArgumentError("listen " + Quote(listen) + ": " + error);
  }
  server.host = std::move(host);
  server.port = port;
  return OkStatus();
}

bool Config::UsesPolicy(std::string_view name) const {
  for (const ProfileConfig& profile : profiles) {
    for (const PolicyConfig& policy : profile.policies) {
      if (policy.name == name) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace schedext::config
