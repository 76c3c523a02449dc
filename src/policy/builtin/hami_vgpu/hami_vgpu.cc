#include "policy/builtin/hami_vgpu/hami_vgpu.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/args.h"
#include "policy/builtin/hami_vgpu/accounting.h"
#include "policy/builtin/hami_vgpu/fit.h"
#include "policy/builtin/hami_vgpu/inspect.h"
#include "policy/builtin/hami_vgpu/protocol.h"
#include "policy/builtin/hami_vgpu/summary.h"
#include "schedext/policy/node_summary.h"

namespace schedext::policy {
namespace {

using hami::Device;
using hami::FitResult;
using hami::GpuPolicy;
using hami::Misfit;
using hami::NodeDevices;
using hami::NodeFacts;
using hami::NodePolicy;
using hami::NodeUse;
using hami::PodRules;
using hami::ResourceNames;

constexpr std::string_view kName = "HamiVgpu";
constexpr std::string_view kNeedsClusterCache =
    "HamiVgpu needs schedext's cluster cache (no Kubernetes API connection)";
constexpr std::string_view kNoPreFilterState = "HamiVgpu: Filter ran without PreFilter";
constexpr std::string_view kNoDevices = "node(s) have no HAMi vGPU devices";
constexpr std::string_view kVictimsMismatch = "HamiVgpu: needed and victims differ in size";
constexpr std::string_view kNeedsCluster =
    "the HamiVgpu policy needs the Kubernetes API (it counts vGPUs from the pods' annotations "
    "and annotates the pods it binds)";

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What PreFilter and PreScore read once per request.
class RequestData final : public StateData {
 public:
  hami::PodRequest request;
  bool asks = false;
  // The one container asking for vGPUs when the pod is the common one that
  // summary.h FitOne/ScoreOne decide (into request.app); else null.
  const hami::ContainerRequest* one = nullptr;
  PodRules rules;
  GpuPolicy gpu_policy = GpuPolicy::kSpread;
  NodePolicy node_policy = NodePolicy::kBinpack;
  int64_t now_unix = 0;
};

class HamiVgpu final : public Policy,
                       public FilterHook,
                       public ScoreHook,
                       public PreemptHook,
                       public ReserveHook {
 public:
  // Registers the node summary when `handle` is not null.
  HamiVgpu(ResourceNames names, NodePolicy node_policy, GpuPolicy gpu_policy,
           std::chrono::seconds lock_expiry, NodeStateSlot slot, PolicyHandle* handle)
      : names_(std::move(names)),
        node_policy_(node_policy),
        gpu_policy_(gpu_policy),
        lock_expiry_(lock_expiry),
        slot_(slot) {
    if (handle != nullptr) {
      summary_ = handle->AddNodeSummary<hami::VgpuSummary>(
          [slot, count = names_.count](const model::NodeInfo& node) {
            return hami::Summarize(node, slot, count);
          });
      if (!summary_.present()) {
        spdlog::warn(
            "HamiVgpu: the node summary bytes are used up by the policies of earlier profiles; "
            "this profile decodes every node's devices on each request (about ten times "
            "slower). List it before the others.");
      }
    }
  }

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override {
    return model::NodeFields::kAnnotations | model::NodeFields::kResources;
  }
  const FilterHook* AsFilter() const override { return this; }
  const ScoreHook* AsScorer() const override { return this; }
  const PreemptHook* AsPreempter() const override { return this; }
  const ReserveHook* AsReserver() const override { return this; }

  Status PreFilter(RequestState& state, const model::PodInfo& pod) const override {
    state.Set(Key(), Prepare(pod));
    return OkStatus();
  }

  Verdict Filter(const RequestState& state, const model::PodInfo& /*pod*/,
                 const model::NodeInfo& node) const override {
    if (node.usage == nullptr) {
      return Verdict::Error(kNeedsClusterCache);
    }
    const RequestData* data = state.GetAs<RequestData>(Key());
    if (data == nullptr) {
      return Verdict::Error(kNoPreFilterState);
    }
    if (!data->asks) {
      return Verdict::Success();
    }
    Misfit misfit = Misfit::kNone;
    hami::VgpuSummary summary;
    const Summarized summarized =
        data->one != nullptr ? SummaryOf(node, *data, summary) : Summarized::kNo;
    if (summarized == Summarized::kUnusable) {
      return Verdict::Unresolvable(kNoDevices);
    }
    if (summarized == Summarized::kYes) {
      misfit = hami::FitOne(summary, *data->one);
    } else {
      NodeFacts facts;
      if (!FactsOf(node, *data, facts)) {
        return Verdict::Unresolvable(kNoDevices);
      }
      misfit = hami::FitPod(facts, data->request, data->rules.numa_bind, data->gpu_policy,
                            hami::FitFor::kVerdict, [](const hami::Choice&) {})
                   .misfit;
    }
    if (misfit == Misfit::kNone) {
      return Verdict::Success();
    }
    return hami::Unresolvable(misfit) ? Verdict::Unresolvable(hami::Reason(misfit))
                                      : Verdict::Unschedulable(hami::Reason(misfit));
  }

  // Explain's per-node text for a rejected node: why it has no devices, or
  // the freest device it offers against the largest vGPU the pod asks for
  // and, when memory is what is missing, ", short by <MiB> MiB" (what the
  // SchedextUnschedulable event ranks nearest nodes by).
  std::string Detail(const RequestState& state, const model::PodInfo& pod,
                     const model::NodeInfo& node) const override {
    std::unique_ptr<RequestData> own;
    const RequestData* data = state.GetAs<RequestData>(Key());
    if (data == nullptr) {
      own = Prepare(pod);
      data = own.get();
    }
    if (!data->asks || node.usage == nullptr) {
      return {};
    }
    NodeDevices devices;
    if (!DevicesOf(node, data->now_unix, devices)) {
      const std::optional<std::string_view> text =
          node.annotations.Find(hami::kRegisterAnnotation);
      if (!text.has_value()) {
        return "no " + std::string(hami::kRegisterAnnotation) + " annotation";
      }
      if (!hami::DecodeRegister(*text, devices) || devices.size == 0) {
        return std::string(hami::kRegisterAnnotation) + " names no device schedext can read";
      }
      return "the device plugin's " + std::string(hami::kHandshakeAnnotation) +
             " is stale and allocatable " + names_.count + " is 0";
    }
    NodeFacts facts;
    DecodedFactsOf(node, devices, data->rules, facts);
    // The largest single vGPU the pod asks for, in MiB of a device of
    // `memory` (a percentage request depends on the device).
    const auto largest_ask = [&](int64_t memory) {
      int64_t most = 0;
      for (const auto* list : {&data->request.init, &data->request.app}) {
        for (const hami::ContainerRequest& r : *list) {
          if (r.nums > 0) {
            most = std::max(most, hami::MemoryPerVgpu(r, memory));
          }
        }
      }
      return most;
    };
    int best = -1;
    for (int d = 0; d < facts.size; ++d) {
      const hami::DeviceFacts& f = facts.devices[static_cast<size_t>(d)];
      if (!f.healthy || !f.type_allowed || !f.uuid_allowed) continue;
      const int64_t free = f.memory - facts.use[static_cast<size_t>(d)].memory;
      if (best < 0 || free > facts.devices[static_cast<size_t>(best)].memory -
                                 facts.use[static_cast<size_t>(best)].memory) {
        best = d;
      }
    }
    std::string out = std::to_string(facts.size) + " NVIDIA device(s)";
    if (best < 0) {
      return out + ", none healthy and allowed by the pod's rules";
    }
    const hami::DeviceFacts& f = facts.devices[static_cast<size_t>(best)];
    const hami::DeviceUse& u = facts.use[static_cast<size_t>(best)];
    const int64_t free = f.memory - u.memory;
    const int64_t ask = largest_ask(f.memory);
    out += "; the freest usable one has " + std::to_string(free) + " of " +
           std::to_string(f.memory) + " MiB, " + std::to_string(f.cores - u.cores) + " of " +
           std::to_string(f.cores) + " cores and " + std::to_string(f.count - u.used) + " of " +
           std::to_string(f.count) + " vGPUs free; the pod asks up to " + std::to_string(ask) +
           " MiB for one vGPU";
    if (ask > free) {
      out += ", short by " + std::to_string(ask - free) + " MiB";
    }
    return out;
  }

  Status PreScore(RequestState& state, const model::PodInfo& pod,
                  NodeSpan /*nodes*/) const override {
    if (state.Get(Key()) == nullptr) {
      state.Set(Key(), Prepare(pod));
    }
    return OkStatus();
  }

  int64_t Score(const RequestState& state, const model::PodInfo& /*pod*/,
                const model::NodeInfo& node) const override {
    const RequestData* data = state.GetAs<RequestData>(Key());
    if (data == nullptr || !data->asks || node.usage == nullptr) {
      return 0;
    }
    if (data->one != nullptr) {
      hami::VgpuSummary summary;
      const Summarized summarized = SummaryOf(node, *data, summary);
      if (summarized == Summarized::kUnusable) {
        return 0;
      }
      if (summarized == Summarized::kYes) {
        bool placement_needed = false;
        const std::optional<int64_t> score =
            hami::ScoreOne(summary, *data->one, data->node_policy, placement_needed);
        if (!placement_needed) {
          return score.value_or(0);
        }
      }
    }
    NodeFacts facts;
    if (!FactsOf(node, *data, facts)) {
      return 0;
    }
    return hami::ScorePod(facts, data->request, data->rules.numa_bind, data->gpu_policy,
                          data->node_policy)
        .value_or(0);
  }

  // Evicting a pod frees what its allocation annotation holds: preempt asks
  // SelectVictims instead of this filter.
  bool EvictionCanHelp() const override { return true; }

  // PreemptHook: the victims free what their hami.io/vgpu-devices-allocated
  // holds on this node's devices. With every victim evicted the pod must fit
  // (else the node is dropped, with the fit's reason); then victims are
  // reprieved from the most important down while it still fits, so the ones
  // left are the least important whose devices are needed. A victim holding
  // nothing here is never needed by this policy.
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
    // No PreFilter ran (eviction can help this filter): the pod is read here.
    // Preemption is rare; this allocates.
    const std::unique_ptr<RequestData> data = Prepare(preemptor);
    if (!data->asks) {
      return Verdict::Success();
    }
    NodeDevices devices;
    if (!DevicesOf(node, data->now_unix, devices)) {
      return Verdict::Unresolvable(kNoDevices);
    }
    const size_t size = static_cast<size_t>(devices.size);
    NodeUse base;
    hami::UseOf(static_cast<const hami::VgpuNodeState*>(node.usage->states.Get(slot_)),
                devices.view(), base);
    // What each victim holds, by the devices' positions.
    std::vector<NodeUse> held(victims.size());
    std::vector<uint8_t> holds(victims.size(), 0);
    for (size_t v = 0; v < victims.size(); ++v) {
      for (size_t d = 0; d < size; ++d) held[v][d] = {0, 0, 0};
      const std::optional<std::string_view> allocated =
          victims[v].annotations.Find(hami::kAllocatedAnnotation);
      if (!allocated.has_value()) continue;
      hami::ForEachAllocated(*allocated, [&](const hami::AllocatedDevice& a) {
        for (size_t d = 0; d < size; ++d) {
          if (devices.devices[d].uuid == a.uuid) {
            held[v][d].used += 1;
            held[v][d].memory += a.memory;
            held[v][d].cores += a.cores;
            holds[v] = 1;
            break;
          }
        }
      });
    }
    // The misfit with the victims marked in `evicted` gone.
    const auto misfit = [&](std::span<const uint8_t> evicted) {
      NodeUse use;
      for (size_t d = 0; d < size; ++d) {
        use[d] = base[d];
        for (size_t v = 0; v < evicted.size(); ++v) {
          if (evicted[v] == 0) continue;
          use[d].used = std::max<int64_t>(0, use[d].used - held[v][d].used);
          use[d].memory = std::max<int64_t>(0, use[d].memory - held[v][d].memory);
          use[d].cores = std::max<int64_t>(0, use[d].cores - held[v][d].cores);
        }
      }
      NodeFacts facts;
      hami::FactsOf(devices.view(), use, data->rules, facts);
      return hami::FitPod(facts, data->request, data->rules.numa_bind, data->gpu_policy,
                          hami::FitFor::kVerdict, [](const hami::Choice&) {})
          .misfit;
    };
    std::vector<uint8_t> evicted = holds;
    if (const Misfit m = misfit(evicted); m != Misfit::kNone) {
      return hami::Unresolvable(m) ? Verdict::Unresolvable(hami::Reason(m))
                                   : Verdict::Unschedulable(hami::Reason(m));
    }
    for (size_t v = 0; v < victims.size(); ++v) {
      if (evicted[v] == 0) continue;
      evicted[v] = 0;
      if (misfit(evicted) != Misfit::kNone) {
        evicted[v] = 1;
      }
    }
    std::copy(evicted.begin(), evicted.end(), needed.begin());
    return Verdict::Success();
  }

