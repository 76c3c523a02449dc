#include "schedext/pipeline/profile.h"

#include <algorithm>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace schedext::pipeline {

namespace {

// How many nodes ahead the per-node loops prefetch a NodeInfo's lines. Nodes
// are scattered objects: without it each one is a cache miss the loop waits
// for, one after the other.
constexpr size_t kPrefetchAhead = 8;
constexpr size_t kCacheLine = 64;
// Nodes RunScorers hands each scorer at once: their first lines (a few KB)
// stay in the L1 from the first scorer to the last, and each ScoreNodes call
// spreads its per-call work over this many nodes.
constexpr size_t kScoreBlock = 64;
// PreemptDecision::needed_by has one bit per preempt hook.
constexpr size_t kMaxPreempters = 64;

}  // namespace

void Profile::PrefetchNode(policy::NodeSpan nodes, size_t i) const {
  if (i + kPrefetchAhead < nodes.size()) {
    const char* base = reinterpret_cast<const char*>(nodes[i + kPrefetchAhead]);
    for (size_t k = 0; k < prefetch_count_; ++k) {
      __builtin_prefetch(base + prefetch_offsets_[k]);
    }
  }
}

void FilterOutcome::Clear() {
  passed.clear();
  failed.clear();
  unresolvable.clear();
}

StatusOr<std::shared_ptr<const Profile>> Profile::Build(const config::ProfileConfig& config,
                                                        const policy::Registry& registry,
                                                        std::string_view path,
                                                        policy::PolicyHandle* handle,
                                                        std::shared_ptr<model::NameTable> names) {
  // Profile's constructor is private, so make_shared cannot reach it.
  std::shared_ptr<Profile> profile(new Profile());
  if (handle == nullptr) {
    profile->own_host_ = std::make_unique<policy::PolicyHost>();
    handle = profile->own_host_.get();
  }
  profile->names_ = names != nullptr ? std::move(names) : std::make_shared<model::NameTable>();
  profile->name_ = config.name;
  if (config.policies.empty()) {
    return InvalidArgumentError(std::string(path) + ".policies: at least one policy is required");
  }
  static const nlohmann::json kNoArgs = nlohmann::json::object();
  std::set<std::string, std::less<>> seen;
  // The node summary bytes this profile's policies register: one range, as
  // they are built one after the other.
  size_t summary_begin = handle->NodeSummaryBytesUsed();
  size_t summary_end = summary_begin;
  for (size_t i = 0; i < config.policies.size(); ++i) {
    const config::PolicyConfig& pc = config.policies[i];
    const std::string where = std::string(path) + ".policies[" + std::to_string(i) + "]";
    if (pc.weight <= 0) {
      return InvalidArgumentError(where + ".weight: must be a positive integer");
    }
    if (!seen.insert(pc.name).second) {
      return InvalidArgumentError(where + ": policy \"" + pc.name +
                                  "\" appears twice in the profile");
    }
    policy::PolicyContext context;
    context.args_path = where + ".args";
    context.handle = handle;
    context.names = profile->names_.get();
    const size_t summaries_before = handle->NodeSummaryBytesUsed();
    auto created = registry.Create(pc.name, pc.args ? *pc.args : kNoArgs, context);
    if (handle->NodeSummaryBytesUsed() != summaries_before) {
      summary_begin = std::min(summary_begin, summaries_before);
      summary_end = std::max(summary_end, handle->NodeSummaryBytesUsed());
    }
    if (!created.ok()) {
      // An unknown name is the registry's kNotFound, but to the caller it is
      // one more invalid field of the configuration.
      return InvalidArgumentError(where + ": " + created.status().message());
    }
    std::unique_ptr<policy::Policy> p = std::move(created).value();
    const policy::FilterHook* filter = p->AsFilter();
    const policy::ScoreHook* scorer = p->AsScorer();
    const policy::PreemptHook* preempter = p->AsPreempter();
    const policy::ReserveHook* reserver = p->AsReserver();
    if (filter == nullptr && scorer == nullptr && preempter == nullptr && reserver == nullptr) {
      return InvalidArgumentError(where + ": policy \"" + pc.name +
                                  "\" has nothing to do with these args (no filter, score or "
                                  "preempt hook)");
    }
    const std::string_view name = p->Name();
    if (filter != nullptr) {
      profile->filters_.push_back({name, filter});
    }
    if (scorer != nullptr) {
      profile->scorers_.push_back({name, scorer, pc.weight, scorer->NeedsNodeUsage()});
      profile->total_weight_ += pc.weight;
    }
    if (preempter != nullptr) {
      if (profile->preempters_.size() == kMaxPreempters) {
        return InvalidArgumentError(where + ": more than " + std::to_string(kMaxPreempters) +
                                    " policies with a preempt hook in one profile");
      }
      profile->preempters_.push_back({name, preempter});
    }
    if (reserver != nullptr) {
      profile->reservers_.push_back({name, reserver});
      if (std::optional<policy::NodeLockSpec> lock = reserver->NodeLock()) {
        profile->node_locks_.push_back(std::move(*lock));
      }
    }
    profile->node_fields_ = profile->node_fields_ | p->NodeFieldsRead();
    profile->policies_.push_back(std::move(p));
  }
  profile->prefetch_offsets_[profile->prefetch_count_++] = 0;
  if (summary_end > summary_begin) {
    const model::NodeInfo probe;
    const size_t at = static_cast<size_t>(reinterpret_cast<const char*>(probe.summary) -
                                          reinterpret_cast<const char*>(&probe));
    for (size_t line = (at + summary_begin) / kCacheLine * kCacheLine;
         line < at + summary_end && profile->prefetch_count_ < profile->prefetch_offsets_.size();
         line += kCacheLine) {
      if (line != 0) {
        profile->prefetch_offsets_[profile->prefetch_count_++] = static_cast<uint16_t>(line);
      }
    }
  }
  return std::shared_ptr<const Profile>(std::move(profile));
}

