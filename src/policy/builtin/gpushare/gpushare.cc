#include "policy/builtin/gpushare/gpushare.h"

#include <algorithm>
#include <cstddef>
#include <charconv>
#include <limits>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/args.h"
#include "policy/builtin/gpushare/accounting.h"
#include "policy/builtin/gpushare/convention.h"
#include "policy/builtin/gpushare/inspect.h"
#include "policy/builtin/gpushare/summary.h"
#include "schedext/model/quantity.h"

namespace schedext::policy {
namespace {

using gpushare::GpuDeviceIndex;
using gpushare::GpuMemoryRequest;
using gpushare::GpuNodeReader;
using gpushare::GpuPlacement;
using gpushare::GpuShape;
using gpushare::GpuShareConvention;
using gpushare::GpuSummary;
using gpushare::GpuUsage;
using gpushare::PlaceBestFit;
using gpushare::PlaceOnGpu;
using gpushare::SummaryDevices;
using gpushare::UsageDevices;
using model::Int128;

constexpr std::string_view kName = "GpuShare";

constexpr std::string_view kNeedsClusterCache =
    "GpuShare needs schedext's cluster cache (no Kubernetes API connection)";
constexpr std::string_view kNoSharedGpu = "node(s) had no shared GPU";
constexpr std::string_view kNoPreFilterState = "GpuShare: Filter ran without PreFilter";
constexpr std::string_view kVictimsMismatch = "GpuShare: victims and needed differ in length";
constexpr std::string_view kNoDeviceAfterEviction =
    "no GPU has enough memory even after evicting the victims";

// Device memory up to which kMaxNodeScore × (a sum over every device) fits in
// an int64 (ScoreOn).
constexpr int64_t kSmallDevice =
    std::numeric_limits<int64_t>::max() / kMaxNodeScore / gpushare::kMaxGpuDevices;

enum class Scoring { kBinpack, kSpread };

// PreFilter's result: the request, read once instead of per node.
class FilterState final : public StateData {
 public:
  int64_t request = 0;
};

// PreScore's result: the request, read once instead of per node.
class ScoreState final : public StateData {
 public:
  int64_t request = 0;
};

bool OnDevice(const model::PodInfo& victim, int device,
              const GpuShareConvention& convention) {
  const std::optional<int> index = GpuDeviceIndex(victim, convention);
  return index.has_value() && *index == device;
}

// Memory free on a device of `device_memory` with `used` counted once `freed`
// of it is gone. Counts are not trusted to be consistent (a victim's memory
// might not be in `used`), hence the clamp to the device's size.
Int128 FreeAfter(int64_t device_memory, int64_t used, Int128 freed) {
  const Int128 free = Int128(device_memory) - used + freed;
  return std::clamp<Int128>(free, 0, device_memory);
}

// How many victims must go from `device` for `request` to fit there:
// evict every victim on the device, then reprieve them from the most
// important down while the request still fits without evicting them. -1 when
// evicting all of them is not enough. Marks the needed ones in `needed` when
// it is not empty (others are left as they are). Allocation-free.
int NeededOnDevice(int device, int64_t device_memory, int64_t used, int64_t request,
                   std::span<const model::PodInfo> victims,
                   const GpuShareConvention& convention, std::span<uint8_t> needed) {
  Int128 freed = 0;
  for (const model::PodInfo& victim : victims) {
    if (OnDevice(victim, device, convention)) {
      freed += GpuMemoryRequest(victim, convention);
    }
  }
  if (FreeAfter(device_memory, used, freed) < request) {
    return -1;
  }
  int count = 0;
  for (size_t i = 0; i < victims.size(); ++i) {
    const int64_t memory = GpuMemoryRequest(victims[i], convention);
    if (memory == 0 || !OnDevice(victims[i], device, convention)) {
      continue;
    }
    if (FreeAfter(device_memory, used, freed - memory) >= request) {
      freed -= memory;  // reprieved: it stays
      continue;
    }
    ++count;
    if (!needed.empty()) {
      needed[i] = 1;
    }
  }
  return count;
}

class GpuShare final : public Policy,
                       public FilterHook,
                       public ScoreHook,
                       public PreemptHook,
                       public ReserveHook {
 public:
  // Registers the node summary when `handle` is not null.
  GpuShare(GpuShareConvention convention, Scoring scoring, NodeStateSlot slot,
           model::NameTable* names, PolicyHandle* handle)
      : convention_(std::move(convention)),
        reader_(std::make_shared<const GpuNodeReader>(convention_, slot, names)),
        scoring_(scoring),
        reason_no_healthy_gpu_("node(s) had no healthy GPU large enough for the pod's " +
                               convention_.memory_resource),
        reason_no_room_("Insufficient " + convention_.memory_resource + " on any one GPU") {
    if (handle != nullptr) {
      summary_ = handle->AddNodeSummary<GpuSummary>(
          [reader = reader_](const model::NodeInfo& node) { return reader->Summarize(node); });
    }
  }

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kResources; }
  const FilterHook* AsFilter() const override { return this; }
  const ScoreHook* AsScorer() const override { return this; }
  const PreemptHook* AsPreempter() const override { return this; }
  const ReserveHook* AsReserver() const override { return this; }