  Status Reserve(const model::PodInfo& pod, const model::NodeInfo& node,
                 PodAnnotations& out) const override {
    const std::unique_ptr<RequestData> data = Prepare(pod);
    if (!data->asks) {
      return OkStatus();
    }
    if (node.usage == nullptr) {
      return FailedPreconditionError(std::string(kNeedsClusterCache));
    }
    NodeDevices devices;
    if (!DevicesOf(node, data->now_unix, devices)) {
      return FailedPreconditionError("node " + std::string(node.name) +
                                     " has no HAMi vGPU devices");
    }
    NodeFacts facts;
    DecodedFactsOf(node, devices, data->rules, facts);
    std::vector<hami::Choice> choices;
    const FitResult fit =
        hami::FitPod(facts, data->request, data->rules.numa_bind, data->gpu_policy,
                     hami::FitFor::kPlacement,
                     [&](const hami::Choice& c) { choices.push_back(c); });
    if (fit.misfit != Misfit::kNone) {
      return FailedPreconditionError("the pod no longer fits on node " + std::string(node.name) +
                                     ": " + std::string(hami::Reason(fit.misfit)));
    }
    const size_t containers = pod.init_containers.size() + pod.containers.size();
    std::string encoded;
    std::vector<hami::ChosenDevice> chosen;
    size_t next = 0;
    for (size_t c = 0; c < containers; ++c) {
      chosen.clear();
      for (; next < choices.size() && choices[next].container == c; ++next) {
        const hami::Choice& choice = choices[next];
        const size_t index = facts.devices[static_cast<size_t>(choice.device)].index;
        chosen.push_back({devices.devices[index].uuid, choice.memory, choice.cores});
      }
      hami::AppendContainer(chosen, encoded);
    }
    const std::string now = std::to_string(data->now_unix);
    out.emplace_back(std::string(hami::kToAllocateAnnotation), encoded);
    out.emplace_back(std::string(hami::kAllocatedAnnotation), encoded);
    out.emplace_back(std::string(hami::kAssignedNodeAnnotation), std::string(node.name));
    out.emplace_back(std::string(hami::kAssignedTimeAnnotation), now);
    out.emplace_back(std::string(hami::kBindTimeAnnotation), now);
    out.emplace_back(std::string(hami::kBindPhaseAnnotation),
                     std::string(hami::kBindPhaseAllocating));
    return OkStatus();
  }