Status Profile::RunFilters(const model::PodInfo& pod, policy::NodeSpan nodes,
                           policy::RequestState& state, FilterOutcome& out) const {
  out.Clear();
  for (const NamedFilter& f : filters_) {
    Status s = f.hook->PreFilter(state, pod);
    if (!s.ok()) {
      return InternalError("policy " + std::string(f.policy) + ": prefilter: " + s.message());
    }
  }
  out.passed.reserve(nodes.size());
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    PrefetchNode(nodes, i);
    const model::NodeInfo& node = *nodes[i];
    policy::Verdict verdict;
    for (const NamedFilter& f : filters_) {
      verdict = f.hook->Filter(state, pod, node);
      if (!verdict.ok()) {
        if (verdict.code == policy::Verdict::Code::kError) {
          return InternalError("policy " + std::string(f.policy) + ": node " +
                               std::string(node.name) + ": " + std::string(verdict.reason));
        }
        break;
      }
    }
    switch (verdict.code) {
      case policy::Verdict::Code::kSuccess:
        out.passed.push_back(i);
        break;
      case policy::Verdict::Code::kUnschedulable:
        out.failed.push_back({i, verdict.reason});
        break;
      case policy::Verdict::Code::kUnschedulableAndUnresolvable:
      case policy::Verdict::Code::kError:  // unreachable: returned above
        out.unresolvable.push_back({i, verdict.reason});
        break;
    }
  }
  return OkStatus();
}

Status Profile::MissingUsage(const WeightedScorer& scorer, const model::NodeInfo& node) {
  return InternalError("policy " + std::string(scorer.policy) +
                       ": prescore: needs the cluster cache (no Kubernetes API connection): "
                       "node \"" +
                       std::string(node.name) + "\" has no pod usage");
}

