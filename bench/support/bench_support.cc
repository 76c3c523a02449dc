#include "support/bench_support.h"

#include <cstdio>
#include <cstdlib>

#include "schedext/config/config.h"
#include "schedext/model/owned.h"
#include "schedext/policy/registry.h"

namespace schedext::bench {

BenchDirectory::BenchDirectory(std::string_view full_body)
    : cache_(std::make_unique<cluster::ClusterCache>()) {
  const wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(full_body);
  wire::RequestDecoder decoder;
  wire::ExtenderArgsView args;
  status_ = decoder.DecodeExtenderArgs(buffer, args);
  if (status_.ok() && args.mode != wire::NodeMode::kFullNodes) {
    status_ = InvalidArgumentError("BenchDirectory needs a full-mode body");
  }
  std::vector<cluster::InformerObject> nodes;
  nodes.reserve(args.nodes.size());
  for (const model::NodeInfo& node : args.nodes) {
    nodes.push_back({std::make_shared<const model::OwnedNode>(node), {}, {}});
  }
  size_ = nodes.size();
  cache_->OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
  cache_->OnReplace(cluster::ResourceKind::kPods, {});
}

Status BenchDirectory::Resolve(std::span<const std::string_view> names,
                               std::vector<const model::NodeInfo*>& out,
                               std::shared_ptr<const cluster::Snapshot>& snapshot) const {
  return cache_->Resolve(names, out, snapshot);
}

std::vector<std::shared_ptr<const pipeline::Profile>> DefaultProfiles() {
  auto config = config::LoadConfigText(config::EmbeddedDefaultConfig(), "embedded default");
  if (!config.ok()) {
    std::fprintf(stderr, "bench: %s\n", config.status().message().c_str());
    std::abort();
  }
  policy::Registry registry;
  if (Status s = policy::RegisterBuiltinPolicies(registry); !s.ok()) {
    std::fprintf(stderr, "bench: %s\n", s.message().c_str());
    std::abort();
  }
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles;
  for (size_t i = 0; i < config->profiles.size(); ++i) {
    auto profile = pipeline::Profile::Build(config->profiles[i], registry,
                                            "profiles[" + std::to_string(i) + "]");
    if (!profile.ok()) {
      std::fprintf(stderr, "bench: %s\n", profile.status().message().c_str());
      std::abort();
    }
    profiles.push_back(std::move(profile).value());
  }
  return profiles;
}

Payloads& Payloads::Get() {
  static Payloads* payloads = new Payloads();
  return *payloads;
}

const PayloadSet& Payloads::Set(size_t n) {
  if (set_ == nullptr || set_->max_nodes() < n) {
    set_ = std::make_unique<PayloadSet>(kSeed, n);
  }
  return *set_;
}

const wire::RequestBuffer& Payloads::Body(size_t n, Mode mode, Verb verb) {
  const std::string key = std::to_string(n) + "/" + std::to_string(static_cast<int>(mode)) + "/" +
                          std::to_string(static_cast<int>(verb));
  auto& slot = bodies_[key];
  if (slot == nullptr) {
    slot = std::make_unique<wire::RequestBuffer>(
        wire::RequestBuffer::CopyOf(Set(n).Body(n, mode, verb)));
  }
  return *slot;
}

const BenchDirectory& Payloads::Directory(size_t n) {
  auto& slot = directories_[n];
  if (slot == nullptr) {
    slot = std::make_unique<BenchDirectory>(Body(n, Mode::kFull, Verb::kFilter).view());
    if (!slot->status().ok()) {
      std::fprintf(stderr, "bench: directory: %s\n", slot->status().message().c_str());
      std::abort();
    }
  }
  return *slot;
}

wire::FilterResultView Prepared::FilterResult() const {
  wire::FilterResultView r;
  r.mode = args.mode;
  r.passing = passing;
  r.failed = failed;
  r.unresolvable = unresolvable;
  return r;
}

namespace {

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "bench: %s: %s\n", what, s.message().c_str());
    std::abort();
  }
}

}  // namespace

const Prepared& Prepare(size_t n, Mode mode) {
  static std::unordered_map<std::string, std::unique_ptr<Prepared>> cache;
  auto& slot = cache[std::to_string(n) + (mode == Mode::kFull ? "/full" : "/names")];
  if (slot != nullptr) {
    return *slot;
  }
  slot = std::make_unique<Prepared>();
  Prepared& p = *slot;
  const wire::RequestBuffer& body = Payloads::Get().Body(n, mode, Verb::kFilter);
  Check(p.decoder.DecodeExtenderArgs(body, p.args), "decode");
  if (mode == Mode::kFull) {
    for (const model::NodeInfo& node : p.args.nodes) {
      p.nodes.push_back(&node);
    }
  } else {
    std::shared_ptr<const cluster::Snapshot> keep_alive;
    Check(Payloads::Get().Directory(n).Resolve(p.args.node_names, p.nodes, keep_alive),
          "resolve");
    for (const model::NodeInfo* node : p.nodes) {
      if (node == nullptr) {
        std::fprintf(stderr, "bench: a generated name is missing from the directory\n");
        std::abort();
      }
    }
  }
  p.profile = DefaultProfiles().front();
  policy::RequestState state;
  Check(p.profile->RunFilters(p.args.pod, p.nodes, state, p.filter), "filter");
  pipeline::ScoreScratch score;
  Check(p.profile->RunScorers(p.args.pod, p.nodes, score, p.scores), "score");
  for (uint32_t k : p.filter.passed) {
    p.passing.push_back(mode == Mode::kFull ? p.args.nodes[k].raw_json : p.args.node_names[k]);
  }
  for (const auto& r : p.filter.failed) {
    p.failed.push_back({p.args.node_names[r.node], r.reason});
  }
  for (const auto& r : p.filter.unresolvable) {
    p.unresolvable.push_back({p.args.node_names[r.node], r.reason});
  }
  for (size_t i = 0; i < p.scores.size(); ++i) {
    p.host_scores.push_back({p.args.node_names[i], p.scores[i]});
  }
  return p;
}

}  // namespace schedext::bench
