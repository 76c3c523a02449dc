// HamiVgpu's per-node hooks: Filter, Score and both, for one vGPU pod over
// N nodes of 8 GPUs (HAMi's text register form, tenants counted on some
// devices as the cluster cache counts them), the nodes summarized as the
// cache summarizes them. Names: <hook>/<nodes>; the ns_per_node counter is
// what the 0.5 ms / 5,000-node target divides into (100 ns per node for the
// whole request). FilterAndScoreDecoded reads the same nodes without their
// summaries: what a pod with type/UUID rules, or a full-mode node from the
// request body, costs.
#include <benchmark/benchmark.h>

#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/builtin/hami_vgpu/accounting.h"
#include "policy/builtin/hami_vgpu/hami_vgpu.h"
#include "policy/builtin/hami_vgpu/protocol.h"
#include "schedext/policy/node_summary.h"
#include "schedext/policy/policy_host.h"

namespace schedext::bench {
namespace {

using policy::hami::kAllocatedAnnotation;
using policy::hami::kRegisterAnnotation;

struct Cluster {
  std::deque<std::string> text;  // what the views point into
  std::deque<model::NodeUsage> usages;
  std::vector<model::NodeInfo> nodes;
  std::vector<model::NodeInfo> decoded;  // the same nodes without summaries
  model::PodInfo pod;
  policy::PolicyHost host;
  std::unique_ptr<policy::Policy> policy;

  std::string_view Keep(std::string s) { return text.emplace_back(std::move(s)); }
};

const Cluster& Prepare(size_t n) {
  static std::deque<std::pair<size_t, std::unique_ptr<Cluster>>> built;
  for (const auto& [size, cluster] : built) {
    if (size == n) return *cluster;
  }
  auto c = std::make_unique<Cluster>();
  policy::PolicyContext context;
  context.handle = &c->host;
  StatusOr<std::unique_ptr<policy::Policy>> made =
      policy::NewHamiVgpu(nlohmann::json::object(), context);
  c->policy = std::move(made).value();
  policy::hami::VgpuAccounting accounting;
  c->nodes.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string devices;
    for (int d = 0; d < 8; ++d) {
      devices += "GPU-" + std::to_string(i) + "-" + std::to_string(d) +
                 "-5c87-89ac-b1a6-7b53aa24b0ec,10,81920,100,NVIDIA-A100-SXM4-80GB," +
                 std::to_string(d / 4) + ",true," + std::to_string(d) + ",hami-core:";
    }
    model::NodeInfo node;
    node.name = c->Keep("node-" + std::to_string(i));
    node.annotations.Set(kRegisterAnnotation, c->Keep(devices));
    std::shared_ptr<const model::NodeState> state;
    for (size_t t = 0; t < i % 9; ++t) {
      model::PodInfo tenant;
      tenant.annotations.Set(
          kAllocatedAnnotation,
          c->Keep("GPU-" + std::to_string(i) + "-" + std::to_string(t % 8) +
                  "-5c87-89ac-b1a6-7b53aa24b0ec,NVIDIA," + std::to_string(9000 * (t % 3 + 1)) +
                  ",25:;"));
      state = accounting.AddPod(node.name, state, tenant, +1);
    }
    model::NodeUsage& usage = c->usages.emplace_back();
    usage.states.Set(0, std::move(state));
    node.usage = &usage;
    c->decoded.push_back(node);
    policy::WriteNodeSummaries(c->host.summaries(), node);
    c->nodes.push_back(std::move(node));
  }
  model::ContainerResources container;
  container.limits.Set("nvidia.com/gpu", 1);
  container.limits.Set("nvidia.com/gpumem", 20000);
  container.limits.Set("nvidia.com/gpucores", 30);
  c->pod.containers.push_back(container);
  c->pod.FinalizeRequests();
  built.emplace_back(n, std::move(c));
  return *built.back().second;
}

void Run(benchmark::State& state, bool filter, bool score, bool summarized = true) {
  const size_t n = static_cast<size_t>(state.range(0));
  const Cluster& c = Prepare(n);
  const std::vector<model::NodeInfo>& nodes = summarized ? c.nodes : c.decoded;
  if (summarized && !nodes.front().has_summary()) {
    state.SkipWithError("the nodes were not summarized");
    return;
  }
  size_t passed = 0;
  for (auto _ : state) {
    policy::RequestState rs;
    benchmark::DoNotOptimize(c.policy->AsFilter()->PreFilter(rs, c.pod).ok());
    passed = 0;
    int64_t sum = 0;
    for (const model::NodeInfo& node : nodes) {
      if (filter) passed += c.policy->AsFilter()->Filter(rs, c.pod, node).ok() ? 1 : 0;
      if (score) sum += c.policy->AsScorer()->Score(rs, c.pod, node);
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["passed"] = static_cast<double>(passed);
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(n),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void Filter(benchmark::State& state) { Run(state, true, false); }
void Score(benchmark::State& state) { Run(state, false, true); }
void FilterAndScore(benchmark::State& state) { Run(state, true, true); }
void FilterAndScoreDecoded(benchmark::State& state) { Run(state, true, true, false); }

BENCHMARK(Filter)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK(Score)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK(FilterAndScore)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK(FilterAndScoreDecoded)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace schedext::bench

BENCHMARK_MAIN();
