#include "policy/builtin/node_health/node_health.h"

#include <cassert>
#include <cstdint>
#include <optional>
#include <string_view>

#include "policy/args.h"
#include "schedext/model/node_info.h"
#include "schedext/model/selectors.h"

namespace schedext::policy {
namespace {

constexpr std::string_view kName = "NodeHealth";

// The taint a pod tolerates to run on a cordoned node (Kubernetes'
// NodeUnschedulable plugin checks this instead of spec.unschedulable alone).
constexpr model::Taint kUnschedulableTaint{"node.kubernetes.io/unschedulable", "",
                                           model::TaintEffect::kNoSchedule};

struct NodeHealthOptions {
  bool unschedulable = true;
  bool not_ready = true;
  bool memory_pressure = true;
  bool disk_pressure = true;
  bool pid_pressure = true;
  bool network_unavailable = true;
};

// Rejects cordoned, not-ready and pressured nodes; each check can be disabled.
class NodeHealth final : public Policy, public FilterHook {
 public:
  explicit NodeHealth(const NodeHealthOptions& options)
      : options_(options),
        needs_true_(options.not_ready ? model::kConditionReady : 0),
        needs_false_((options.memory_pressure ? model::kConditionMemoryPressure : 0) |
                     (options.disk_pressure ? model::kConditionDiskPressure : 0) |
                     (options.pid_pressure ? model::kConditionPidPressure : 0) |
                     (options.network_unavailable ? model::kConditionNetworkUnavailable : 0)) {}

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kNone; }
  const FilterHook* AsFilter() const override { return this; }

  // FilterHook
  Verdict Filter(const RequestState& /*state*/, const model::PodInfo& pod,
                 const model::NodeInfo& node) const override {
    if (options_.unschedulable && node.unschedulable &&
        !model::TolerationsTolerate(pod.tolerations, kUnschedulableTaint)) {
      return Verdict::Unresolvable("node(s) were unschedulable");
    }
    // One byte of the NodeInfo instead of the condition strings, which sit in
    // other cache lines. Debug builds check that whoever filled the conditions
    // also updated the summary.
    assert(node.condition_summary == model::SummarizeConditions(node.conditions));
    const uint32_t is_true = node.condition_summary.is_true;
    // A healthy node (nearly all of them) passes on one test; the checks
    // below run, in order, only to name the reason of a rejected one.
    if ((is_true & (needs_true_ | needs_false_)) == needs_true_) {
      return Verdict::Success();
    }
    if (options_.not_ready && (is_true & model::kConditionReady) == 0) {
      return Verdict::Unresolvable("node(s) were not ready");
    }
    if (options_.memory_pressure && (is_true & model::kConditionMemoryPressure) != 0) {
      return Verdict::Unresolvable("node(s) had memory pressure");
    }
    if (options_.disk_pressure && (is_true & model::kConditionDiskPressure) != 0) {
      return Verdict::Unresolvable("node(s) had disk pressure");
    }
    if (options_.pid_pressure && (is_true & model::kConditionPidPressure) != 0) {
      return Verdict::Unresolvable("node(s) had PID pressure");
    }
    if (options_.network_unavailable && (is_true & model::kConditionNetworkUnavailable) != 0) {
      return Verdict::Unresolvable("node(s) had network unavailable");
    }
    return Verdict::Success();
  }

 private:
  const NodeHealthOptions options_;
  // ConditionBit masks of the enabled checks: conditions that must be "True"
  // (Ready) and those that must not (the pressures, NetworkUnavailable).
  const uint32_t needs_true_;
  const uint32_t needs_false_;
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> NewNodeHealth(const nlohmann::json& args,
                                                const PolicyContext& context) {
  SCHEDEXT_ASSIGN_OR_RETURN(
      ArgsReader reader, ArgsReader::Make(args, context.args_path,
                                          {"unschedulable", "notReady", "memoryPressure",
                                           "diskPressure", "pidPressure", "networkUnavailable"}));
  NodeHealthOptions options;
  SCHEDEXT_ASSIGN_OR_RETURN(options.unschedulable, reader.Bool("unschedulable", true));
  SCHEDEXT_ASSIGN_OR_RETURN(options.not_ready, reader.Bool("notReady", true));
  SCHEDEXT_ASSIGN_OR_RETURN(options.memory_pressure, reader.Bool("memoryPressure", true));
  SCHEDEXT_ASSIGN_OR_RETURN(options.disk_pressure, reader.Bool("diskPressure", true));
  SCHEDEXT_ASSIGN_OR_RETURN(options.pid_pressure, reader.Bool("pidPressure", true));
  SCHEDEXT_ASSIGN_OR_RETURN(options.network_unavailable, reader.Bool("networkUnavailable", true));
  return std::unique_ptr<Policy>(std::make_unique<NodeHealth>(options));
}

}  // namespace schedext::policy
