#include "policy/builtin/taint_toleration/taint_toleration.h"

#include <cstdint>
#include <span>
#include <string_view>

#include "policy/args.h"
#include "schedext/model/selectors.h"

namespace schedext::policy {
namespace {

constexpr std::string_view kName = "TaintToleration";
constexpr std::string_view kReasonUntolerated = "node(s) had untolerated taint";

// Kubernetes' TaintToleration plugin: the filter rejects nodes with a
// NoSchedule or NoExecute taint the pod does not tolerate; the score counts
// untolerated PreferNoSchedule taints, fewer being better.
class TaintToleration final : public Policy, public FilterHook, public ScoreHook {
 public:
  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kNone; }
  const FilterHook* AsFilter() const override { return this; }
  const ScoreHook* AsScorer() const override { return this; }

  // FilterHook
  Verdict Filter(const RequestState& /*state*/, const model::PodInfo& pod,
                 const model::NodeInfo& node) const override {
    for (const model::Taint& taint : node.taints) {
      if (taint.effect != model::TaintEffect::kNoSchedule &&
          taint.effect != model::TaintEffect::kNoExecute) {
        continue;
      }
      if (!model::TolerationsTolerate(pod.tolerations, taint)) {
        return Verdict::Unresolvable(kReasonUntolerated);
      }
    }
    return Verdict::Success();
  }

  // ScoreHook
  int64_t Score(const RequestState& /*state*/, const model::PodInfo& pod,
                const model::NodeInfo& node) const override {
    int64_t count = 0;
    for (const model::Taint& taint : node.taints) {
      if (taint.effect == model::TaintEffect::kPreferNoSchedule &&
          !ToleratedForScoring(pod.tolerations, taint)) {
        ++count;
      }
    }
    return count;
  }
  void Normalize(const RequestState& /*state*/, std::span<int64_t> scores) const override {
    NormalizeToMax(scores, /*reverse=*/true);
  }

 private:
  // As Kubernetes' PreScore: only tolerations whose effect is empty or
  // PreferNoSchedule count. Filtering inline instead of in PreScore keeps the
  // per-request state (and its allocation) away.
  static bool ToleratedForScoring(std::span<const model::Toleration> tolerations,
                                  const model::Taint& taint) {
    for (const model::Toleration& toleration : tolerations) {
      if (toleration.effect.has_value() &&
          *toleration.effect != model::TaintEffect::kPreferNoSchedule) {
        continue;
      }
      if (model::Tolerates(toleration, taint)) {
        return true;
      }
    }
    return false;
  }
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> NewTaintToleration(const nlohmann::json& args,
                                                     const PolicyContext& context) {
  SCHEDEXT_RETURN_IF_ERROR(ArgsReader::Make(args, context.args_path, {}).status());
  return std::unique_ptr<Policy>(std::make_unique<TaintToleration>());
}

}  // namespace schedext::policy
