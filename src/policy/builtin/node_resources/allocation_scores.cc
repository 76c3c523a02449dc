#include "policy/builtin/node_resources/allocation_scores.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/args.h"
#include "policy/builtin/node_resources/resource_args.h"
#include "policy/builtin/node_resources/resource_summary.h"
#include "schedext/model/quantity.h"
#include "schedext/model/resources.h"

namespace schedext::policy {
namespace {

using model::Int128;

constexpr std::string_view kLeastAllocatedName = "LeastAllocated";
constexpr std::string_view kMostAllocatedName = "MostAllocated";
constexpr std::string_view kBalancedAllocationName = "BalancedAllocation";
constexpr std::string_view kRequestedToCapacityRatioName = "RequestedToCapacityRatio";

// requested_to_capacity_ratio.go's maxUtilization, and the factor that maps
// shape scores (config.MaxCustomPriorityScore = 10) onto MaxNodeScore.
constexpr int64_t kMaxUtilization = 100;
constexpr int64_t kShapeScoreScale = kMaxNodeScore / 10;

enum class Strategy {
  kLeastAllocated,
  kMostAllocated,
  kBalancedAllocation,
  kRequestedToCapacityRatio,
};

enum class Kind : uint8_t { kCpu, kMemory, kEphemeralStorage, kScalar };

struct ScoredResource {
  std::string name;
  Kind kind = Kind::kScalar;
  int64_t weight = 1;
};

// PreScore's result: the incoming pod's request of each configured resource,
// in configuration order (kube-scheduler's preScoreState.podRequests).
class PodRequests final : public StateData {
 public:
  std::vector<int64_t> amounts;
};

int64_t ScalarAmount(const model::ResourceList& list, std::string_view name) {
  for (const model::ScalarResource& scalar : list.scalars) {
    if (scalar.name == name) {
      return scalar.amount;
    }
  }
  return 0;
}

std::vector<model::InternedName> Intern(const std::vector<ScoredResource>& resources,
                                       model::NameTable* names) {
  std::vector<model::InternedName> out;
  out.reserve(resources.size());
  for (const ScoredResource& resource : resources) {
    out.push_back(model::InternedName::Of(resource.name, names));
  }
  return out;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return sum;
}

// a · b / c, truncated like Go's integer division, without overflowing the
// product; c > 0 and the result fits (it is at most b when 0 <= a <= c).
// The product is formed in 128 bits only when it overflows 64: otherwise the
// 64-bit division truncates to the same quotient, without __divti3.
int64_t MulDiv(int64_t a, int64_t b, int64_t c) {
  int64_t product = 0;
  if (!__builtin_mul_overflow(a, b, &product)) {
    return product / c;
  }
  return static_cast<int64_t>(Int128(a) * b / c);
}

// requested / allocatable, capped at 1 (balancedResourceScorer).
double Fraction(int64_t requested, int64_t allocatable) {
  const double fraction = static_cast<double>(requested) / static_cast<double>(allocatable);
  return fraction > 1 ? 1 : fraction;
}

// `shape` with its scores mapped from 0..10 onto 0..100, as
// requestedToCapacityRatioScorer does before building the function.
std::vector<ShapePoint> Scaled(std::vector<ShapePoint> shape) {
  for (ShapePoint& point : shape) {
    point.score *= kShapeScoreScale;
  }
  return shape;
}

// One of the four scorers; they differ only in the per-node formula.
class AllocationScorer final : public Policy, public ScoreHook {
 public:
  AllocationScorer(std::string_view name, Strategy strategy, std::vector<ScoredResource> resources,
                   std::vector<ShapePoint> shape, const PolicyContext& context)
      : name_(name),
        strategy_(strategy),
        // BalancedAllocation is built with useRequested: true upstream.
        use_requested_(strategy == Strategy::kBalancedAllocation),
        resources_(std::move(resources)),
        interned_(Intern(resources_, context.names)),
        shape_(Scaled(std::move(shape))),
        summaries_(ResourceSummaries::For(context.handle)) {}

  std::string_view Name() const override { return name_; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kResources; }
  const ScoreHook* AsScorer() const override { return this; }