  // FilterHook
  Status PreFilter(RequestState& state, const model::PodInfo& pod) const override {
    auto data = std::make_unique<FilterState>();
    data->request = GpuMemoryRequest(pod, convention_);
    state.Set(FilterKey(), std::move(data));
    return OkStatus();
  }

  Verdict Filter(const RequestState& state, const model::PodInfo& /*pod*/,
                 const model::NodeInfo& node) const override {
    if (node.usage == nullptr) {
      return Verdict::Error(kNeedsClusterCache);
    }
    const FilterState* data = state.GetAs<FilterState>(FilterKey());
    if (data == nullptr) {
      return Verdict::Error(kNoPreFilterState);
    }
    if (data->request == 0) {
      return Verdict::Success();
    }
    GpuSummary summary;
    if (SummaryOf(node, summary)) {
      return FilterOn(SummaryDevices(summary), *data);
    }
    return FilterOn(UsageDevices(reader_->Shape(node), reader_->Usage(node)), *data);
  }

  bool EvictionCanHelp() const override { return true; }

  std::string Detail(const RequestState& state, const model::PodInfo& /*pod*/,
                     const model::NodeInfo& node) const override {
    const FilterState* data = state.GetAs<FilterState>(FilterKey());
    if (data == nullptr || data->request == 0 || node.usage == nullptr) {
      return {};
    }
    const GpuShape shape = reader_->Shape(node);
    if (!shape.has_gpus()) {
      return {};
    }
    const GpuPlacement placement = PlaceOnGpu(shape, reader_->Usage(node), data->request);
    if (placement.device >= 0) {
      return {};
    }
    const std::string needs = "needs " + Amount(data->request) + " on one GPU; ";
    if (shape.device_memory < data->request) {
      return needs + "its " + std::to_string(shape.count) + " GPU(s) hold " +
             Amount(shape.device_memory) + " each";
    }
    if (!placement.could_fit) {
      return needs + "all " + std::to_string(shape.count) + " GPU(s) unhealthy";
    }
    return needs + "largest free " +
           Amount(placement.largest_free) + ", short by " +
           Amount(data->request - placement.largest_free);
  }

  // ScoreHook
  Status PreScore(RequestState& state, const model::PodInfo& pod,
                  NodeSpan /*nodes*/) const override {
    auto data = std::make_unique<ScoreState>();
    data->request = GpuMemoryRequest(pod, convention_);
    state.Set(ScoreKey(), std::move(data));
    return OkStatus();
  }

  int64_t Score(const RequestState& state, const model::PodInfo& pod,
                const model::NodeInfo& node) const override {
    const ScoreState* data = state.GetAs<ScoreState>(ScoreKey());
    const int64_t request =
        data != nullptr ? data->request : GpuMemoryRequest(pod, convention_);
    if (request == 0) {
      return 0;
    }
    GpuSummary summary;
    if (SummaryOf(node, summary)) {
      return ScoreOn(SummaryDevices(summary), request);
    }
    return ScoreOn(UsageDevices(reader_->Shape(node), reader_->Usage(node)), request);
  }