Status Profile::RunScorers(const model::PodInfo& pod, policy::NodeSpan nodes,
                           ScoreScratch& scratch, std::vector<int64_t>& out) const {
  const size_t n = nodes.size();
  out.assign(n, 0);
  if (scorers_.empty() || n == 0) {
    return OkStatus();
  }
  scratch.raw.resize(scorers_.size() * n);
  // Every PreScore first (each keeps its state under its own slot), then the
  // raw scores into one row per scorer, a block of nodes at a time: a node's
  // data is loaded from memory once for all the scorers instead of once per
  // scorer, which at thousands of nodes is a cache miss each time. Then each
  // row is normalised. When a PreScore fails, the scorers before it are
  // still scored, normalised and range-checked first, so the error reported
  // is the one scoring them one by one would meet first.
  size_t ready = 0;
  Status prescore = OkStatus();
  for (; ready < scorers_.size(); ++ready) {
    const WeightedScorer& sc = scorers_[ready];
    Status s = sc.hook->PreScore(scratch.state, pod, nodes);
    if (!s.ok()) {
      prescore = InternalError("policy " + std::string(sc.policy) + ": prescore: " + s.message());
      break;
    }
  }
  // A scorer that needs node usage fails as its PreScore would have on the
  // first node without: the scorers before it are still scored.
  size_t usage_from = 0;
  while (usage_from < ready && !scorers_[usage_from].needs_usage) {
    ++usage_from;
  }
  // Block by block: one pass loads the block's nodes (prefetching ahead)
  // and finds a node without usage, then each scorer scores the block with
  // one ScoreNodes call while its nodes are still in the L1.
  const auto score_range = [&](size_t from, size_t to, size_t scorers) {
    for (size_t p = 0; p < scorers; ++p) {
      scorers_[p].hook->ScoreNodes(
          scratch.state, pod, nodes.subspan(from, to - from),
          std::span<int64_t>(scratch.raw.data() + p * n + from, to - from));
    }
  };
  for (size_t begin = 0; begin < n; begin += kScoreBlock) {
    const size_t end = std::min(n, begin + kScoreBlock);
    size_t missing = end;  // the block's first node without usage, when it matters
    for (size_t i = begin; i < end; ++i) {
      PrefetchNode(nodes, i);
      if (missing == end && usage_from < ready && nodes[i]->usage == nullptr) {
        missing = i;
      }
    }
    score_range(begin, missing, ready);
    if (missing < end) {
      prescore = MissingUsage(scorers_[usage_from], *nodes[missing]);
      ready = usage_from;
      score_range(missing, end, ready);
    }
  }
  for (size_t p = 0; p < ready; ++p) {
    const WeightedScorer& sc = scorers_[p];
    std::span<int64_t> row(scratch.raw.data() + p * n, n);
    sc.hook->Normalize(scratch.state, row);
    for (size_t i = 0; i < n; ++i) {
      if (row[i] < 0 || row[i] > policy::kMaxNodeScore) {
        return InternalError("policy " + std::string(sc.policy) + ": normalized score " +
                             std::to_string(row[i]) + " for node " + std::string(nodes[i]->name) +
                             " is outside [0, 100]");
      }
    }
  }
  if (!prescore.ok()) {
    return prescore;
  }
  // Pass 3 per node: weighted mean onto [0, kMaxExtenderScore], rounded half up.
  // Weights are <= 1000 per policy and scores <= 100, so no overflow is possible.
  for (size_t i = 0; i < n; ++i) {
    int64_t total = 0;
    for (size_t p = 0; p < scorers_.size(); ++p) {
      total += scorers_[p].weight * scratch.raw[p * n + i];
    }
    out[i] = ExtenderScore(total, total_weight_);
  }
  return OkStatus();
}

