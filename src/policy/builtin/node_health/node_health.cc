#include "policy/builtin/node_health/node_health.h"

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
    if (options_.not_ready && !IsTrue(node, "Ready")) {
      return Verdict::Unresolvable("node(s) were not ready");
    }
    if (options_.memory_pressure && IsTrue(node, "MemoryPressure")) {
      return Verdict::Unresolvable("node(s) had memory pressure");
    }
    if (options_.disk_pressure && IsTrue(node, "DiskPressure")) {
      return Verdict::Unresolvable("node(s) had disk pressure");
    }
    if (options_.pid_pressure && IsTrue(node, "PIDPressure")) {
      return Verdict::Unresolvable("node(s) had PID pressure");
    }
    if (options_.network_unavailable && IsTrue(node, "NetworkUnavailable")) {
      return Verdict::Unresolvable("node(s) had network unavailable");
    }
    return Verdict::Success();
  }

 private:
  // The node reports condition `type` with status "True".
  static bool IsTrue(const model::NodeInfo& node, std::string_view type) {
    std::optional<std::string_view> status = node.ConditionStatus(type);
    return status.has_value() && *status == "True";
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