  // PreemptHook
  Verdict SelectVictims(const RequestState& /*state*/, const model::PodInfo& preemptor,
                        const model::NodeInfo& node, std::span<const model::PodInfo> victims,
                        std::span<uint8_t> needed) const override {
    if (node.usage == nullptr) {
      return Verdict::Error(kNeedsClusterCache);
    }
    if (needed.size() != victims.size()) {
      return Verdict::Error(kVictimsMismatch);
    }
    std::fill(needed.begin(), needed.end(), 0);
    // The pipeline runs no PreFilter for filters that eviction can help, so
    // the request is read here (it is cheap).
    const int64_t request = GpuMemoryRequest(preemptor, convention_);
    if (request == 0) {
      return Verdict::Success();
    }
    // The victims' devices and their used amounts: read from the node itself
    // (preemption is rare and may see any number of devices).
    const GpuShape shape = reader_->Shape(node);
    const GpuUsage& gpu = *reader_->Usage(node);
    int best = -1;
    int best_count = 0;
    for (int device = 0; device < shape.count && shape.device_memory >= request; ++device) {
      if (gpu.Unhealthy(device)) {
        continue;
      }
      const int count = NeededOnDevice(device, shape.device_memory, gpu.UsedOn(device), request,
                                       victims, convention_, {});
      if (count >= 0 && (best < 0 || count < best_count)) {
        best = device;
        best_count = count;
      }
    }
    if (best < 0) {
      return Verdict::Unschedulable(kNoDeviceAfterEviction);
    }
    NeededOnDevice(best, shape.device_memory, gpu.UsedOn(best), request, victims, convention_,
                   needed);
    return Verdict::Success();
  }

  // ReserveHook
  Status Reserve(const model::PodInfo& pod, const model::NodeInfo& node,
                 PodAnnotations& out) const override {
    const int64_t request = GpuMemoryRequest(pod, convention_);
    if (request == 0) {
      return OkStatus();
    }
    // Without the cache's usage the placement would ignore every pod already
    // on the node's devices.
    if (node.usage == nullptr) {
      return FailedPreconditionError(std::string(kNeedsClusterCache));
    }
    // The device is named in the pod's annotations: read from the node
    // itself, with the cache's latest usage (see the header).
    const GpuShape shape = reader_->Shape(node);
    const GpuPlacement placement = PlaceOnGpu(shape, reader_->Usage(node), request);
    if (placement.device < 0) {
      return FailedPreconditionError("no GPU with " + Amount(request) + " free on node " +
                                     std::string(node.name) + " (largest free " +
                                     Amount(placement.largest_free) + ")");
    }
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    out.emplace_back(convention_.index_annotation, std::to_string(placement.device));
    out.emplace_back(convention_.pod_memory_annotation, std::to_string(request));
    out.emplace_back(convention_.device_memory_annotation, std::to_string(shape.device_memory));
    out.emplace_back(convention_.assigned_annotation, "false");
    out.emplace_back(convention_.assume_time_annotation, std::to_string(now.count()));
    return OkStatus();
  }

 private:
  // FilterHook and ScoreHook keep separate state: one RequestState may see
  // both PreFilter and PreScore.
  const void* FilterKey() const { return static_cast<const FilterHook*>(this); }
  const void* ScoreKey() const { return static_cast<const ScoreHook*>(this); }

  // The node's summary: from its bytes when the cache wrote them, else
  // computed from the node. False when it does not hold this node (see
  // summary.h): then read the node's shape and usage.
  bool SummaryOf(const model::NodeInfo& node, GpuSummary& out) const {
    if (!summary_.Get(node, out)) {
      out = reader_->Summarize(node);
    }
    return out.usable;
  }

  // The filter's verdict for a request of data.request > 0 on `devices`.
  template <typename Devices>
  Verdict FilterOn(const Devices& devices, const FilterState& data) const {
    if (devices.count() <= 0 || devices.device_memory() <= 0) {
      return Verdict::Unresolvable(kNoSharedGpu);
    }
    const GpuPlacement placement = PlaceBestFit(devices, data.request);
    if (placement.device >= 0) {
      return Verdict::Success();
    }
    if (!placement.could_fit) {
      return Verdict::Unresolvable(reason_no_healthy_gpu_);
    }
    return Verdict::Unschedulable(reason_no_room_);
  }

