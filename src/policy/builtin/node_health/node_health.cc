#include "policy/builtin/node_health/node_health.h"

#include <cstdint>
#include <optional>
#include <string_view>

#include "policy/args.h"
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
  explicit NodeHealth(const NodeHealthOptions& options) : options_(options) {}

  std::string_view Name() const override { return kName; }
  const FilterHook* AsFilter() const override { return this; }

  // FilterHook
  Verdict Filter(const RequestState& /*state*/, const model::PodInfo& pod,
                 const model::NodeInfo& node) const override {
    if (options_.unschedulable && node.unschedulable &&
        !model::TolerationsTolerate(pod.tolerations, kUnschedulableTaint)) {
      return Verdict::Unresolvable("node(s) were unschedulable");
    }
    const uint32_t is_true = TrueConditions(node);
    if (options_.not_ready && (is_true & kReady) == 0) {
      return Verdict::Unresolvable("node(s) were not ready");
    }
    if (options_.memory_pressure && (is_true & kMemoryPressure) != 0) {
      return Verdict::Unresolvable("node(s) had memory pressure");
    }
    if (options_.disk_pressure && (is_true & kDiskPressure) != 0) {
      return Verdict::Unresolvable("node(s) had disk pressure");
    }
    if (options_.pid_pressure && (is_true & kPidPressure) != 0) {
      return Verdict::Unresolvable("node(s) had PID pressure");
    }
    if (options_.network_unavailable && (is_true & kNetworkUnavailable) != 0) {
      return Verdict::Unresolvable("node(s) had network unavailable");
    }
    return Verdict::Success();
  }

 private:
  static constexpr uint32_t kReady = 1;
  static constexpr uint32_t kMemoryPressure = 2;
  static constexpr uint32_t kDiskPressure = 4;
  static constexpr uint32_t kPidPressure = 8;
  static constexpr uint32_t kNetworkUnavailable = 16;

  // The conditions this filter reads, as a bit each.
  static uint32_t ConditionBit(std::string_view type) {
    // The five names differ in length, so the length picks the candidate:
    // one comparison per condition instead of one per (condition, name) — the
    // per-node loop spent most of its time in memcmp before.
    switch (type.size()) {
      case 5:
        return type == "Ready" ? kReady : 0;
      case 14:
        return type == "MemoryPressure" ? kMemoryPressure : 0;
      case 12:
        return type == "DiskPressure" ? kDiskPressure : 0;
      case 11:
        return type == "PIDPressure" ? kPidPressure : 0;
      case 18:
        return type == "NetworkUnavailable" ? kNetworkUnavailable : 0;
      default:
        return 0;
    }
  }

  // Bits of the conditions the node reports with status "True", in one pass;
  // a type reported twice counts as its first report (as ConditionStatus).
  static uint32_t TrueConditions(const model::NodeInfo& node) {
    uint32_t seen = 0;
    uint32_t is_true = 0;
    for (const model::NodeCondition& condition : node.conditions) {
      const uint32_t bit = ConditionBit(condition.type);
      if (bit == 0 || (seen & bit) != 0) {
        continue;
      }
      seen |= bit;
      if (condition.status == "True") {
        is_true |= bit;
      }
    }
    return is_true;
  }

  const NodeHealthOptions options_;
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
