// Payload generator for the benchmarks: extender request bodies shaped like a
// real EKS cluster's (docs: ../shared/docs/performance.md §2), compact as Go's
// encoding/json writes them (struct field order, sorted map keys, <>& escaped
// as \u003c \u003e \u0026).
//
// Deterministic from the seed: node i depends only on (seed, i), and a
// PayloadSet builds its largest node list once and serves every smaller size as
// a prefix of it, so per-node content is identical at every size.
//
// Thread-safety: a built PayloadSet is immutable; const methods may run
// concurrently.
#ifndef SCHEDEXT_BENCH_GEN_PAYLOAD_GEN_H_
#define SCHEDEXT_BENCH_GEN_PAYLOAD_GEN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace schedext::bench {

enum class Mode { kFull, kNames };
enum class Verb { kFilter, kPrioritize, kPreempt };

// The node sizes the harness measures.
inline constexpr size_t kSizes[] = {100, 1000, 5000, 15000};

struct NodeStats {
  size_t count = 0;
  size_t min_bytes = 0;
  size_t median_bytes = 0;
  size_t max_bytes = 0;
  size_t tainted = 0;
  size_t unschedulable = 0;
  size_t gpu = 0;
  size_t min_name = 0;
  size_t max_name = 0;
  double mean_images = 0;
};

class PayloadSet {
 public:
  // Generates `max_nodes` nodes and the pending pod from `seed`.
  PayloadSet(uint64_t seed, size_t max_nodes);

  size_t max_nodes() const { return nodes_.size(); }
  const std::string& pod() const { return pod_; }
  std::string_view node_json(size_t i) const { return nodes_[i]; }
  std::string_view node_name(size_t i) const { return names_[i]; }

  // The request body for the first `n` nodes (n <= max_nodes()).
  // Filter and prioritize share the ExtenderArgs shape; preempt is an
  // ExtenderPreemptionArgs with every one of the `n` nodes a candidate carrying
  // one or two victims (full pods, or MetaPod UIDs in names mode).
  std::string Body(size_t n, Mode mode, Verb verb) const;

  NodeStats Stats(size_t n) const;

 private:
  uint64_t seed_;
  std::string pod_;
  std::vector<std::string> nodes_;
  std::vector<std::string> names_;
};

// Parses "full"/"names" and "filter"/"prioritize"/"preempt"; false when unknown.
bool ParseMode(std::string_view text, Mode& out);
bool ParseVerb(std::string_view text, Verb& out);

}  // namespace schedext::bench

#endif  // SCHEDEXT_BENCH_GEN_PAYLOAD_GEN_H_
