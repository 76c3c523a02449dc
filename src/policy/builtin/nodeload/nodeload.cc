#include "policy/builtin/nodeload/nodeload.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/text.h"
#include "policy/builtin/nodeload/formulas.h"
#include "policy/builtin/nodeload/metrics.h"
#include "policy/builtin/nodeload/recorded_load.h"
#include "schedext/policy/recorded_state.h"

namespace schedext::policy {
namespace nodeload {
namespace {

constexpr std::string_view kName = "NodeLoad";

// The node's CPU capacity in milli-cores: TargetLoadPacking reads capacity as
// Trimaran does, falling back to allocatable.
double CpuCapacity(const model::NodeInfo& node) {
  const int64_t capacity = node.capacity.milli_cpu;
  return static_cast<double>(capacity > 0 ? capacity : node.allocatable.milli_cpu);
}

// What PreFilter / PreScore found once per request.
struct NodeLoadState final : StateData {
  // Null when there is no snapshot or it is older than maxAge: neutral.
  std::shared_ptr<const LoadSnapshot> snapshot;
  // The sources as the request read them (a recording keeps them: a stale
  // snapshot too, which a larger maxAge would use).
  std::shared_ptr<const LoadSnapshot> seen;
  Clock::time_point now;
  std::shared_ptr<const BindLedger::View> binds;
  Clock::time_point binds_since;  // binds after this count
  int64_t pod_cpu_millis = 0;     // the pod's own estimate (mode-dependent)
  int64_t pod_cpu_request = 0;
  int64_t pod_memory_request = 0;
};

class NodeLoad final : public Policy,
                       public FilterHook,
                       public ScoreHook,
                       public RequestStateRecorder {
 public:
  NodeLoad(NodeLoadSpec spec, LoadSources sources, std::shared_ptr<BindLedger> ledger,
           std::shared_ptr<void> keep_alive)
      : spec_(std::move(spec)),
        sources_(std::move(sources)),
        ledger_(std::move(ledger)),
        keep_alive_(std::move(keep_alive)),
        reason_cpu_("node(s) were too hot: CPU use above " +
                    FormatNumber(spec_.hot_cpu_percent.value_or(0)) + "%"),
        reason_memory_("node(s) were too hot: memory use above " +
                       FormatNumber(spec_.hot_memory_percent.value_or(0)) + "%") {}

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kResources; }
  const FilterHook* AsFilter() const override {
    return spec_.hot_cpu_percent.has_value() || spec_.hot_memory_percent.has_value() ? this
                                                                                      : nullptr;
  }
  const ScoreHook* AsScorer() const override { return this; }

  // FilterHook
  Status PreFilter(RequestState& state, const model::PodInfo& pod) const override {
    state.Set(this, Prepare(state, pod));
    return OkStatus();
  }
  Verdict Filter(const RequestState& state, const model::PodInfo& /*pod*/,
                 const model::NodeInfo& node) const override {
    const NodeLoadState* s = state.GetAs<NodeLoadState>(this);
    if (s == nullptr || s->snapshot == nullptr) {
      return Verdict::Success();
    }
    const NodeLoadSample* sample = s->snapshot->Find(node.name);
    if (sample == nullptr) {
      return Verdict::Success();
    }
    int64_t pending_cpu = 0;
    int64_t pending_memory = 0;
    s->binds->SumSince(node.name, s->binds_since, pending_cpu, pending_memory);
    if (spec_.hot_cpu_percent.has_value() && !std::isnan(sample->cpu)) {
      const double capacity = CpuCapacity(node);
      if (capacity > 0 && PredictedCpuPercent(sample->cpu, capacity,
                                              static_cast<double>(pending_cpu)) >
                              *spec_.hot_cpu_percent) {
        return Verdict::Unresolvable(reason_cpu_);
      }
    }
    if (spec_.hot_memory_percent.has_value() && !std::isnan(sample->memory)) {
      const double capacity = static_cast<double>(node.allocatable.memory);
      if (capacity > 0 &&
          sample->memory + 100 * static_cast<double>(pending_memory) / capacity >
              *spec_.hot_memory_percent) {
        return Verdict::Unresolvable(reason_memory_);
      }
    }
    return Verdict::Success();
  }