  // The score of a request of `request` > 0 on `devices`.
  template <typename Devices>
  int64_t ScoreOn(const Devices& devices, int64_t request) const {
    const int64_t device_memory = devices.device_memory();
    if (devices.count() <= 0 || device_memory <= 0) {
      return 0;
    }
    const GpuPlacement placement = PlaceBestFit(devices, request);
    if (placement.device < 0) {
      return 0;
    }
    // Every amount below is in [0, device_memory × kMaxGpuDevices]: with
    // devices up to kSmallDevice the products fit in 64 bits, and the 64-bit
    // division gives the 128-bit one's quotient.
    const bool small = device_memory <= kSmallDevice;
    if (scoring_ == Scoring::kBinpack) {
      // free_after <= device_memory: the numerator is in [0, device memory].
      const int64_t filled = device_memory - placement.free_after;
      if (small) {
        return kMaxNodeScore * filled / device_memory;
      }
      return static_cast<int64_t>(Int128(kMaxNodeScore) * filled / device_memory);
    }
    Int128 free = 0;
    Int128 total = 0;
    for (int device = 0; device < devices.count(); ++device) {
      if (!devices.healthy(device)) {
        continue;
      }
      free += devices.free(device);
      total += device_memory;
    }
    // The request fits on a healthy device, so 0 <= free - request <= total.
    if (small) {
      return kMaxNodeScore * static_cast<int64_t>(free - request) / static_cast<int64_t>(total);
    }
    return static_cast<int64_t>(Int128(kMaxNodeScore) * (free - request) / total);
  }

  // "8 GiB".
  std::string Amount(int64_t amount) const {
    return std::to_string(amount) + " " + convention_.unit;
  }

  const GpuShareConvention convention_;
  // How a node's shape, usage and summary are read; shared with the
  // summarizer (which the cache may hold longer than the policy).
  const std::shared_ptr<const GpuNodeReader> reader_;
  const Scoring scoring_;
  NodeSummarySlot<GpuSummary> summary_;  // set by the constructor only
  // Filter's reasons: the same for every node and request, so that
  // kube-scheduler counts them (per-node amounts are in Detail).
  const std::string reason_no_healthy_gpu_;
  const std::string reason_no_room_;
};

// What every profile's GpuShare shares (PolicyHandle::Shared): one
// accounting in the cache, one ConfigMap watch, one route, one set of gauges.
struct SharedState {
  GpuShareConvention convention;
  NodeStateSlot slot = 0;
};

constexpr std::string_view kNeedsCluster =
    "the GpuShare policy needs the Kubernetes API (it counts GPU memory from the pods' "
    "annotations and annotates the pods it binds)";

// Registers the accounting, the watch, the route and the gauges.
StatusOr<std::shared_ptr<SharedState>> MakeShared(const GpuShareConvention& convention,
                                             PolicyHandle& handle) {
  auto shared = std::make_shared<SharedState>();
  shared->convention = convention;
  auto accounting = std::make_shared<gpushare::GpuAccounting>(convention);
  SCHEDEXT_ASSIGN_OR_RETURN(shared->slot, handle.AddNodeAccounting(accounting));
  // Only the namespace of the unhealthy-GPU ConfigMaps: a cluster-wide
  // ConfigMap watch would carry every application's configuration.
  WatchSpec config_maps;
  config_maps.version = "v1";
  config_maps.resource = "configmaps";
  config_maps.namespace_name = convention.unhealthy_namespace;
  SCHEDEXT_RETURN_IF_ERROR(handle.Watch(std::move(config_maps), accounting));
  handle.RequireCluster(std::string(kNeedsCluster));
  const NodeStateSlot slot = shared->slot;
  PolicyHandle* h = &handle;
  SCHEDEXT_RETURN_IF_ERROR(handle.AddGetRoute(
      "/gpushare/inspect", [h, convention, slot](std::string_view node, std::string& body) {
        const std::shared_ptr<const ClusterView> view = h->Snapshot();
        return gpushare::GpuShareInspect(view.get(), convention, slot, node, body);
      }));
  handle.AddMetrics([h, convention, slot](std::string& out) {
    const std::shared_ptr<const ClusterView> view = h->Snapshot();
    gpushare::AppendGpuShareMetrics(view.get(), convention, slot, out);
  });
  return shared;
}

// A DNS-1123 label, as namespace names are.
bool IsNamespaceName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') {
    return false;
  }
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return false;
    }
  }
  return true;
}