  std::optional<NodeLockSpec> NodeLock() const override {
    return NodeLockSpec{std::string(hami::kNodeLockAnnotation), lock_expiry_};
  }

 private:
  const void* Key() const { return static_cast<const FilterHook*>(this); }

  std::unique_ptr<RequestData> Prepare(const model::PodInfo& pod) const {
    auto data = std::make_unique<RequestData>();
    data->request = hami::RequestOf(pod, names_);
    data->asks = data->request.AsksForVgpus();
    data->rules = hami::RulesOf(pod.annotations);
    data->node_policy = node_policy_;
    data->gpu_policy = gpu_policy_;
    // A pod's own policy wins when it names one HAMi knows.
    if (const std::optional<std::string_view> p = pod.annotations.Find(hami::kNodePolicyAnnotation)) {
      if (*p == "binpack") data->node_policy = NodePolicy::kBinpack;
      if (*p == "spread") data->node_policy = NodePolicy::kSpread;
    }
    if (const std::optional<std::string_view> p = pod.annotations.Find(hami::kGpuPolicyAnnotation)) {
      if (*p == "binpack") data->gpu_policy = GpuPolicy::kBinpack;
      if (*p == "spread") data->gpu_policy = GpuPolicy::kSpread;
    }
    data->now_unix = NowUnix();
    const auto asks = [](const hami::ContainerRequest& r) { return r.nums > 0; };
    if (!data->rules.numa_bind && !data->rules.NamesDevices() &&
        std::none_of(data->request.init.begin(), data->request.init.end(), asks) &&
        std::count_if(data->request.app.begin(), data->request.app.end(), asks) == 1) {
      data->one = &*std::find_if(data->request.app.begin(), data->request.app.end(), asks);
    }
    return data;
  }