  // The node's predicted use, which the reasons leave out (they name only
  // the configured limit).
  std::string Detail(const RequestState& state, const model::PodInfo& /*pod*/,
                     const model::NodeInfo& node) const override {
    const NodeLoadState* s = state.GetAs<NodeLoadState>(this);
    const NodeLoadSample* sample =
        s == nullptr || s->snapshot == nullptr ? nullptr : s->snapshot->Find(node.name);
    if (sample == nullptr) {
      return {};
    }
    int64_t pending_cpu = 0;
    int64_t pending_memory = 0;
    s->binds->SumSince(node.name, s->binds_since, pending_cpu, pending_memory);
    // Tenths of a percent: enough to compare with the limit, and no float noise.
    auto percent = [](double value) { return FormatNumber(std::round(value * 10) / 10) + "%"; };
    std::string out;
    const double cpu_capacity = CpuCapacity(node);
    if (!std::isnan(sample->cpu) && cpu_capacity > 0) {
      out = "CPU use " + percent(PredictedCpuPercent(sample->cpu, cpu_capacity,
                                                     static_cast<double>(pending_cpu)));
    }
    const double memory_capacity = static_cast<double>(node.allocatable.memory);
    if (!std::isnan(sample->memory) && memory_capacity > 0) {
      out += (out.empty() ? "" : ", ") + std::string("memory use ") +
             percent(sample->memory + 100 * static_cast<double>(pending_memory) / memory_capacity);
    }
    return out.empty() ? out : out + " (with binds since the sample)";
  }

  // ScoreHook
  Status PreScore(RequestState& state, const model::PodInfo& pod,
                  NodeSpan /*nodes*/) const override {
    state.Set(this, Prepare(state, pod));
    return OkStatus();
  }
  int64_t Score(const RequestState& state, const model::PodInfo& /*pod*/,
                const model::NodeInfo& node) const override {
    const NodeLoadState* s = state.GetAs<NodeLoadState>(this);
    if (s == nullptr || s->snapshot == nullptr) {
      return spec_.neutral_score;
    }
    const NodeLoadSample* sample = s->snapshot->Find(node.name);
    if (sample == nullptr) {
      return spec_.neutral_score;
    }
    int64_t pending_cpu = 0;
    int64_t pending_memory = 0;
    s->binds->SumSince(node.name, s->binds_since, pending_cpu, pending_memory);
    if (spec_.mode == Mode::kTargetLoadPacking) {
      const double capacity = CpuCapacity(node);
      if (std::isnan(sample->cpu) || !(capacity > 0)) {
        return spec_.neutral_score;
      }
      const double predicted = PredictedCpuPercent(
          sample->cpu, capacity, static_cast<double>(s->pod_cpu_millis + pending_cpu));
      return TargetLoadPackingScore(predicted, spec_.target_utilization);
    }
    // LoadVariationRiskBalancing: the worse of CPU and memory, or the one with
    // data (Trimaran takes the max of the two when one is missing, i.e. it).
    std::optional<double> cpu_score;
    std::optional<double> memory_score;
    const double cpu_capacity = static_cast<double>(node.allocatable.milli_cpu);
    if (!std::isnan(sample->cpu) && cpu_capacity > 0) {
      ResourceStats stats;
      stats.capacity = cpu_capacity;
      stats.request = static_cast<double>(s->pod_cpu_request);
      stats.used_avg = sample->cpu * cpu_capacity / 100 + static_cast<double>(pending_cpu);
      stats.used_stddev =
          std::isnan(sample->cpu_stddev) ? 0 : sample->cpu_stddev * cpu_capacity / 100;
      cpu_score = RiskBalancingScore(stats, spec_.safe_variance_margin,
                                     spec_.safe_variance_sensitivity);
    }
    const double memory_capacity = static_cast<double>(node.allocatable.memory);
    if (!std::isnan(sample->memory) && memory_capacity > 0) {
      ResourceStats stats;
      stats.capacity = memory_capacity;
      stats.request = static_cast<double>(s->pod_memory_request);
      stats.used_avg =
          sample->memory * memory_capacity / 100 + static_cast<double>(pending_memory);
      stats.used_stddev =
          std::isnan(sample->memory_stddev) ? 0 : sample->memory_stddev * memory_capacity / 100;
      memory_score = RiskBalancingScore(stats, spec_.safe_variance_margin,
                                        spec_.safe_variance_sensitivity);
    }
    if (!cpu_score && !memory_score) {
      return spec_.neutral_score;
    }
    const double total = cpu_score && memory_score ? std::min(*cpu_score, *memory_score)
                                                   : cpu_score.value_or(*memory_score);
    return std::llround(total);
  }
  // Scores are absolute (0..100), as Trimaran's: no normalisation, so that a
  // neutral node keeps the neutral score.
  void Normalize(const RequestState& /*state*/, std::span<int64_t> scores) const override {
    for (int64_t& score : scores) {
      score = std::clamp<int64_t>(score, 0, kMaxNodeScore);
    }
  }

  // RequestStateRecorder
  std::shared_ptr<const CapturedState> Capture(const RequestState& state) const override {
    if (const NodeLoadState* s = state.GetAs<NodeLoadState>(this)) {
      return CaptureLoad(s->seen, s->binds, s->now);
    }
    // The verb did not run this policy's hooks (no hot filter at filter):
    // its sources now, for a replay whose configuration does.
    return CaptureLoad(sources_.snapshot(), ledger_->Current(), sources_.now());
  }
  Status Restore(std::string_view json, RequestState& state) const override {
    SCHEDEXT_ASSIGN_OR_RETURN(std::unique_ptr<RestoredSources> restored, DecodeCapturedLoad(json));
    state.Set(&restore_key_, std::move(restored));
    return OkStatus();
  }

