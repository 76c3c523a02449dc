#include "schedext/config/config.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <nlohmann/json.hpp>

namespace schedext::config {
namespace {

using nlohmann::json;

// A valid profile section to append to server/log-only snippets.
constexpr std::string_view kProfiles = R"(profiles:
  - name: default
    policies:
      - name: NodeHealth
)";

struct ErrorCase {
  std::string name;
  std::string yaml;
  std::string want;  // the exact message
};

void ExpectErrors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<Config> got = LoadConfigText(c.yaml, "config.yaml");
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(), c.want);
  }
}

TEST(ConfigTest, EmbeddedDefaultLoads) {
  StatusOr<Config> got = LoadConfigText(EmbeddedDefaultConfig(), "embedded");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const Config& c = *got;
  EXPECT_EQ(c.server.host, "0.0.0.0");
  EXPECT_EQ(c.server.port, 8888);
  EXPECT_EQ(c.log.level, "info");
  EXPECT_EQ(c.log.format, "text");
  EXPECT_EQ(c.default_profile, "default");
  ASSERT_EQ(c.profiles.size(), 1u);
  EXPECT_EQ(c.profiles[0].name, "default");
  ASSERT_EQ(c.profiles[0].policies.size(), 2u);
  EXPECT_EQ(c.profiles[0].policies[0].name, "NodeHealth");
  EXPECT_EQ(c.profiles[0].policies[0].weight, 1);
  EXPECT_EQ(c.profiles[0].policies[1].name, "TaintToleration");
  EXPECT_EQ(c.profiles[0].policies[1].weight, 1);
  for (const PolicyConfig& p : c.profiles[0].policies) {
    ASSERT_NE(p.args, nullptr);
    EXPECT_EQ(*p.args, json::object());
  }
}

TEST(ConfigTest, LoadsEveryField) {
  constexpr std::string_view kYaml = R"(# every field, none at its default
server:
  listen: "127.0.0.1:9443"
  threads: 64
  maxConnections: 99
  maxHeaderBytes: 2048
  maxBodyBytes: 1048576
  headerTimeoutSeconds: 11
  bodyTimeoutSeconds: 13
  writeTimeoutSeconds: 12
  keepAliveTimeoutSeconds: 100
  keepAliveMaxCount: 7
  bindThreads: 3
  maxPendingBinds: 17
  bindDeadlineMillis: 2500
  shutdownGraceSeconds: 0
  keepBufferBytes: 268435456
  keepLargeBuffers: false
  parallelDecodeBytes: 0
  offloadBodyBytes: 0
  ioSpinMicros: 400
  statusListen: "127.0.0.1:9090"
  tls:
    certFile: /etc/tls/tls.crt
    keyFile: /etc/tls/tls.key
    clientCAFile: /etc/tls/ca.crt
log:
  level: debug
  format: json
defaultProfile: gpu
profiles:
  - name: default
    policies:
      - name: NodeHealth
  - name: gpu
    policies:
      - name: NodeLabel
        weight: 1000
        args:
          label: example.com/pool
          values: [a, b]
      - name: TaintToleration
        weight: 3
)";
  StatusOr<Config> got = LoadConfigText(kYaml, "full.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const Config& c = *got;
  EXPECT_EQ(c.server.host, "127.0.0.1");
  EXPECT_EQ(c.server.port, 9443);
  EXPECT_EQ(c.server.threads, 64);
  EXPECT_EQ(c.server.max_connections, 99);
  EXPECT_EQ(c.server.max_header_bytes, 2048u);
  EXPECT_EQ(c.server.max_body_bytes, 1048576u);
  EXPECT_EQ(c.server.header_timeout_seconds, 11);
  EXPECT_EQ(c.server.body_timeout_seconds, 13);
  EXPECT_EQ(c.server.write_timeout_seconds, 12);
  EXPECT_EQ(c.server.keep_alive_timeout_seconds, 100);
  EXPECT_EQ(c.server.keep_alive_max_count, 7u);
  EXPECT_EQ(c.server.bind_threads, 3);
  EXPECT_EQ(c.server.max_pending_binds, 17);
  EXPECT_EQ(c.server.bind_deadline_millis, 2500);
  EXPECT_EQ(c.server.shutdown_grace_seconds, 0);
  EXPECT_EQ(c.server.keep_buffer_bytes, size_t{268435456});
  EXPECT_FALSE(c.server.keep_large_buffers);
  EXPECT_EQ(c.server.parallel_decode_bytes, 0u);
  EXPECT_EQ(c.server.offload_body_bytes, 0u);
  EXPECT_EQ(c.server.io_spin_micros, 400);
  EXPECT_EQ(c.server.status_host, "127.0.0.1");
  EXPECT_EQ(c.server.status_port, 9090);
  EXPECT_TRUE(c.server.tls.enabled());
  EXPECT_EQ(c.server.tls.cert_file, "/etc/tls/tls.crt");
  EXPECT_EQ(c.server.tls.key_file, "/etc/tls/tls.key");
  EXPECT_EQ(c.server.tls.client_ca_file, "/etc/tls/ca.crt");
  EXPECT_EQ(c.log.level, "debug");
  EXPECT_EQ(c.log.format, "json");
  EXPECT_EQ(c.default_profile, "gpu");
  ASSERT_EQ(c.profiles.size(), 2u);
  EXPECT_EQ(c.profiles[0].name, "default");
  ASSERT_EQ(c.profiles[0].policies.size(), 1u);
  EXPECT_EQ(c.profiles[0].policies[0].name, "NodeHealth");
  EXPECT_EQ(c.profiles[0].policies[0].weight, 1);
  EXPECT_EQ(*c.profiles[0].policies[0].args, json::object());
  EXPECT_EQ(c.profiles[1].name, "gpu");
  ASSERT_EQ(c.profiles[1].policies.size(), 2u);
  EXPECT_EQ(c.profiles[1].policies[0].name, "NodeLabel");
  EXPECT_EQ(c.profiles[1].policies[0].weight, 1000);
  EXPECT_EQ(*c.profiles[1].policies[0].args,
            json::parse(R"({"label": "example.com/pool", "values": ["a", "b"]})"));
  EXPECT_EQ(c.profiles[1].policies[1].name, "TaintToleration");
  EXPECT_EQ(c.profiles[1].policies[1].weight, 3);
  EXPECT_EQ(*c.profiles[1].policies[1].args, json::object());
}

