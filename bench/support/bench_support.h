// Shared pieces of the benchmarks: a synced ClusterCache holding the generated
// nodes, the default profile, and request bodies generated once.
//
// Thread-safety: BenchDirectory::Resolve may run concurrently once built; the
// payload cache is for one benchmark thread.
#ifndef SCHEDEXT_BENCH_SUPPORT_BENCH_SUPPORT_H_
#define SCHEDEXT_BENCH_SUPPORT_BENCH_SUPPORT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gen/payload_gen.h"
#include "schedext/cluster/cache.h"
#include "schedext/pipeline/profile.h"
#include "schedext/wire/decoder.h"
#include "schedext/wire/messages.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::bench {

// Hash of string_view usable for heterogeneous lookup.
struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// The node objects of a full-mode body, decoded once with the real decoder and
// loaded into a real (synced) ClusterCache, as the informers would: what
// node-cache requests resolve against.
class BenchDirectory final {
 public:
  // `full_body` is an ExtenderArgs body with "Nodes".
  explicit BenchDirectory(std::string_view full_body);
  Status status() const { return status_; }
  size_t size() const { return size_; }
  cluster::ClusterCache* cache() const { return cache_.get(); }

  Status Resolve(std::span<const std::string_view> names, std::vector<const model::NodeInfo*>& out,
                 std::shared_ptr<const cluster::Snapshot>& snapshot) const;

 private:
  std::unique_ptr<cluster::ClusterCache> cache_;
  size_t size_ = 0;
  Status status_;
};

// The profiles of the embedded default configuration (default: NodeHealth +
// TaintToleration). Aborts the process with a message when they do not build.
std::vector<std::shared_ptr<const pipeline::Profile>> DefaultProfiles();

// Generated bodies, kept for the life of the process. The node list is
// generated once for the largest size asked so far and bodies are prefixes of
// it (node i depends only on the seed and i, so growing it changes nothing).
class Payloads {
 public:
  static Payloads& Get();
  // The body for (n, mode, verb) in a padded buffer.
  const wire::RequestBuffer& Body(size_t n, Mode mode, Verb verb);
  // A directory holding the first `n` nodes (full-mode body decoded).
  const BenchDirectory& Directory(size_t n);

 private:
  const PayloadSet& Set(size_t n);
  std::unique_ptr<PayloadSet> set_;
  std::unordered_map<std::string, std::unique_ptr<wire::RequestBuffer>> bodies_;
  std::unordered_map<size_t, std::unique_ptr<BenchDirectory>> directories_;
};

// One request decoded, resolved, filtered and scored with the default
// profile, with the encoder inputs built from the outcome: what the encode and
// pipeline benchmarks start from. Holds its own decoder so the views stay valid.
struct Prepared {
  wire::RequestDecoder decoder;
  wire::ExtenderArgsView args;
  std::vector<const model::NodeInfo*> nodes;  // the request's nodes, resolved
  std::shared_ptr<const pipeline::Profile> profile;
  pipeline::FilterOutcome filter;
  std::vector<int64_t> scores;
  std::vector<std::string_view> passing;  // names or raw node JSON
  std::vector<wire::FailedNode> failed;
  std::vector<wire::FailedNode> unresolvable;
  std::vector<wire::HostScore> host_scores;
  wire::FilterResultView FilterResult() const;
};
// Built once per (n, mode) and kept; aborts on any failure.
const Prepared& Prepare(size_t n, Mode mode);

// The seed every benchmark body is generated from (schedext-gen's default too).
inline constexpr uint64_t kSeed = 1;

}  // namespace schedext::bench

#endif  // SCHEDEXT_BENCH_SUPPORT_BENCH_SUPPORT_H_