  // ScoreHook
  bool NeedsNodeUsage() const override { return true; }
  Status PreScore(RequestState& state, const model::PodInfo& pod,
                  NodeSpan /*nodes*/) const override {
    auto requests = std::make_unique<PodRequests>();
    requests->amounts.reserve(resources_.size());
    for (const ScoredResource& resource : resources_) {
      requests->amounts.push_back(PodRequest(pod, resource));
    }
    state.Set(this, std::move(requests));
    return OkStatus();
  }

  int64_t Score(const RequestState& state, const model::PodInfo& pod,
                const model::NodeInfo& node) const override {
    const model::NodeInfo* one[] = {&node};
    int64_t score = 0;
    ScoreNodes(state, pod, one, std::span<int64_t>(&score, 1));
    return score;
  }

  // The one implementation of Score: the state lookup and the dispatch on
  // the strategy once per block, the formula inlined into each node's loop.
  void ScoreNodes(const RequestState& state, const model::PodInfo& pod, NodeSpan nodes,
                  std::span<int64_t> out) const override {
    const PodRequests* requests = state.GetAs<PodRequests>(this);
    switch (strategy_) {
      case Strategy::kLeastAllocated:
        return ScoreEach(nodes, out, [&](const model::NodeInfo& node, const ResourceSummary& s) {
          return WeightedMean(requests, pod, node, s, [](int64_t requested, int64_t allocatable) {
            return requested > allocatable
                       ? 0
                       : MulDiv(allocatable - requested, kMaxNodeScore, allocatable);
          });
        });
      case Strategy::kMostAllocated:
        // `requested` may exceed `allocatable` because of the scoring defaults.
        return ScoreEach(nodes, out, [&](const model::NodeInfo& node, const ResourceSummary& s) {
          return WeightedMean(requests, pod, node, s, [](int64_t requested, int64_t allocatable) {
            return MulDiv(std::min(requested, allocatable), kMaxNodeScore, allocatable);
          });
        });
      case Strategy::kRequestedToCapacityRatio:
        return ScoreEach(nodes, out, [&](const model::NodeInfo& node, const ResourceSummary& s) {
          return RatioScore(requests, pod, node, s);
        });
      case Strategy::kBalancedAllocation:
        return ScoreEach(nodes, out, [&](const model::NodeInfo& node, const ResourceSummary& s) {
          return BalancedScore(requests, pod, node, s);
        });
    }
  }

 private:
  // out[i] = node_score(*nodes[i], its summary); 0 for a node without usage,
  // which the pipeline never passes (NeedsNodeUsage).
  template <typename NodeScore>
  void ScoreEach(NodeSpan nodes, std::span<int64_t> out, NodeScore node_score) const {
    for (size_t i = 0; i < nodes.size(); ++i) {
      const model::NodeInfo& node = *nodes[i];
      out[i] = node.usage == nullptr ? 0 : node_score(node, summaries_.Of(node));
    }
  }

  // The pod's request of `resource` (calculatePodResourceRequest).
  int64_t PodRequest(const model::PodInfo& pod, const ScoredResource& resource) const {
    switch (resource.kind) {
      case Kind::kCpu:
        return use_requested_ ? pod.requests.milli_cpu : pod.placing_milli_cpu;
      case Kind::kMemory:
        return use_requested_ ? pod.requests.memory : pod.placing_memory;
      case Kind::kEphemeralStorage:
        return pod.requests.ephemeral_storage;
      case Kind::kScalar:
        break;
    }
    return ScalarAmount(pod.requests, resource.name);
  }