TEST(ConfigTest, AppliesDefaults) {
  StatusOr<Config> got = LoadConfigText(kProfiles, "min.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const ServerConfig want;
  EXPECT_EQ(got->server.host, want.host);
  EXPECT_EQ(got->server.port, want.port);
  EXPECT_EQ(got->server.threads, 0);  // one per core
  EXPECT_EQ(got->server.max_connections, 4096);
  EXPECT_EQ(got->server.max_header_bytes, size_t{64} << 10);
  EXPECT_EQ(got->server.max_body_bytes, size_t{512} << 20);
  EXPECT_EQ(got->server.header_timeout_seconds, 10);
  EXPECT_EQ(got->server.body_timeout_seconds, 60);
  EXPECT_EQ(got->server.write_timeout_seconds, 60);
  EXPECT_EQ(got->server.keep_alive_timeout_seconds, 120);
  EXPECT_EQ(got->server.keep_alive_max_count, 100000u);
  EXPECT_EQ(got->server.bind_threads, 8);
  EXPECT_EQ(got->server.max_pending_binds, 1024);
  EXPECT_EQ(got->server.bind_deadline_millis, 4000);
  EXPECT_EQ(got->cluster.qps, 200);
  EXPECT_EQ(got->cluster.burst, 400);
  EXPECT_EQ(got->server.status_port, -1);  // no status listener
  EXPECT_FALSE(got->server.tls.enabled());
  EXPECT_EQ(got->server.shutdown_grace_seconds, 25);
  EXPECT_EQ(got->server.keep_buffer_bytes, size_t{1} << 20);
  EXPECT_TRUE(got->server.keep_large_buffers);
  EXPECT_EQ(got->server.parallel_decode_bytes, size_t{4} << 20);
  EXPECT_EQ(got->server.offload_body_bytes, size_t{256} << 10);
  EXPECT_EQ(got->server.io_spin_micros, 0);
  EXPECT_EQ(got->log.level, "info");
  EXPECT_EQ(got->log.format, "text");
  EXPECT_EQ(got->default_profile, "default");  // the first profile
}

// readTimeoutSeconds (per recv in the old listener) is read as the old name of
// headerTimeoutSeconds, so existing configs keep a header deadline they chose.
TEST(ConfigTest, ReadTimeoutSecondsIsTheOldNameOfHeaderTimeoutSeconds) {
  StatusOr<Config> got =
      LoadConfigText("server:\n  readTimeoutSeconds: 7\n" + std::string(kProfiles), "old.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->server.header_timeout_seconds, 7);
  got = LoadConfigText(
      "server:\n  readTimeoutSeconds: 7\n  headerTimeoutSeconds: 3\n" + std::string(kProfiles),
      "both.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->server.header_timeout_seconds, 3);
}

TEST(ConfigTest, TreatsNullAsUnset) {
  // `key:` with no value, or `~`, leaves the default in place.
  std::string yaml = "server:\n  threads:\n  listen: ~\nlog:\n" + std::string(kProfiles) +
                     "        weight:\n        args:\n";
  StatusOr<Config> got = LoadConfigText(yaml, "null.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->server.threads, 0);
  EXPECT_EQ(got->server.port, 8888);
  EXPECT_EQ(got->log.level, "info");
  EXPECT_EQ(got->profiles[0].policies[0].weight, 1);
  EXPECT_EQ(*got->profiles[0].policies[0].args, json::object());
}

TEST(ConfigTest, RejectsUnknownFields) {
  const std::string p(kProfiles);
  ExpectErrors({
      {"top level", p + "profile: x\n",
       "config.yaml:5:1: profile: unknown field (known: server, log, cluster, defaultProfile, "
       "profiles)"},
      {"server", "server:\n  listen: \":80\"\n  listn: x\n" + p,
       "config.yaml:3:3: server.listn: unknown field (known: listen, threads, maxConnections, "
       "maxHeaderBytes, maxBodyBytes, headerTimeoutSeconds, bodyTimeoutSeconds, "
       "readTimeoutSeconds, writeTimeoutSeconds, keepAliveTimeoutSeconds, keepAliveMaxCount, "
       "bindThreads, maxPendingBinds, bindDeadlineMillis, shutdownGraceSeconds, keepBufferBytes, "
       "keepLargeBuffers, parallelDecodeBytes, offloadBodyBytes, ioSpinMicros, statusListen, tls, "
       "record)"},
      {"tls", "server:\n  tls:\n    caFile: x\n" + p,
       "config.yaml:3:5: server.tls.caFile: unknown field (known: certFile, keyFile, "
       "clientCAFile)"},
      {"log", "log:\n  Level: info\n" + p,
       "config.yaml:2:3: log.Level: unknown field (known: level, format)"},
      {"profile", "profiles:\n  - name: a\n    policy: []\n",
       "config.yaml:3:5: profiles[0].policy: unknown field (known: name, policies, events)"},
      {"policy", p + "        wieght: 2\n",
       "config.yaml:5:9: profiles[0].policies[0].wieght: unknown field (known: name, weight, "
       "args)"},
      {"duplicate", "log:\n  level: info\n  level: warn\n" + p,
       "config.yaml:3:3: log.level: duplicate field"},
  });
}

TEST(ConfigTest, RejectsBadValues) {
  const std::string p(kProfiles);
  ExpectErrors({
      {"threads negative", "server:\n  threads: -1\n" + p,
       "config.yaml:2:12: server.threads: must be an integer from 0 (one per core) to 1024"},
      {"threads too many", "server:\n  threads: 1025\n" + p,
       "config.yaml:2:12: server.threads: must be an integer from 0 (one per core) to 1024"},
      {"threads quoted", "server:\n  threads: \"32\"\n" + p,
       "config.yaml:2:12: server.threads: must be an integer from 0 (one per core) to 1024"},
      {"threads float", "server:\n  threads: 3.5\n" + p,
       "config.yaml:2:12: server.threads: must be an integer from 0 (one per core) to 1024"},
      {"threads list", "server:\n  threads: [1]\n" + p,
       "config.yaml:2:12: server.threads: must be an integer from 0 (one per core) to 1024"},
      {"offloadBodyBytes negative", "server:\n  offloadBodyBytes: -1\n" + p,
       "config.yaml:2:21: server.offloadBodyBytes: must be a non-negative integer"},
      {"parallelDecodeBytes negative", "server:\n  parallelDecodeBytes: -1\n" + p,
       "config.yaml:2:24: server.parallelDecodeBytes: must be a non-negative integer (0: off)"},
      {"ioSpinMicros too long", "server:\n  ioSpinMicros: 10001\n" + p,
       "config.yaml:2:17: server.ioSpinMicros: must be an integer from 0 to 10000"},
      {"ioSpinMicros negative", "server:\n  ioSpinMicros: -5\n" + p,
       "config.yaml:2:17: server.ioSpinMicros: must be an integer from 0 to 10000"},
      {"maxConnections zero", "server:\n  maxConnections: 0\n" + p,
       "config.yaml:2:19: server.maxConnections: must be an integer from 1 to 1000000"},
      {"maxHeaderBytes small", "server:\n  maxHeaderBytes: 100\n" + p,
       "config.yaml:2:19: server.maxHeaderBytes: must be an integer from 1024 to 16777216"},
      {"headerTimeoutSeconds", "server:\n  headerTimeoutSeconds: 0\n" + p,
       "config.yaml:2:25: server.headerTimeoutSeconds: must be an integer from 1 to 3600"},
      {"bodyTimeoutSeconds", "server:\n  bodyTimeoutSeconds: x\n" + p,
       "config.yaml:2:23: server.bodyTimeoutSeconds: must be an integer from 1 to 3600"},
      {"bindThreads", "server:\n  bindThreads: 0\n" + p,
       "config.yaml:2:16: server.bindThreads: must be an integer from 1 to 256"},
      {"maxPendingBinds", "server:\n  maxPendingBinds: 0\n" + p,
       "config.yaml:2:20: server.maxPendingBinds: must be an integer from 1 to 1000000"},
      {"statusListen", "server:\n  statusListen: nope\n" + p,
       "config.yaml:2:17: server.statusListen: listen \"nope\": expected host:port"},
      {"tls key without cert", "server:\n  tls:\n    keyFile: k\n" + p,
       "config.yaml:3:5: server.tls.certFile: must be set together with keyFile"},
      {"tls cert without key", "server:\n  tls:\n    certFile: c\n" + p,
       "config.yaml:3:5: server.tls.keyFile: must be set together with certFile"},
      {"tls client CA alone", "server:\n  tls:\n    clientCAFile: ca\n" + p,
       "config.yaml:3:5: server.tls.clientCAFile: needs certFile and keyFile (client "
       "certificates are checked on HTTPS only)"},
      {"maxBodyBytes zero", "server:\n  maxBodyBytes: 0\n" + p,
       "config.yaml:2:17: server.maxBodyBytes: must be a positive integer"},
      {"maxBodyBytes overflow", "server:\n  maxBodyBytes: 99999999999999999999\n" + p,
       "config.yaml:2:17: server.maxBodyBytes: must be a positive integer"},
      {"keepAliveTimeoutSeconds", "server:\n  keepAliveTimeoutSeconds: 3601\n" + p,
       "config.yaml:2:28: server.keepAliveTimeoutSeconds: must be an integer from 1 to 3600"},
      {"keepAliveMaxCount", "server:\n  keepAliveMaxCount: -1\n" + p,
       "config.yaml:2:22: server.keepAliveMaxCount: must be a positive integer"},
      {"readTimeoutSeconds", "server:\n  readTimeoutSeconds: 0\n" + p,
       "config.yaml:2:23: server.readTimeoutSeconds: must be an integer from 1 to 3600"},
      {"writeTimeoutSeconds", "server:\n  writeTimeoutSeconds: yes\n" + p,
       "config.yaml:2:24: server.writeTimeoutSeconds: must be an integer from 1 to 3600"},
      {"shutdownGraceSeconds", "server:\n  shutdownGraceSeconds: -1\n" + p,
       "config.yaml:2:25: server.shutdownGraceSeconds: must be an integer from 0 to 3600"},
      {"listen", "server:\n  listen: x\n" + p,
       "config.yaml:2:11: server.listen: listen \"x\": expected host:port"},
      {"listen not a string", "server:\n  listen: {a: 1}\n" + p,
       "config.yaml:2:11: server.listen: must be a string"},
      {"server not a mapping", "server: 8888\n" + p,
       "config.yaml:1:9: server: must be a mapping"},
      {"log level", "log:\n  level: verbose\n" + p,
       "config.yaml:2:10: log.level: must be one of trace, debug, info, warn, error, critical, "
       "off (got \"verbose\")"},
      {"log format", "log:\n  format: xml\n" + p,
       "config.yaml:2:11: log.format: must be one of text, json (got \"xml\")"},
      {"weight zero", p + "        weight: 0\n",
       "config.yaml:5:17: profiles[0].policies[0].weight: must be an integer from 1 to 1000"},
      {"weight too big",
       "profiles:\n  - name: a\n    policies:\n      - name: A\n      - name: B\n"
       "        weight: 1001\n",
       "config.yaml:6:17: profiles[0].policies[1].weight: must be an integer from 1 to 1000"},
      {"weight string", p + "        weight: heavy\n",
       "config.yaml:5:17: profiles[0].policies[0].weight: must be an integer from 1 to 1000"},
      {"policy name empty", "profiles:\n  - name: a\n    policies:\n      - name: \"\"\n",
       "config.yaml:4:15: profiles[0].policies[0].name: must not be empty"},
      {"policy name missing", "profiles:\n  - name: a\n    policies:\n      - weight: 2\n",
       "config.yaml:4:9: profiles[0].policies[0].name: must be set"},
      {"policy name a list", "profiles:\n  - name: a\n    policies:\n      - name: [x]\n",
       "config.yaml:4:15: profiles[0].policies[0].name: must be a string"},
      {"policy not a mapping", "profiles:\n  - name: a\n    policies:\n      - NodeHealth\n",
       "config.yaml:4:9: profiles[0].policies[0]: must be a mapping"},
      {"no policies", "profiles:\n  - name: a\n    policies: []\n",
       "config.yaml:3:15: profiles[0].policies: must list at least one policy"},
      {"policies missing", "profiles:\n  - name: a\n",
       "config.yaml:2:5: profiles[0].policies: must be set"},
      {"policies a mapping", "profiles:\n  - name: a\n    policies: {name: x}\n",
       "config.yaml:3:15: profiles[0].policies: must be a list"},
      {"profile name missing", "profiles:\n  - policies: []\n",
       "config.yaml:2:5: profiles[0].name: must be set"},
      {"no profiles", "profiles: []\n",
       "config.yaml:1:11: profiles: must list at least one profile"},
      {"profiles missing", "log:\n  level: info\n",
       "config.yaml:1:1: profiles: must be set (at least one profile)"},
      {"empty document", "",
       "config.yaml:1:1: profiles: must be set (at least one profile)"},
      {"profiles a mapping", "profiles:\n  default: {}\n",
       "config.yaml:2:3: profiles: must be a list"},
      {"top level a list", "- a\n",
       "config.yaml:1:1: the configuration must be a mapping"},
      {"args not a mapping", p + "        args: [1]\n",
       "config.yaml:5:15: profiles[0].policies[0].args: must be a mapping"},
      {"args tag", p + "        args:\n          x: !!binary aGk=\n",
       "config.yaml:6:14: profiles[0].policies[0].args.x: unsupported tag "
       "\"tag:yaml.org,2002:binary\""},
      {"args duplicate key", p + "        args: {a: 1, a: 2}\n",
       "config.yaml:5:22: profiles[0].policies[0].args.a: duplicate field"},
      {"args nested error", p + "        args:\n          list:\n            - {k: !x 1}\n",
       "config.yaml:7:19: profiles[0].policies[0].args.list[0].k: unsupported tag \"!x\""},
  });
}

TEST(ConfigTest, LoadsTheClusterSection) {
  const std::string yaml = std::string(R"(cluster:
  mode: required
  kubeconfig: /etc/schedext/kubeconfig
  context: prod
  qps: 50
  burst: 100
  timeoutSeconds: 7
  assumeTtlSeconds: 0
  pageSize: 250
  readyDuringRelist: true
)") + std::string(kProfiles);
  StatusOr<Config> got = LoadConfigText(yaml, "config.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const ClusterConfig& c = got->cluster;
  EXPECT_EQ(c.mode, "required");
  EXPECT_EQ(c.kubeconfig, "/etc/schedext/kubeconfig");
  EXPECT_EQ(c.context, "prod");
  EXPECT_EQ(c.qps, 50);
  EXPECT_EQ(c.burst, 100);
  EXPECT_EQ(c.timeout_seconds, 7);
  EXPECT_EQ(c.assume_ttl_seconds, 0);
  EXPECT_EQ(c.page_size, 250);
  EXPECT_TRUE(c.ready_during_relist);

  StatusOr<Config> defaults = LoadConfigText(std::string(kProfiles), "config.yaml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->cluster.mode, "auto");
  EXPECT_EQ(defaults->cluster.assume_ttl_seconds, 30);
  EXPECT_FALSE(defaults->cluster.ready_during_relist);

  ExpectErrors({
      {"bad mode", "cluster:\n  mode: sometimes\n" + std::string(kProfiles),
       "config.yaml:2:9: cluster.mode: must be one of auto, required, disabled (got "
       "\"sometimes\")"},
      {"zero qps", "cluster:\n  qps: 0\n" + std::string(kProfiles),
       "config.yaml:2:8: cluster.qps: must be an integer from 1 to 10000"},
      {"quoted bool", "cluster:\n  readyDuringRelist: \"yes\"\n" + std::string(kProfiles),
       "config.yaml:2:22: cluster.readyDuringRelist: must be true or false"},
  });
}

TEST(ConfigTest, LoadsTheLeaderElectionSection) {
  const std::string yaml = std::string(R"(cluster:
  leaderElection:
    enabled: true
    leaseName: schedext.example
    leaseNamespace: schedext-system
    identity: replica-a
    leaseDurationSeconds: 30
    renewDeadlineSeconds: 20
    retryPeriodSeconds: 4
)") + std::string(kProfiles);
  StatusOr<Config> got = LoadConfigText(yaml, "config.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const LeaderElectionConfig& le = got->cluster.leader_election;
  EXPECT_TRUE(le.enabled);
  EXPECT_EQ(le.lease_name, "schedext.example");
  EXPECT_EQ(le.lease_namespace, "schedext-system");
  EXPECT_EQ(le.identity, "replica-a");
  EXPECT_EQ(le.lease_duration_seconds, 30);
  EXPECT_EQ(le.renew_deadline_seconds, 20);
  EXPECT_EQ(le.retry_period_seconds, 4);

  // Off by default, with client-go's durations; namespace and identity are
  // resolved at start-up when empty.
  StatusOr<Config> defaults = LoadConfigText(std::string(kProfiles), "config.yaml");
  ASSERT_TRUE(defaults.ok());
  const LeaderElectionConfig& d = defaults->cluster.leader_election;
  EXPECT_FALSE(d.enabled);
  EXPECT_EQ(d.lease_name, "schedext");
  EXPECT_EQ(d.lease_namespace, "");
  EXPECT_EQ(d.identity, "");
  EXPECT_EQ(d.lease_duration_seconds, 15);
  EXPECT_EQ(d.renew_deadline_seconds, 10);
  EXPECT_EQ(d.retry_period_seconds, 2);
  // The embedded default (the README's quick start) keeps it off.
  StatusOr<Config> embedded = LoadConfigText(EmbeddedDefaultConfig(), "embedded");
  ASSERT_TRUE(embedded.ok());
  EXPECT_FALSE(embedded->cluster.leader_election.enabled);

  const std::string p = std::string(kProfiles);
  ExpectErrors({
      {"unknown key", "cluster:\n  leaderElection:\n    lease: x\n" + p,
       "config.yaml:3:5: cluster.leaderElection.lease: unknown field (known: enabled, "
       "leaseName, leaseNamespace, identity, leaseDurationSeconds, renewDeadlineSeconds, "
       "retryPeriodSeconds)"},
      {"not a mapping", "cluster:\n  leaderElection: yes\n" + p,
       "config.yaml:2:19: cluster.leaderElection: must be a mapping"},
      {"quoted enabled", "cluster:\n  leaderElection:\n    enabled: \"true\"\n" + p,
       "config.yaml:3:14: cluster.leaderElection.enabled: must be true or false"},
      {"bad lease name", "cluster:\n  leaderElection:\n    leaseName: Sched_Ext\n" + p,
       "config.yaml:3:16: cluster.leaderElection.leaseName: \"Sched_Ext\" is not a valid "
       "object name (lowercase letters, digits, '-' and '.')"},
      {"bad namespace", "cluster:\n  leaderElection:\n    leaseNamespace: a.b\n" + p,
       "config.yaml:3:21: cluster.leaderElection.leaseNamespace: \"a.b\" is not a valid "
       "namespace (lowercase letters, digits and '-')"},
      {"empty identity", "cluster:\n  leaderElection:\n    identity: \"\"\n" + p,
       "config.yaml:3:15: cluster.leaderElection.identity: must not be empty (leave it out for "
       "hostname_pid)"},
      {"zero retry", "cluster:\n  leaderElection:\n    retryPeriodSeconds: 0\n" + p,
       "config.yaml:3:25: cluster.leaderElection.retryPeriodSeconds: must be an integer from 1 "
       "to 3600"},
      {"lease not above renew",
       "cluster:\n  leaderElection:\n    leaseDurationSeconds: 10\n" + p,
       "config.yaml:3:27: cluster.leaderElection.leaseDurationSeconds: must be greater than "
       "renewDeadlineSeconds (10 <= 10)"},
      {"renew not above 1.2 retry",
       "cluster:\n  leaderElection:\n    renewDeadlineSeconds: 6\n    retryPeriodSeconds: 5\n" +
           p,
       "config.yaml:3:27: cluster.leaderElection.renewDeadlineSeconds: must be greater than "
       "1.2 × retryPeriodSeconds (6 <= 1.2 × 5)"},
      {"defaults against a short lease",
       "cluster:\n  leaderElection:\n    leaseDurationSeconds: 5\n" + p,
       "config.yaml:3:27: cluster.leaderElection.leaseDurationSeconds: must be greater than "
       "renewDeadlineSeconds (5 <= 10)"},
  });
}

TEST(ConfigTest, LoadsTheEventsSectionAndTheProfilesOptOut) {
  const std::string yaml = R"(cluster:
  events:
    enabled: false
    queueSize: 64
    qps: 2
    burst: 4
    updateIntervalSeconds: 10
    seriesWindowSeconds: 600
    maxPods: 100
    nodesListed: 5
profiles:
  - name: gpu
    events: false
    policies:
      - name: NodeHealth
  - name: other
    policies:
      - name: NodeHealth
)";
  StatusOr<Config> got = LoadConfigText(yaml, "config.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const EventsConfig& ev = got->cluster.events;
  EXPECT_FALSE(ev.enabled);
  EXPECT_EQ(ev.queue_size, 64);
  EXPECT_EQ(ev.qps, 2);
  EXPECT_EQ(ev.burst, 4);
  EXPECT_EQ(ev.update_interval_seconds, 10);
  EXPECT_EQ(ev.series_window_seconds, 600);
  EXPECT_EQ(ev.max_pods, 100);
  EXPECT_EQ(ev.nodes_listed, 5);
  EXPECT_FALSE(got->profiles[0].events);
  EXPECT_TRUE(got->profiles[1].events);  // on unless a profile opts out

  StatusOr<Config> defaults = LoadConfigText(std::string(kProfiles), "config.yaml");
  ASSERT_TRUE(defaults.ok());
  const EventsConfig& d = defaults->cluster.events;
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.queue_size, 256);
  EXPECT_EQ(d.qps, 5);
  EXPECT_EQ(d.burst, 10);
  EXPECT_EQ(d.update_interval_seconds, 30);
  EXPECT_EQ(d.series_window_seconds, 360);
  EXPECT_EQ(d.max_pods, 4096);
  EXPECT_EQ(d.nodes_listed, 3);
  EXPECT_TRUE(defaults->profiles[0].events);

  const std::string p = std::string(kProfiles);
  ExpectErrors({
      {"unknown key", "cluster:\n  events:\n    size: 1\n" + p,
       "config.yaml:3:5: cluster.events.size: unknown field (known: enabled, queueSize, qps, "
       "burst, updateIntervalSeconds, seriesWindowSeconds, maxPods, nodesListed)"},
      {"zero queue", "cluster:\n  events:\n    queueSize: 0\n" + p,
       "config.yaml:3:16: cluster.events.queueSize: must be an integer from 1 to 65536"},
      {"too many nodes", "cluster:\n  events:\n    nodesListed: 11\n" + p,
       "config.yaml:3:18: cluster.events.nodesListed: must be an integer from 1 to 10"},
      {"window under the interval",
       "cluster:\n  events:\n    updateIntervalSeconds: 60\n    seriesWindowSeconds: 30\n" + p,
       "config.yaml:4:26: cluster.events.seriesWindowSeconds: must be at least "
       "updateIntervalSeconds (30 < 60)"},
      {"profile events not a bool",
       "profiles:\n  - name: a\n    events: maybe\n    policies:\n      - name: NodeHealth\n",
       "config.yaml:3:13: profiles[0].events: must be true or false"},
  });
}

TEST(ConfigTest, ReportsYamlSyntaxErrors) {
  ExpectErrors({
      {"unclosed flow", "profiles: [\nlog: 1\n",
       "config.yaml:3:1: invalid YAML: end of sequence flow not found"},
      {"bad indentation", "server:\n  listen: a\n bad: 1\n",
       "config.yaml:3:2: invalid YAML: end of map not found"},
      {"unknown anchor", "profiles: *nope\n",
       "config.yaml:1:11: invalid YAML: the referenced anchor is not defined"},
      {"two documents", std::string(kProfiles) + "---\n" + std::string(kProfiles),
       "config.yaml: expected one YAML document, found 2"},
      // yaml-cpp 0.7's LoadAll loops for ever where a document would start
      // at a ',' outside [] and {} (fuzz/config); refused at that ','.
      {"leading comma", ",", "config.yaml:1:1: invalid YAML: a document cannot start with ','"},
      {"leading comma and more", ",p:\n  a: 1\n",
       "config.yaml:1:1: invalid YAML: a document cannot start with ','"},
      {"comma after a blank line (the 850-byte fuzz input, minimised)", "\n,",
       "config.yaml:2:1: invalid YAML: a document cannot start with ','"},
      {"comma after an indented mapping (the fuzz input's shape)",
       "  listen: \"0.0.0.0:8888\"\n, # a comment\n",
       "config.yaml:2:1: invalid YAML: a document cannot start with ','"},
      {"comma after a sequence", "- a\n,",
       "config.yaml:2:1: invalid YAML: a document cannot start with ','"},
      {"comma after a flow sequence", "[a] ,",
       "config.yaml:1:5: invalid YAML: a document cannot start with ','"},
      {"comma after a comment and a document marker", "# c\n---\n,",
       "config.yaml:3:1: invalid YAML: a document cannot start with ','"},
      {"comma after a complete first document", std::string(kProfiles) + "---\n,",
       "config.yaml:6:1: invalid YAML: a document cannot start with ','"},  // 4 lines, ---
  });
}

TEST(ConfigTest, ConvertsArgsToJson) {
  constexpr std::string_view kYaml = R"(profiles:
  - name: default
    policies:
      - name: Example
        args:
          int: 5
          negative: -12
          plusInt: +7
          bigInt: 9223372036854775807
          hugeInt: 92233720368547758080
          quotedInt: "5"
          singleQuoted: '5'
          strTag: !!str 5
          double: 2.5
          exponent: 1e3
          leadingDot: .5
          bool: true
          boolFalse: False
          yesIsAString: yes
          nullWord: null
          tilde: ~
          empty:
          quotedNull: "null"
          quotedTrue: "true"
          text: hello world
          infIsAString: .inf
          literal: |
            two
            lines
          list: [1, "2", 3.0, x, [true], {k: v}]
          map:
            nested:
              deeper: [~, 0]
)";
  StatusOr<Config> got = LoadConfigText(kYaml, "args.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const json& args = *got->profiles[0].policies[0].args;

  struct Case {
    std::string key;
    json want;
    json::value_t type;
  };
  const std::vector<Case> cases = {
      {"int", 5, json::value_t::number_integer},
      {"negative", -12, json::value_t::number_integer},
      {"plusInt", 7, json::value_t::number_integer},
      {"bigInt", INT64_MAX, json::value_t::number_integer},
      {"hugeInt", 92233720368547758080.0, json::value_t::number_float},
      {"quotedInt", "5", json::value_t::string},
      {"singleQuoted", "5", json::value_t::string},
      {"strTag", "5", json::value_t::string},
      {"double", 2.5, json::value_t::number_float},
      {"exponent", 1000.0, json::value_t::number_float},
      {"leadingDot", 0.5, json::value_t::number_float},
      {"bool", true, json::value_t::boolean},
      {"boolFalse", false, json::value_t::boolean},
      {"yesIsAString", "yes", json::value_t::string},
      {"nullWord", nullptr, json::value_t::null},
      {"tilde", nullptr, json::value_t::null},
      {"empty", nullptr, json::value_t::null},
      {"quotedNull", "null", json::value_t::string},
      {"quotedTrue", "true", json::value_t::string},
      {"text", "hello world", json::value_t::string},
      {"infIsAString", ".inf", json::value_t::string},
      {"literal", "two\nlines\n", json::value_t::string},
      {"list", json::parse(R"([1, "2", 3.0, "x", [true], {"k": "v"}])"), json::value_t::array},
      {"map", json::parse(R"({"nested": {"deeper": [null, 0]}})"), json::value_t::object},
  };
  ASSERT_TRUE(args.is_object());
  EXPECT_EQ(args.size(), cases.size());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    ASSERT_TRUE(args.contains(c.key));
    EXPECT_EQ(args.at(c.key), c.want);
    EXPECT_EQ(args.at(c.key).type(), c.type);
  }
  // 3.0 stays a float inside the list, and 1 an integer.
  EXPECT_TRUE(args.at("list").at(0).is_number_integer());
  EXPECT_TRUE(args.at("list").at(2).is_number_float());
}

TEST(ConfigTest, ArgsShareAliases) {
  constexpr std::string_view kYaml = R"(profiles:
  - name: default
    policies:
      - name: A
        args: &common
          label: pool
      - name: B
        args: *common
)";
  StatusOr<Config> got = LoadConfigText(kYaml, "alias.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got->profiles[0].policies[0].args, json::parse(R"({"label": "pool"})"));
  EXPECT_EQ(*got->profiles[0].policies[1].args, json::parse(R"({"label": "pool"})"));
}

TEST(ConfigTest, BoundsArgsSize) {
  // Nesting deeper than 64 levels.
  std::string deep = std::string(kProfiles) + "        args:\n          x: " +
                     std::string(70, '[') + std::string(70, ']') + "\n";
  StatusOr<Config> got = LoadConfigText(deep, "config.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("profiles[0].policies[0].args.x[0][0]"),
            std::string::npos);
  EXPECT_NE(got.status().message().find(": nested more than 64 levels deep"), std::string::npos)
      << got.status().message();

  // Aliases that multiply ten values into 10^6.
  std::string bomb = std::string(kProfiles) + "        args:\n          a: &a [0";
  for (int i = 1; i < 10; ++i) {
    bomb += ", 0";
  }
  bomb += "]\n";
  std::string prev = "a";
  for (std::string level : {"b", "c", "d", "e", "f"}) {
    bomb += "          " + level + ": &" + level + " [*" + prev;
    for (int i = 1; i < 10; ++i) {
      bomb += ", *" + prev;
    }
    bomb += "]\n";
    prev = level;
  }
  got = LoadConfigText(bomb, "config.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find(": too many values (more than 100000)"),
            std::string::npos)
      << got.status().message();
}

TEST(ConfigTest, ParsesListenAddresses) {
  struct Case {
    std::string name;
    std::string listen;
    std::string want_host;  // host starts as "0.0.0.0"
    int want_port;
  };
  const std::vector<Case> cases = {
      {"ipv4", "127.0.0.1:8080", "127.0.0.1", 8080},
      {"host name", "schedext.local:443", "schedext.local", 443},
      {"ipv6", "[::1]:8080", "::1", 8080},
      {"ipv6 any", "[::]:9000", "::", 9000},
      {"port only keeps the host", ":8081", "0.0.0.0", 8081},
      {"port zero", "localhost:0", "localhost", 0},
      {"highest port", "0.0.0.0:65535", "0.0.0.0", 65535},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServerConfig server;
    ASSERT_EQ(server.host, "0.0.0.0");
    Status s = ApplyListenAddress(c.listen, server);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(server.host, c.want_host);
    EXPECT_EQ(server.port, c.want_port);
  }
}

TEST(ConfigTest, RejectsBadListenAddresses) {
  struct Case {
    std::string name;
    std::string listen;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"no port", "x", "listen \"x\": expected host:port"},
      {"empty", "", "listen \"\": expected host:port"},
      {"empty port", "host:", "listen \"host:\": missing port"},
      {"port too big", "host:65536", "listen \"host:65536\": port \"65536\" is not a number from 0 "
                                     "to 65535"},
      {"port not a number", ":http", "listen \":http\": port \"http\" is not a number from 0 to "
                                     "65535"},
      {"negative port", ":-1", "listen \":-1\": port \"-1\" is not a number from 0 to 65535"},
      {"unbracketed ipv6", "::1:8080",
       "listen \"::1:8080\": an IPv6 address must be in brackets, as in \"[::1]:8888\""},
      {"unclosed bracket", "[::1:8080", "listen \"[::1:8080\": missing ']' after the IPv6 address"},
      {"bracket without port", "[::1]", "listen \"[::1]\": expected [host]:port"},
      {"empty brackets", "[]:80", "listen \"[]:80\": empty IPv6 address in brackets"},
      {"not ipv6 in brackets", "[host]:80", "listen \"[host]:80\": invalid IPv6 address \"host\""},
      {"space in host", "a b:80", "listen \"a b:80\": invalid host \"a b\""},
      {"url", "http://x:80", "listen \"http://x:80\": an IPv6 address must be in brackets, as in "
                             "\"[::1]:8888\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServerConfig server;
    server.host = "keep";
    server.port = 1;
    Status s = ApplyListenAddress(c.listen, server);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.want);
    EXPECT_EQ(server.host, "keep");  // untouched on error
    EXPECT_EQ(server.port, 1);
  }
}

TEST(ConfigTest, SelectsDefaultProfile) {
  constexpr std::string_view kYaml = R"(defaultProfile: b
profiles:
  - name: a
    policies: [{name: X}]
  - name: b
    policies: [{name: Y}]
)";
  StatusOr<Config> got = LoadConfigText(kYaml, "config.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->default_profile, "b");
}

TEST(ConfigTest, RejectsUnknownDefaultProfile) {
  ExpectErrors({
      {"unknown", "defaultProfile: c\n" + std::string(R"(profiles:
  - name: a
    policies: [{name: X}]
  - name: b
    policies: [{name: Y}]
)"),
       "config.yaml:1:17: defaultProfile: unknown profile \"c\" (profiles: a, b)"},
      {"not a string", "defaultProfile: [a]\n" + std::string(kProfiles),
       "config.yaml:1:17: defaultProfile: must be a string"},
  });
}

TEST(ConfigTest, RejectsDuplicateProfileNames) {
  ExpectErrors({
      {"second", R"(profiles:
  - name: a
    policies: [{name: X}]
  - name: a
    policies: [{name: Y}]
)",
       "config.yaml:4:11: profiles[1].name: duplicate profile name \"a\" (also profiles[0])"},
      {"third", R"(profiles:
  - name: a
    policies: [{name: X}]
  - name: b
    policies: [{name: X}]
  - name: b
    policies: [{name: X}]
)",
       "config.yaml:6:11: profiles[2].name: duplicate profile name \"b\" (also profiles[1])"},
  });
}

TEST(ConfigTest, RejectsReservedProfileNames) {
  const std::vector<std::string> reserved = {"filter",  "prioritize", "preempt", "bind",
                                             "healthz", "readyz",     "version", "metrics"};
  std::vector<ErrorCase> cases;
  for (const std::string& name : reserved) {
    cases.push_back({name, "profiles:\n  - name: " + name + "\n    policies: [{name: X}]\n",
                     "config.yaml:2:11: profiles[0].name: \"" + name +
                         "\" is reserved (reserved names: filter, prioritize, preempt, bind, "
                         "healthz, readyz, version, metrics)"});
  }
  ExpectErrors(cases);
}

TEST(ConfigTest, GpuShareNamesAreThePolicysArgs) {
  // The device plugin's names are GpuShare's args (policy/builtin/gpushare),
  // passed through like any policy's; the 0.x top-level section is gone.
  const std::string yaml = R"(profiles:
  - name: gpushare
    policies:
      - name: GpuShare
        args:
          unit: MiB
          unhealthyNamespace: gpu-system
)";
  StatusOr<Config> got = LoadConfigText(yaml, "config.yaml");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_NE(got->profiles[0].policies[0].args, nullptr);
  EXPECT_EQ(*got->profiles[0].policies[0].args,
            (nlohmann::json{{"unit", "MiB"}, {"unhealthyNamespace", "gpu-system"}}));
  EXPECT_TRUE(got->UsesPolicy("GpuShare"));
  // "gpushare" is a profile name like any other.
  EXPECT_EQ(got->default_profile, "gpushare");
  ExpectErrors({
      {"old section", "gpushare:\n  unit: MiB\n" + std::string(kProfiles),
       "config.yaml:1:1: gpushare: unknown field (known: server, log, cluster, defaultProfile, "
       "profiles)"},
  });
  // Whether the cluster is required is the policy's to say (at start-up).
  EXPECT_TRUE(LoadConfigText("cluster:\n  mode: disabled\n" + yaml, "c").ok());
}

TEST(ConfigTest, ValidatesProfileNames) {
  const std::vector<std::string> good = {"a", "gpu", "gpu-2", "0", "a-b-c", "filters", "x9"};
  for (const std::string& name : good) {
    SCOPED_TRACE(name);
    StatusOr<Config> got =
        LoadConfigText("profiles:\n  - name: " + name + "\n    policies: [{name: X}]\n", "c");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->profiles[0].name, name);
  }
  const std::vector<std::string> bad = {"Gpu", "-a", "a-", "a_b", "a.b", "a/b", "\"\"", "\"a b\""};
  std::vector<ErrorCase> cases;
  for (const std::string& name : bad) {
    std::string shown = name.front() == '"' ? name : "\"" + name + "\"";
    cases.push_back({name, "profiles:\n  - name: " + name + "\n    policies: [{name: X}]\n",
                     "config.yaml:2:11: profiles[0].name: " + shown +
                         " is not a valid profile name: use lowercase letters, digits and '-', "
                         "starting and ending with a letter or digit"});
  }
  ExpectErrors(cases);
}