// The convention's fields, as args keys.
struct ConventionField {
  std::string_view key;
  std::string GpuShareConvention::*field;
};
constexpr ConventionField kConventionFields[] = {
    {"memoryResource", &GpuShareConvention::memory_resource},
    {"countResource", &GpuShareConvention::count_resource},
    {"indexAnnotation", &GpuShareConvention::index_annotation},
    {"podMemoryAnnotation", &GpuShareConvention::pod_memory_annotation},
    {"deviceMemoryAnnotation", &GpuShareConvention::device_memory_annotation},
    {"assignedAnnotation", &GpuShareConvention::assigned_annotation},
    {"assumeTimeAnnotation", &GpuShareConvention::assume_time_annotation},
    {"unhealthyNamespace", &GpuShareConvention::unhealthy_namespace},
    {"unhealthyPrefix", &GpuShareConvention::unhealthy_prefix},
    {"unhealthyKey", &GpuShareConvention::unhealthy_key},
    {"unit", &GpuShareConvention::unit},
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> NewGpuShare(const nlohmann::json& args,
                                              const PolicyContext& context) {
  // The keys of kConventionFields, after "scoring".
  SCHEDEXT_ASSIGN_OR_RETURN(
      ArgsReader reader,
      ArgsReader::Make(args, context.args_path,
                       {"scoring", "memoryResource", "countResource", "indexAnnotation",
                        "podMemoryAnnotation", "deviceMemoryAnnotation", "assignedAnnotation",
                        "assumeTimeAnnotation", "unhealthyNamespace", "unhealthyPrefix",
                        "unhealthyKey", "unit"}));
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string_view> scoring,
                            reader.Enum("scoring", {"binpack", "spread"}));
  const Scoring mode =
      scoring.value_or("binpack") == "spread" ? Scoring::kSpread : Scoring::kBinpack;
  GpuShareConvention convention;
  for (const ConventionField& f : kConventionFields) {
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> value, reader.String(f.key));
    if (!value.has_value()) {
      continue;
    }
    if (value->empty()) {
      return reader.FieldError(f.key, "must not be empty");
    }
    convention.*f.field = std::move(*value);
  }
  if (!IsNamespaceName(convention.unhealthy_namespace)) {
    return reader.FieldError("unhealthyNamespace", "\"" + convention.unhealthy_namespace +
                                                       "\" is not a valid namespace name");
  }
  if (context.handle == nullptr) {
    // Nothing to register with (a caller outside Profile::Build): no slot of
    // any NodeUsage is this policy's, so it sees no GPU usage anywhere.
    return std::unique_ptr<Policy>(
        std::make_unique<GpuShare>(std::move(convention), mode,
                                   std::numeric_limits<NodeStateSlot>::max(), context.names,
                                   nullptr));
  }
  PolicyHandle& handle = *context.handle;
  SCHEDEXT_ASSIGN_OR_RETURN(
      std::shared_ptr<SharedState> shared,
      handle.Shared<SharedState>(kName, [&]() { return MakeShared(convention, handle); }));
  if (!(shared->convention == convention)) {
    return reader.Error(
        "every profile's GpuShare must give the same device-plugin names (memoryResource, "
        "annotations, unhealthy ConfigMaps, unit): they share one GPU accounting");
  }
  return std::unique_ptr<Policy>(
      std::make_unique<GpuShare>(std::move(convention), mode, shared->slot, context.names,
                                 &handle));
}

}  // namespace schedext::policy
