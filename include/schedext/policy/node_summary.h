// Node summaries: a few bytes a policy derives from a node — and from what is
// counted on it — each time the cluster cache stores the node, so that its
// per-node hooks read one cache line instead of the node's scattered blocks
// (label tags, capacity scalars, usage, policy states).
//
// Why: a 5,000-node request's per-node loops are bound by memory latency. A
// NodeInfo with its label, taint, resource and state blocks spans 8-10 cache
// lines in tens of MB of heap; what one policy needs of it is usually a few
// numbers. Summaries put those in the NodeInfo's first lines
// (NodeInfo::summary), next to the name the lookup has just compared, so a
// request's working set is a few hundred KB and stays in the L2.
//
// Contract:
//   * A policy registers a summary in its factory (AddNodeSummary below); it
//     gets a NodeSummarySlot<T>, T trivially copyable and small.
//   * The cache calls the summarizer for every node entry it (re)builds — a
//     node event, a pod counted or uncounted, a policy state refreshed — with
//     the NodeInfo complete (usage and states set), under its mutex
//     (node_accounting.h's rules: quick, no I/O, no cache calls).
//   * The summary must be a pure function of that NodeInfo and its usage.
//     A hook reads it with slot.Get(node, out); when it answers false (a
//     full-mode node from the request body, a node built by a test, no room
//     left, schedext without a cache) the hook computes the same T from the
//     node itself. Decide from T in one place and both paths agree by
//     construction.
//
// Thread-safety: registration in the factory only; Get from any thread (the
// bytes are immutable once a snapshot publishes the node).
#ifndef SCHEDEXT_POLICY_NODE_SUMMARY_H_
#define SCHEDEXT_POLICY_NODE_SUMMARY_H_

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "schedext/model/node_info.h"

namespace schedext::policy {

// Writes a node's summary into `out` (exactly the registered size, zeroed).
class NodeSummarizer {
 public:
  virtual ~NodeSummarizer() = default;
  virtual void Summarize(const model::NodeInfo& node, std::span<std::byte> out) const = 0;
};

// One registered summary: where it lives in NodeInfo::summary, in whose
// layout (the registering host's identity), and who writes it.
struct NodeSummaryRegistration {
  size_t offset = 0;
  size_t size = 0;
  const void* layout = nullptr;
  std::shared_ptr<const NodeSummarizer> summarizer;
};

// Writes every registered summary of `node` and marks them as written for
// its current usage and their layout (the cluster cache calls this for each
// entry it builds). With no registrations, or registrations of more than one
// layout, the node is left without a summary.
void WriteNodeSummaries(std::span<const NodeSummaryRegistration> summaries,
                        model::NodeInfo& node);

// A policy's handle on its summary of type T.
template <typename T>
class NodeSummarySlot {
  static_assert(std::is_trivially_copyable_v<T>, "a node summary is copied as bytes");

 public:
  // No slot: Get always answers false.
  NodeSummarySlot() = default;
  NodeSummarySlot(size_t offset, const void* layout) : offset_(offset), layout_(layout) {}

  // Copies the node's summary into `out`; false when the node has none of
  // this slot's layout (then compute it from the node). Compiles to plain
  // loads.
  bool Get(const model::NodeInfo& node, T& out) const {
    if (offset_ == kNone || !node.has_summary() || node.summary_layout != layout_) {
      return false;
    }
    std::memcpy(&out, node.summary + offset_, sizeof(T));
    return true;
  }
  bool present() const { return offset_ != kNone; }

 private:
  static constexpr size_t kNone = ~size_t{0};
  size_t offset_ = kNone;
  const void* layout_ = nullptr;
};

// Summarizes with a function object T(const NodeInfo&).
template <typename T, typename Fn>
class FunctionSummarizer final : public NodeSummarizer {
 public:
  explicit FunctionSummarizer(Fn fn) : fn_(std::move(fn)) {}
  void Summarize(const model::NodeInfo& node, std::span<std::byte> out) const override {
    const T summary = fn_(node);
    std::memcpy(out.data(), &summary, sizeof(T));
  }

 private:
  Fn fn_;
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_NODE_SUMMARY_H_
