#include "policy/builtin/taint_toleration/taint_toleration.h"

#include <cstdint>
#include <span>
#include <string>
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
  // The first NoSchedule or NoExecute taint of `node` the pod does not
  // tolerate; null when there is none.
  static const model::Taint* FirstUntolerated(const model::PodInfo& pod,
                                              const model::NodeInfo& node) {
    for (const model::Taint& taint : node.taints) {
      if ((taint.effect == model::TaintEffect::kNoSchedule ||
           taint.effect == model::TaintEffect::kNoExecute) &&
          !model::TolerationsTolerate(pod.tolerations, taint)) {
        return &taint;
      }
    }
    return nullptr;
  }

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kNone; }
  const FilterHook* AsFilter() const override { return this; }
  const ScoreHook* AsScorer() const override { return this; }

  // FilterHook
  Verdict Filter(const RequestState& /*state*/, const model::PodInfo& pod,
                 const model::NodeInfo& node) const override {
    return FirstUntolerated(pod, node) == nullptr ? Verdict::Success()
                                                  : Verdict::Unresolvable(kReasonUntolerated);
  }

  // kube-scheduler puts the taint in its reason; here it would split the
  // event's count per taint and need formatting in the per-node loop.
  std::string Detail(const RequestState& /*state*/, const model::PodInfo& pod,
                     const model::NodeInfo& node) const override {
    const model::Taint* taint = FirstUntolerated(pod, node);
    if (taint == nullptr) {
      return {};
    }
    return "untolerated taint {" + std::string(taint->key) + ": " + std::string(taint->value) +
           "}";
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
