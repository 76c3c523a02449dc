// NodeLoad's args: defaults, and a clear error naming the field for each bad
// value.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/builtin/nodeload/nodeload.h"

namespace schedext::policy::nodeload {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

PolicyContext Context() {
  PolicyContext context;
  context.args_path = "profiles[0].policies[2].args";
  return context;
}

TEST(NodeLoadArgsTest, DefaultsAreTrimaransAndNodeExporters) {
  StatusOr<NodeLoadSpec> spec =
      ParseNodeLoadArgs(json::parse(R"({"prometheus":{"url":"http://p:9090"}})"), Context());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->mode, Mode::kTargetLoadPacking);
  EXPECT_EQ(spec->prometheus.url, "http://p:9090");
  EXPECT_EQ(spec->prometheus.timeout, milliseconds(5000));
  EXPECT_EQ(spec->node_label, "instance");
  EXPECT_TRUE(spec->trim_port);
  EXPECT_EQ(spec->poll_interval, milliseconds(15000));
  EXPECT_EQ(spec->max_age, milliseconds(60000));
  EXPECT_EQ(spec->bind_settle, milliseconds(60000));
  EXPECT_EQ(spec->neutral_score, 50);
  EXPECT_FALSE(spec->hot_cpu_percent.has_value());
  EXPECT_DOUBLE_EQ(spec->target_utilization, 40);
  EXPECT_EQ(spec->default_cpu_request_millis, 1000);
  EXPECT_DOUBLE_EQ(spec->requests_multiplier, 1.5);
  EXPECT_EQ(spec->queries.cpu,
            "100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{mode=\"idle\"}[2m])))");
  EXPECT_EQ(spec->queries.memory,
            "100 * (1 - sum by (instance) (node_memory_MemAvailable_bytes) / sum by (instance) "
            "(node_memory_MemTotal_bytes))");
  EXPECT_EQ(spec->queries.cpu_stddev, "");
  EXPECT_EQ(spec->queries.memory_stddev, "");
}

TEST(NodeLoadArgsTest, RiskBalancingModeQueriesAverageAndDeviation) {
  StatusOr<NodeLoadSpec> spec = ParseNodeLoadArgs(
      json::parse(R"({"mode":"LoadVariationRiskBalancing","nodeLabel":"node",
                      "prometheus":{"url":"http://p:9090"},
                      "safeVarianceMargin":2,"safeVarianceSensitivity":0.5,
                      "pollIntervalSeconds":0.5,"maxAgeSeconds":3,"bindSettleSeconds":0})"),
      Context());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->mode, Mode::kLoadVariationRiskBalancing);
  EXPECT_DOUBLE_EQ(spec->safe_variance_margin, 2);
  EXPECT_DOUBLE_EQ(spec->safe_variance_sensitivity, 0.5);
  EXPECT_EQ(spec->poll_interval, milliseconds(500));
  EXPECT_EQ(spec->max_age, milliseconds(3000));
  EXPECT_EQ(spec->bind_settle, milliseconds(0));
  const std::string cpu =
      "100 * (1 - avg by (node) (rate(node_cpu_seconds_total{mode=\"idle\"}[2m])))";
  EXPECT_EQ(spec->queries.cpu, "avg_over_time((" + cpu + ")[15m:1m])");
  EXPECT_EQ(spec->queries.cpu_stddev, "stddev_over_time((" + cpu + ")[15m:1m])");
  EXPECT_NE(spec->queries.memory_stddev.find("stddev_over_time((100 * (1 - sum by (node)"),
            std::string::npos);
}

TEST(NodeLoadArgsTest, EverythingSet) {
  StatusOr<NodeLoadSpec> spec = ParseNodeLoadArgs(json::parse(R"({
      "mode": "TargetLoadPacking",
      "prometheus": {"url": "https://p.example.com/prom", "caFile": "/dev/null",
                     "bearerTokenFile": "/dev/null", "timeoutSeconds": 2.5},
      "queries": {"cpu": "my_cpu", "memory": "my_memory"},
      "nodeLabel": "kubernetes_node", "trimPort": false,
      "pollIntervalSeconds": 10, "maxAgeSeconds": 30, "bindSettleSeconds": 20,
      "neutralScore": 0, "hotCpuPercent": 90, "hotMemoryPercent": 95.5,
      "targetUtilization": 70, "defaultCpuRequest": "500m", "defaultRequestsMultiplier": 2})"),
                                                  Context());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->prometheus.ca_file, "/dev/null");
  EXPECT_EQ(spec->prometheus.bearer_token_file, "/dev/null");
  EXPECT_EQ(spec->prometheus.timeout, milliseconds(2500));
  EXPECT_EQ(spec->queries.cpu, "my_cpu");
  EXPECT_EQ(spec->queries.memory, "my_memory");
  EXPECT_EQ(spec->node_label, "kubernetes_node");
  EXPECT_FALSE(spec->trim_port);
  EXPECT_EQ(spec->max_age, milliseconds(30000));
  EXPECT_EQ(spec->bind_settle, milliseconds(20000));
  EXPECT_EQ(spec->neutral_score, 0);
  EXPECT_DOUBLE_EQ(*spec->hot_cpu_percent, 90);
  EXPECT_DOUBLE_EQ(*spec->hot_memory_percent, 95.5);
  EXPECT_DOUBLE_EQ(spec->target_utilization, 70);
  EXPECT_EQ(spec->default_cpu_request_millis, 500);
  EXPECT_DOUBLE_EQ(spec->requests_multiplier, 2);
}