 private:
  std::unique_ptr<NodeLoadState> Prepare(const RequestState& request,
                                         const model::PodInfo& pod) const {
    auto state = std::make_unique<NodeLoadState>();
    const RestoredSources* restored = request.GetAs<RestoredSources>(&restore_key_);
    state->seen = restored != nullptr ? restored->snapshot : sources_.snapshot();
    state->now = restored != nullptr ? restored->now : sources_.now();
    state->binds = restored != nullptr ? restored->binds : ledger_->Current();
    if (state->seen != nullptr && state->now - state->seen->taken() <= spec_.max_age) {
      state->binds_since = state->seen->taken() - spec_.bind_settle;
      state->snapshot = state->seen;
    }
    int64_t memory = 0;
    PodEstimate(spec_, pod, state->pod_cpu_millis, memory);
    state->pod_cpu_request = pod.requests.milli_cpu;
    state->pod_memory_request = pod.requests.memory;
    return state;
  }

  const NodeLoadSpec spec_;
  const LoadSources sources_;
  const std::shared_ptr<BindLedger> ledger_;
  const std::shared_ptr<void> keep_alive_;
  const std::string reason_cpu_;
  const std::string reason_memory_;
  // Where Restore keeps the recorded sources in a RequestState (`this` is
  // the key of the per-request NodeLoadState).
  const char restore_key_ = 0;
};

}  // namespace

void PodEstimate(const NodeLoadSpec& spec, const model::PodInfo& pod, int64_t& cpu_millis,
                 int64_t& memory_bytes) {
  cpu_millis = spec.mode == Mode::kTargetLoadPacking
                   ? PredictPodCpuMillis(pod, spec.default_cpu_request_millis,
                                         spec.requests_multiplier)
                   : pod.requests.milli_cpu;
  memory_bytes = pod.requests.memory;
}

std::unique_ptr<Policy> MakeNodeLoad(NodeLoadSpec spec, LoadSources sources,
                                     std::shared_ptr<BindLedger> ledger,
                                     std::shared_ptr<void> keep_alive) {
  return std::make_unique<NodeLoad>(std::move(spec), std::move(sources), std::move(ledger),
                                    std::move(keep_alive));
}

}  // namespace nodeload

StatusOr<std::unique_ptr<Policy>> NewNodeLoad(const nlohmann::json& args,
                                              const PolicyContext& context) {
  using nodeload::LoadPoller;
  SCHEDEXT_ASSIGN_OR_RETURN(nodeload::NodeLoadSpec spec,
                            nodeload::ParseNodeLoadArgs(args, context));
  StatusOr<std::unique_ptr<nodeload::PrometheusClient>> client =
      nodeload::PrometheusClient::Make(spec.prometheus);
  if (!client.ok()) {
    return InvalidArgumentError(context.args_path + ".prometheus: " +
                                std::string(client.status().message()));
  }
  auto poller = std::make_shared<LoadPoller>(std::move(client).value(), spec.queries,
                                             spec.node_label, spec.trim_port, spec.poll_interval);
  // Long enough for any bind that can still count: settle plus the oldest
  // sample that is not stale.
  auto ledger = std::make_shared<nodeload::BindLedger>(spec.bind_settle + spec.max_age +
                                                       spec.poll_interval);
  if (context.handle != nullptr) {
    PolicyHandle& handle = *context.handle;
    handle.AddBackgroundTask(std::make_unique<nodeload::PollerTask>(poller));
    SCHEDEXT_ASSIGN_OR_RETURN(
        std::shared_ptr<nodeload::NodeLoadMetrics> metrics,
        handle.Shared<nodeload::NodeLoadMetrics>(
            "NodeLoad.metrics", [&handle]() -> StatusOr<std::shared_ptr<nodeload::NodeLoadMetrics>> {
              auto made = std::make_shared<nodeload::NodeLoadMetrics>();
              handle.AddMetrics([m = made.get()](std::string& out) { m->Write(out); });
              return made;
            }));
    metrics->Add(nodeload::InstanceName(context.args_path), poller, ledger);
    handle.OnPodBound([ledger, spec](const model::PodInfo& pod, std::string_view node) {
      int64_t cpu = 0;
      int64_t memory = 0;
      nodeload::PodEstimate(spec, pod, cpu, memory);
      ledger->Add(node, pod.uid, cpu, memory, nodeload::Clock::now());
    });
    // No readiness condition: metrics never hold back scheduling.
  } else {
    // Without a handle (a bare factory call) nobody else would start the
    // poller: it runs while the policy lives; no metrics, no bound pods.
    poller->Start();
  }
  nodeload::LoadSources sources;
  sources.snapshot = [p = poller.get()] { return p->Current(); };
  return nodeload::MakeNodeLoad(std::move(spec), std::move(sources), std::move(ledger),
                                std::move(poller));
}

}  // namespace schedext::policy