Status Profile::RunPreempt(const model::PodInfo& preemptor,
                           std::span<const PreemptCandidate> candidates,
                           policy::RequestState& state, std::vector<PreemptDecision>& out) const {
  out.resize(candidates.size());
  std::vector<uint8_t> hook_needed;
  for (const NamedFilter& f : filters_) {
    if (f.hook->EvictionCanHelp()) {
      continue;
    }
    Status s = f.hook->PreFilter(state, preemptor);
    if (!s.ok()) {
      return InternalError("policy " + std::string(f.policy) + ": prefilter: " + s.message());
    }
  }
  for (size_t c = 0; c < candidates.size(); ++c) {
    const PreemptCandidate& candidate = candidates[c];
    PreemptDecision& decision = out[c];
    decision.keep = true;
    decision.needed.assign(candidate.victims.size(), 1);
    decision.needed_by.assign(candidate.victims.size(), 0);
    decision.dropped_by = {};
    decision.dropped_by_preempt = false;
    decision.reason.clear();
    if (candidate.node == nullptr) {
      continue;
    }
    for (const NamedFilter& f : filters_) {
      if (f.hook->EvictionCanHelp()) {
        continue;
      }
      policy::Verdict verdict = f.hook->Filter(state, preemptor, *candidate.node);
      if (verdict.code == policy::Verdict::Code::kError) {
        return InternalError("policy " + std::string(f.policy) + ": node " +
                             std::string(candidate.node->name) + ": " +
                             std::string(verdict.reason));
      }
      if (!verdict.ok()) {
        decision.keep = false;
        decision.dropped_by = f.policy;
        decision.reason.assign(verdict.reason);
        break;
      }
    }
    if (!preempters_.empty()) {
      std::fill(decision.needed.begin(), decision.needed.end(), 0);
    }
    for (size_t h = 0; decision.keep && h < preempters_.size(); ++h) {
      hook_needed.assign(candidate.victims.size(), 1);
      policy::Verdict verdict = preempters_[h].hook->SelectVictims(
          state, preemptor, *candidate.node, candidate.victims, hook_needed);
      if (verdict.code == policy::Verdict::Code::kError) {
        return InternalError("policy " + std::string(preempters_[h].policy) + ": node " +
                             std::string(candidate.node->name) + ": " +
                             std::string(verdict.reason));
      }
      decision.keep = verdict.ok();
      if (!decision.keep) {
        decision.dropped_by = preempters_[h].policy;
        decision.dropped_by_preempt = true;
        decision.reason.assign(verdict.reason);
        break;
      }
      for (size_t v = 0; v < hook_needed.size(); ++v) {
        if (hook_needed[v] != 0) {
          decision.needed[v] = 1;
          decision.needed_by[v] |= uint64_t{1} << h;
        }
      }
    }
    if (decision.keep &&
        std::none_of(decision.needed.begin(), decision.needed.end(),
                     [](uint8_t v) { return v != 0; })) {
      decision.needed.assign(candidate.victims.size(), 1);
    }
  }
  return OkStatus();
}

std::vector<std::string_view> Profile::preempter_names() const {
  std::vector<std::string_view> names;
  names.reserve(preempters_.size());
  for (const NamedPreempter& p : preempters_) names.push_back(p.policy);
  return names;
}

std::optional<std::string> Profile::CheckFit(const model::PodInfo& pod,
                                             const model::NodeInfo& node) const {
  policy::RequestState state;
  for (const NamedFilter& f : filters_) {
    if (!f.hook->EvictionCanHelp()) {
      continue;
    }
    if (Status s = f.hook->PreFilter(state, pod); !s.ok()) {
      return "policy " + std::string(f.policy) + ": " + s.message();
    }
    // The reason may point into `state`: copied before it goes.
    if (policy::Verdict v = f.hook->Filter(state, pod, node); !v.ok()) {
      return std::string(v.reason);
    }
  }
  return std::nullopt;
}

std::optional<std::string> Profile::Reserve(const model::PodInfo& pod,
                                            const model::NodeInfo& node,
                                            policy::PodAnnotations& out,
                                            size_t* reserved) const {
  const size_t before = out.size();
  size_t done = 0;
  for (const NamedReserver& r : reservers_) {
    if (Status s = r.hook->Reserve(pod, node, out); !s.ok()) {
      out.resize(before);
      if (reserved != nullptr) {
        *reserved = done;
      }
      return std::string(r.policy) + ": " + s.message();
    }
    ++done;
  }
  if (reserved != nullptr) {
    *reserved = done;
  }
  return std::nullopt;
}

void Profile::Unreserve(const model::PodInfo& pod, std::string_view node, size_t reserved) const {
  for (size_t i = std::min(reserved, reservers_.size()); i > 0; --i) {
    reservers_[i - 1].hook->Unreserve(pod, node);
  }
}

}  // namespace schedext::pipeline