  // The node's usable devices; false when it has none.
  bool DevicesOf(const model::NodeInfo& node, int64_t now_unix, NodeDevices& out) const {
    const std::optional<std::string_view> text = node.annotations.Find(hami::kRegisterAnnotation);
    if (!text.has_value() || !hami::DecodeRegister(*text, out) || out.size == 0) {
      return false;
    }
    const std::optional<std::string_view> handshake =
        node.annotations.Find(hami::kHandshakeAnnotation);
    // HAMi keeps a node whose handshake expired while the kubelet still
    // reports the count resource.
    return !(handshake.has_value() && hami::HandshakeStale(*handshake, now_unix) &&
             node.allocatable.Get(names_.count) <= 0);
  }

  // Whether the node's summary serves this request (kUnusable: the node has
  // no usable devices); kNo when the pod's rules name devices or the cache
  // did not summarize the node (decode it then).
  enum class Summarized : uint8_t { kNo, kUnusable, kYes };
  Summarized SummaryOf(const model::NodeInfo& node, const RequestData& data,
                       hami::VgpuSummary& out) const {
    if (data.rules.NamesDevices() || !summary_.Get(node, out) || !out.usable) {
      return Summarized::kNo;
    }
    return !out.registered || data.now_unix >= out.stale_from ? Summarized::kUnusable
                                                              : Summarized::kYes;
  }