TEST(NodeLoadArgsTest, BadValuesNameTheField) {
  const std::string p = "profiles[0].policies[2].args";
  struct Case {
    std::string args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({})", p + ".prometheus: required (an object with at least url)"},
      {R"({"prometheus":{}})", p + ".prometheus.url: required"},
      {R"({"prometheus":{"url":"p:9090"}})",
       p + ".prometheus.url: \"p:9090\" must be an http:// or https:// URL"},
      {R"({"prometheus":{"url":"http://p:9090","user":"x"}})",
       p + ".prometheus.user: unknown field (known: url, bearerTokenFile, caFile, "
           "timeoutSeconds)"},
      {R"({"prometheus":{"url":"http://p:9090","caFile":"/dev/null"}})",
       p + ".prometheus.caFile: needs an https:// url"},
      {R"({"prometheus":{"url":"https://p","caFile":"/nonexistent/ca.crt"}})",
       p + ".prometheus.caFile: cannot read \"/nonexistent/ca.crt\""},
      {R"({"prometheus":{"url":"http://p","bearerTokenFile":"/nonexistent/token"}})",
       p + ".prometheus.bearerTokenFile: cannot read \"/nonexistent/token\""},
      {R"({"prometheus":{"url":"http://p","timeoutSeconds":0}})",
       p + ".prometheus.timeoutSeconds: must be above 0 and at most 300 seconds, got 0"},
      {R"({"prometheus":{"url":"http://p"},"mode":"Packing"})",
       p + ".mode: must be \"TargetLoadPacking\" or \"LoadVariationRiskBalancing\""},
      {R"({"prometheus":{"url":"http://p"},"targetUtilization":100})",
       p + ".targetUtilization: must be in (0, 100), got 100"},
      {R"({"prometheus":{"url":"http://p"},"targetUtilization":0})",
       p + ".targetUtilization: must be in (0, 100), got 0"},
      {R"({"prometheus":{"url":"http://p"},"defaultCpuRequest":"1 core"})",
       p + ".defaultCpuRequest: cpu: invalid quantity \"1 core\""},
      {R"({"prometheus":{"url":"http://p"},"defaultRequestsMultiplier":0.5})",
       p + ".defaultRequestsMultiplier: must be in [1, 1000], got 0.5"},
      {R"({"prometheus":{"url":"http://p"},"safeVarianceMargin":1})",
       p + ".safeVarianceMargin: only applies to mode LoadVariationRiskBalancing"},
      {R"({"prometheus":{"url":"http://p"},"mode":"LoadVariationRiskBalancing",
           "targetUtilization":50})",
       p + ".targetUtilization: only applies to mode TargetLoadPacking"},
      {R"({"prometheus":{"url":"http://p"},"mode":"LoadVariationRiskBalancing",
           "safeVarianceSensitivity":-1})",
       p + ".safeVarianceSensitivity: must be in [0, 100], got -1"},
      {R"({"prometheus":{"url":"http://p"},"queries":{"cpuStddev":"x"}})",
       p + ".queries.cpuStddev: only applies to mode LoadVariationRiskBalancing"},
      {R"({"prometheus":{"url":"http://p"},"queries":{"cpu":" "}})",
       p + ".queries.cpu: must not be empty"},
      {R"({"prometheus":{"url":"http://p"},"queries":{"disk":"x"}})",
       p + ".queries.disk: unknown field (known: cpu, memory, cpuStddev, memoryStddev)"},
      {R"({"prometheus":{"url":"http://p"},"nodeLabel":"kubernetes.io/hostname"})",
       p + ".nodeLabel: \"kubernetes.io/hostname\" is not a Prometheus label name "
           "([a-zA-Z_][a-zA-Z0-9_]*)"},
      {R"({"prometheus":{"url":"http://p"},"pollIntervalSeconds":-1})",
       p + ".pollIntervalSeconds: must be above 0 and at most 3600 seconds, got -1"},
      {R"({"prometheus":{"url":"http://p"},"pollIntervalSeconds":30,"maxAgeSeconds":10})",
       p + ".maxAgeSeconds: must not be below pollIntervalSeconds (every sample would be "
           "stale before the next poll)"},
      {R"({"prometheus":{"url":"http://p"},"neutralScore":101})",
       p + ".neutralScore: must be between 0 and 100"},
      {R"({"prometheus":{"url":"http://p"},"hotCpuPercent":0})",
       p + ".hotCpuPercent: must be in (0, 100], got 0"},
      {R"({"prometheus":{"url":"http://p"},"hotMemoryPercent":"90%"})",
       p + ".hotMemoryPercent: must be a number"},
      {R"({"prometheus":{"url":"http://p"},"trimPort":"yes"})",
       p + ".trimPort: must be a boolean"},
      {R"({"prometheus":{"url":"http://p"},"interval":5})",
       p + ".interval: unknown field (known: mode, prometheus, queries, nodeLabel, trimPort, "
           "pollIntervalSeconds, maxAgeSeconds, bindSettleSeconds, neutralScore, "
           "hotCpuPercent, hotMemoryPercent, targetUtilization, defaultCpuRequest, "
           "defaultRequestsMultiplier, safeVarianceMargin, safeVarianceSensitivity)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    StatusOr<NodeLoadSpec> spec = ParseNodeLoadArgs(json::parse(c.args), Context());
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(spec.status().message(), c.message);
  }
}

}  // namespace
}  // namespace schedext::policy::nodeload