  // Calls fn(requested, allocatable, weight) for each configured resource
  // scored on `node`, in configuration order, where requested includes the
  // pod (calculateResourceAllocatableRequest, then score()'s `alloc != 0`).
  // cpu, memory and ephemeral-storage come from the node's resource
  // `summary`, scalar resources from the node itself.
  template <typename Fn>
  void ForEachScored(const PodRequests* requests, const model::PodInfo& pod,
                     const model::NodeInfo& node, const ResourceSummary& summary, Fn&& fn) const {
    const int64_t used_cpu = use_requested_ ? summary.requested_cpu : summary.scoring_cpu;
    const int64_t used_memory = use_requested_ ? summary.requested_memory : summary.scoring_memory;
    for (size_t i = 0; i < resources_.size(); ++i) {
      const ScoredResource& resource = resources_[i];
      const int64_t pod_request =
          requests != nullptr ? requests->amounts[i] : PodRequest(pod, resource);
      int64_t allocatable = 0;
      int64_t used = 0;
      switch (resource.kind) {
        case Kind::kCpu:
          allocatable = summary.allocatable_cpu;
          used = used_cpu;
          break;
        case Kind::kMemory:
          allocatable = summary.allocatable_memory;
          used = used_memory;
          break;
        case Kind::kEphemeralStorage:
          allocatable = summary.allocatable_ephemeral_storage;
          used = summary.requested_ephemeral_storage;
          break;
        case Kind::kScalar:
          // A scalar resource the pod does not request is not scored.
          if (pod_request == 0) {
            continue;
          }
          allocatable = node.allocatable.Get(interned_[i]);
          used = node.usage->requested.Get(interned_[i]);
          break;
      }
      // Zero allocatable is skipped as upstream does; a negative one (never
      // valid) too, so the divisions below always have a positive divisor.
      if (allocatable <= 0) {
        continue;
      }
      fn(SaturatingAdd(used, pod_request), allocatable, resource.weight);
    }
  }

  // leastResourceScorer / mostResourceScorer: Σ w·score / Σ w, truncated.
  template <typename ResourceScore>
  int64_t WeightedMean(const PodRequests* requests, const model::PodInfo& pod,
                       const model::NodeInfo& node, const ResourceSummary& summary,
                       ResourceScore resource_score) const {
    int64_t node_score = 0;
    int64_t weight_sum = 0;
    ForEachScored(requests, pod, node, summary,
                  [&](int64_t requested, int64_t allocatable, int64_t weight) {
                    node_score += resource_score(requested, allocatable) * weight;
                    weight_sum += weight;
                  });
    return weight_sum == 0 ? 0 : node_score / weight_sum;
  }

  // helper.BuildBrokenLinearFunction over the scaled shape.
  int64_t BrokenLinear(int64_t p) const {
    for (size_t i = 0; i < shape_.size(); ++i) {
      if (p <= shape_[i].utilization) {
        if (i == 0) {
          return shape_[0].score;
        }
        const ShapePoint& lo = shape_[i - 1];
        const ShapePoint& hi = shape_[i];
        return lo.score +
               (hi.score - lo.score) * (p - lo.utilization) / (hi.utilization - lo.utilization);
      }
    }
    return shape_.back().score;
  }

  // buildRequestedToCapacityRatioScorerFunction: only resources with a
  // positive score count towards the weights; the mean is rounded.
  int64_t RatioScore(const PodRequests* requests, const model::PodInfo& pod,
                     const model::NodeInfo& node, const ResourceSummary& summary) const {
    int64_t node_score = 0;
    int64_t weight_sum = 0;
    ForEachScored(requests, pod, node, summary,
                  [&](int64_t requested, int64_t allocatable, int64_t weight) {
                    const int64_t resource_score =
                        requested > allocatable
                            ? BrokenLinear(kMaxUtilization)
                            : BrokenLinear(MulDiv(requested, kMaxUtilization, allocatable));
                    if (resource_score > 0) {
                      node_score += resource_score * weight;
                      weight_sum += weight;
                    }
                  });
    if (weight_sum == 0) {
      return 0;
    }
    return static_cast<int64_t>(
        std::round(static_cast<double>(node_score) / static_cast<double>(weight_sum)));
  }