class TempFile {
 public:
  explicit TempFile(std::string_view text) {
    char name[] = "/tmp/schedext-config-test-XXXXXX";
    int fd = ::mkstemp(name);
    EXPECT_GE(fd, 0);
    ::close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ConfigTest, LoadsFile) {
  TempFile file(EmbeddedDefaultConfig());
  StatusOr<Config> got = LoadConfigFile(file.path());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->profiles[0].name, "default");
}

TEST(ConfigTest, NamesTheFileInErrors) {
  TempFile file("log:\n  level: loud\n" + std::string(kProfiles));
  StatusOr<Config> got = LoadConfigFile(file.path());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            file.path() +
                ":2:10: log.level: must be one of trace, debug, info, warn, error, critical, off "
                "(got \"loud\")");
}

TEST(ConfigTest, ReportsMissingFile) {
  StatusOr<Config> got = LoadConfigFile("/nonexistent-schedext-dir/x.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(),
            "read config \"/nonexistent-schedext-dir/x.yaml\": No such file or directory");
}

TEST(ConfigTest, ReportsUnreadableFile) {
  StatusOr<Config> got = LoadConfigFile("/tmp");  // a directory
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(got.status().message(), "read config \"/tmp\": Is a directory");
}

}  // namespace
}  // namespace schedext::config
