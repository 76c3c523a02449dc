// NodeLoad's args (nodeload.h lists them) as a validated NodeLoadSpec, with
// the default PromQL queries of each mode. Called by NewNodeLoad (nodeload.cc)
// when a profile is built; the error names the field under context.args_path.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODELOAD_ARGS_H_
#define SCHEDEXT_POLICY_BUILTIN_NODELOAD_ARGS_H_

#include <chrono>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "policy/builtin/nodeload/load_poller.h"
#include "policy/builtin/nodeload/prometheus.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy::nodeload {

enum class Mode { kTargetLoadPacking, kLoadVariationRiskBalancing };

// The validated args.
struct NodeLoadSpec {
  Mode mode = Mode::kTargetLoadPacking;
  PrometheusEndpoint prometheus;
  LoadQueries queries;  // defaults filled in
  std::string node_label = "instance";
  bool trim_port = true;
  std::chrono::milliseconds poll_interval{15000};
  std::chrono::milliseconds max_age{60000};
  std::chrono::milliseconds bind_settle{60000};
  int64_t neutral_score = 50;
  std::optional<double> hot_cpu_percent;
  std::optional<double> hot_memory_percent;
  double target_utilization = 40;
  int64_t default_cpu_request_millis = 1000;
  double requests_multiplier = 1.5;
  double safe_variance_margin = 1;
  double safe_variance_sensitivity = 1;
};

StatusOr<NodeLoadSpec> ParseNodeLoadArgs(const nlohmann::json& args,
                                         const PolicyContext& context);

// The default queries for `mode`, aggregating by `node_label`.
LoadQueries DefaultQueries(Mode mode, const std::string& node_label);

}  // namespace schedext::policy::nodeload

#endif  // SCHEDEXT_POLICY_BUILTIN_NODELOAD_ARGS_H_