  // balancedResourceScorer, in the same floating-point steps and order.
  int64_t BalancedScore(const PodRequests* requests, const model::PodInfo& pod,
                        const model::NodeInfo& node, const ResourceSummary& summary) const {
    int64_t count = 0;
    double total = 0;
    double first = 0;
    double second = 0;
    ForEachScored(requests, pod, node, summary,
                  [&](int64_t requested, int64_t allocatable, int64_t) {
                    const double fraction = Fraction(requested, allocatable);
                    total += fraction;
                    if (count == 0) {
                      first = fraction;
                    } else if (count == 1) {
                      second = fraction;
                    }
                    ++count;
                  });
    double std_dev = 0;
    if (count == 2) {
      std_dev = std::fabs((first - second) / 2);
    } else if (count > 2) {
      // A second pass instead of a vector of fractions keeps Score
      // allocation-free; the fractions come out bit-identical.
      const double mean = total / static_cast<double>(count);
      double sum = 0;
      ForEachScored(requests, pod, node, summary,
                    [&](int64_t requested, int64_t allocatable, int64_t) {
                      const double fraction = Fraction(requested, allocatable);
                      sum = sum + (fraction - mean) * (fraction - mean);
                    });
      std_dev = std::sqrt(sum / static_cast<double>(count));
    }
    return static_cast<int64_t>((1 - std_dev) * static_cast<double>(kMaxNodeScore));
  }

  const std::string_view name_;  // a literal
  const Strategy strategy_;
  // cpu and memory from the plain requests instead of the scoring ones.
  const bool use_requested_;
  const std::vector<ScoredResource> resources_;
  // resources_[i].name interned: what the per-node loop looks up.
  const std::vector<model::InternedName> interned_;
  const std::vector<ShapePoint> shape_;  // scores scaled to 0..100
  // Shared with the profile's other resource policies (resource_summary.h).
  const ResourceSummaries summaries_;
};

Kind KindOf(std::string_view name) {
  if (name == model::kResourceCpu) {
    return Kind::kCpu;
  }
  if (name == model::kResourceMemory) {
    return Kind::kMemory;
  }
  if (name == model::kResourceEphemeralStorage) {
    return Kind::kEphemeralStorage;
  }
  return Kind::kScalar;  // the only other names ReadResourceWeights admits
}

StatusOr<std::unique_ptr<Policy>> NewScorer(std::string_view name, Strategy strategy,
                                            const nlohmann::json& args,
                                            const PolicyContext& context) {
  const bool with_shape = strategy == Strategy::kRequestedToCapacityRatio;
  SCHEDEXT_ASSIGN_OR_RETURN(ArgsReader reader,
                            with_shape
                                ? ArgsReader::Make(args, context.args_path, {"resources", "shape"})
                                : ArgsReader::Make(args, context.args_path, {"resources"}));
  SCHEDEXT_ASSIGN_OR_RETURN(std::vector<ResourceWeight> weights,
                            ReadResourceWeights(reader, strategy == Strategy::kBalancedAllocation
                                                            ? WeightRule::kMustBeOne
                                                            : WeightRule::kOneToHundred));
  std::vector<ShapePoint> shape;
  if (with_shape) {
    SCHEDEXT_ASSIGN_OR_RETURN(shape, ReadShape(reader));
  }
  std::vector<ScoredResource> resources;
  resources.reserve(weights.size());
  for (ResourceWeight& weight : weights) {
    const Kind kind = KindOf(weight.name);
    resources.push_back({std::move(weight.name), kind, weight.weight});
  }
  return std::unique_ptr<Policy>(std::make_unique<AllocationScorer>(
      name, strategy, std::move(resources), std::move(shape), context));
}

}  // namespace

StatusOr<std::unique_ptr<Policy>> NewLeastAllocated(const nlohmann::json& args,
                                                    const PolicyContext& context) {
  return NewScorer(kLeastAllocatedName, Strategy::kLeastAllocated, args, context);
}

StatusOr<std::unique_ptr<Policy>> NewMostAllocated(const nlohmann::json& args,
                                                   const PolicyContext& context) {
  return NewScorer(kMostAllocatedName, Strategy::kMostAllocated, args, context);
}

StatusOr<std::unique_ptr<Policy>> NewBalancedAllocation(const nlohmann::json& args,
                                                        const PolicyContext& context) {
  return NewScorer(kBalancedAllocationName, Strategy::kBalancedAllocation, args, context);
}

StatusOr<std::unique_ptr<Policy>> NewRequestedToCapacityRatio(const nlohmann::json& args,
                                                              const PolicyContext& context) {
  return NewScorer(kRequestedToCapacityRatioName, Strategy::kRequestedToCapacityRatio, args,
                   context);
}

}  // namespace schedext::policy