  // The node's facts for this request; false when it has no usable devices.
  // From the node's summary when the pod's rules do not name devices and the
  // cache summarized the node, else from its annotations.
  bool FactsOf(const model::NodeInfo& node, const RequestData& data, NodeFacts& out) const {
    hami::VgpuSummary summary;
    switch (SummaryOf(node, data, summary)) {
      case Summarized::kUnusable:
        return false;
      case Summarized::kYes:
        hami::FactsOf(summary, out);
        return true;
      case Summarized::kNo:
        break;
    }
    NodeDevices devices;
    if (!DevicesOf(node, data.now_unix, devices)) {
      return false;
    }
    DecodedFactsOf(node, devices, data.rules, out);
    return true;
  }

  void DecodedFactsOf(const model::NodeInfo& node, const NodeDevices& devices,
                      const PodRules& rules, NodeFacts& out) const {
    NodeUse use;
    hami::UseOf(static_cast<const hami::VgpuNodeState*>(node.usage->states.Get(slot_)),
                devices.view(), use);
    hami::FactsOf(devices.view(), use, rules, out);
  }

  const ResourceNames names_;
  const NodePolicy node_policy_;
  const GpuPolicy gpu_policy_;
  const std::chrono::seconds lock_expiry_;
  const NodeStateSlot slot_;
  NodeSummarySlot<hami::VgpuSummary> summary_;  // set by the constructor only
};

struct SharedState {
  NodeStateSlot slot = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> NewHamiVgpu(const nlohmann::json& args,
                                              const PolicyContext& context) {
  SCHEDEXT_ASSIGN_OR_RETURN(
      ArgsReader reader,
      ArgsReader::Make(args, context.args_path,
                       {"nodeSchedulerPolicy", "gpuSchedulerPolicy", "resourceCountName",
                        "resourceMemoryName", "resourceMemoryPercentageName", "resourceCoreName",
                        "defaultMemory", "defaultCores", "nodeLockExpirySeconds"}));
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string_view> node_policy,
                            reader.Enum("nodeSchedulerPolicy", {"binpack", "spread"}));
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string_view> gpu_policy,
                            reader.Enum("gpuSchedulerPolicy", {"binpack", "spread"}));
  ResourceNames names;
  const std::pair<std::string_view, std::string ResourceNames::*> fields[] = {
      {"resourceCountName", &ResourceNames::count},
      {"resourceMemoryName", &ResourceNames::memory},
      {"resourceMemoryPercentageName", &ResourceNames::memory_percentage},
      {"resourceCoreName", &ResourceNames::cores},
  };
  for (const auto& [key, field] : fields) {
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> value, reader.String(key));
    if (value.has_value()) {
      if (value->empty()) {
        return reader.FieldError(key, "must not be empty");
      }
      names.*field = std::move(*value);
    }
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> default_memory,
                            reader.Int("defaultMemory", 0, std::numeric_limits<int32_t>::max()));
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> default_cores,
                            reader.Int("defaultCores", 0, 100));
  // HAMi's HAMI_NODELOCK_EXPIRE (its scheduler's --node-lock-timeout): the
  // same value on both sides of a mixed install, or locks expire unevenly.
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> lock_expiry,
                            reader.Int("nodeLockExpirySeconds", 1, 86400));
  names.default_memory = default_memory.value_or(0);
  names.default_cores = default_cores.value_or(0);
  const NodePolicy node = node_policy.value_or("binpack") == "spread" ? NodePolicy::kSpread
                                                                      : NodePolicy::kBinpack;
  const GpuPolicy gpu =
      gpu_policy.value_or("spread") == "binpack" ? GpuPolicy::kBinpack : GpuPolicy::kSpread;
  NodeStateSlot slot = std::numeric_limits<NodeStateSlot>::max();
  if (context.handle != nullptr) {
    PolicyHandle& handle = *context.handle;
    SCHEDEXT_ASSIGN_OR_RETURN(
        std::shared_ptr<SharedState> shared,
        handle.Shared<SharedState>(kName, [&]() -> StatusOr<std::shared_ptr<SharedState>> {
          auto made = std::make_shared<SharedState>();
          SCHEDEXT_ASSIGN_OR_RETURN(
              made->slot, handle.AddNodeAccounting(std::make_shared<hami::VgpuAccounting>()));
          handle.RequireCluster(std::string(kNeedsCluster));
          const NodeStateSlot made_slot = made->slot;
          PolicyHandle* h = &handle;
          // The first profile's count resource names the handshake exception.
          SCHEDEXT_RETURN_IF_ERROR(handle.AddGetRoute(
              "/hami/inspect",
              [h, made_slot, count = names.count](std::string_view name, std::string& body) {
                const std::shared_ptr<const ClusterView> view = h->Snapshot();
                return hami::HamiInspect(view.get(), made_slot, count, NowUnix(), name, body);
              }));
          handle.AddMetrics([h, made_slot, count = names.count](std::string& out) {
            const std::shared_ptr<const ClusterView> view = h->Snapshot();
            hami::AppendHamiMetrics(view.get(), made_slot, count, NowUnix(), out);
          });
          return made;
        }));
    slot = shared->slot;
  }
  return std::unique_ptr<Policy>(
      std::make_unique<HamiVgpu>(std::move(names), node, gpu,
                                 std::chrono::seconds(lock_expiry.value_or(hami::kNodeLockExpirySeconds)),
                                 slot, context.handle));
}

}  // namespace schedext::policy
