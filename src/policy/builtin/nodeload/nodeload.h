// NodeLoad: scores (and optionally filters) nodes by their real utilisation as
// Prometheus measures it, with the formulas of the scheduler-plugins project's
// Trimaran plugins: TargetLoadPacking (best fit around a CPU target) or
// LoadVariationRiskBalancing (average plus deviation of CPU and memory).
//
// A background poller (load_poller.h) runs instant queries every
// pollIntervalSeconds; requests read its latest snapshot without locks. Data
// missing for a node, or a snapshot older than maxAgeSeconds (Prometheus down,
// queries failing), gives a neutral score and never rejects: metrics never
// block scheduling. Pods NodeLoad saw bound since a sample count with their
// requests until a sample taken bindSettleSeconds after the bind can show them
// (bind_ledger.h).
//
// Recorded (RequestStateRecorder, policy/recorded_state.h): a sampled
// request's record keeps the snapshot and the ledger as the request read them
// (its nodes' samples, the sample's age, the binds on its nodes and their
// ages), so that `schedext replay` scores against them instead of polling.
//
// The folder: args.h (the args below, validated), formulas.h (Trimaran's
// scores), prometheus.h and load_poller.h (the background reader),
// bind_ledger.h (recent binds), recorded_load.h (the record's format),
// metrics.h (the metric families); this header and nodeload.cc: the policy.
//
// args (JSON object; unknown keys are errors; docs/nodeload.md has examples):
//   mode:        "TargetLoadPacking" (default) | "LoadVariationRiskBalancing"
//   prometheus:  {url (required), bearerTokenFile, caFile, timeoutSeconds (5)}
//   queries:     {cpu, memory, cpuStddev, memoryStddev}: PromQL instant vectors,
//                in percent, one series per node; defaults read node_exporter
//                (stddev ones: LoadVariationRiskBalancing only)
//   nodeLabel:   label naming the node ("instance"); trimPort (true) cuts ":9100"
//   pollIntervalSeconds (15), maxAgeSeconds (4 × poll), bindSettleSeconds (60)
//   neutralScore (50): the score of a node without (fresh) data
//   hotCpuPercent, hotMemoryPercent: reject nodes whose measured use plus
//                recent binds is above (adds a FilterHook)
//   TargetLoadPacking: targetUtilization (40), defaultCpuRequest ("1"),
//                defaultRequestsMultiplier (1.5)
//   LoadVariationRiskBalancing: safeVarianceMargin (1),
//                safeVarianceSensitivity (1), each in [0, 100]
#ifndef SCHEDEXT_POLICY_BUILTIN_NODELOAD_NODELOAD_H_
#define SCHEDEXT_POLICY_BUILTIN_NODELOAD_NODELOAD_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "policy/builtin/nodeload/args.h"
#include "policy/builtin/nodeload/bind_ledger.h"
#include "policy/builtin/nodeload/load_poller.h"
#include "schedext/policy/handle.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Builds the policy and its poller from `args`; kInvalidArgument naming the
// field (under context.args_path). Through context.handle it registers the
// poller as a background task, its metric families and a pod-bound observer
// (bound pods feed the BindLedger); without a handle it starts the poller
// itself, for the policy's lifetime.
StatusOr<std::unique_ptr<Policy>> NewNodeLoad(const nlohmann::json& args,
                                              const PolicyContext& context);

namespace nodeload {

// Where the policy reads its data: the latest load snapshot (null: none) and
// the clock that ages it.
struct LoadSources {
  std::function<std::shared_ptr<const LoadSnapshot>()> snapshot;
  std::function<Clock::time_point()> now = [] { return Clock::now(); };
};

// The NodeLoad policy over `sources` and `ledger` (tests; NewNodeLoad passes
// its poller). `keep_alive` is kept for the policy's lifetime (the poller).
std::unique_ptr<Policy> MakeNodeLoad(NodeLoadSpec spec, LoadSources sources,
                                     std::shared_ptr<BindLedger> ledger,
                                     std::shared_ptr<void> keep_alive);

// What NodeLoad adds to a node's estimate for a bound pod: CPU as the mode
// predicts it (TargetLoadPacking: Trimaran's PredictUtilisation; risk
// balancing: the request), memory its request.
void PodEstimate(const NodeLoadSpec& spec, const model::PodInfo& pod, int64_t& cpu_millis,
                 int64_t& memory_bytes);

}  // namespace nodeload
}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_NODELOAD_NODELOAD_H_
