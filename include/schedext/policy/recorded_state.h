// Recorded state: what a stateful policy adds to a record (server.record) so
// that `schedext replay` decides a recorded request against the state the live
// request saw, not against empty state.
//
// Two opt-in interfaces, each implemented next to the state it describes:
//   * NodeStateCodec, by a NodeAccounting (node_accounting.h): its per-node
//     state (NodeUsage::states) as JSON, written with each recorded node's
//     usage and decoded again into the replayed profile's slot of the
//     accounting of the same StateName (GpuShare's devices).
//   * RequestStateRecorder, by a Policy whose decisions read sources outside
//     the request, the node objects and the cache (NodeLoad: Prometheus
//     samples, the pods it saw bound). The request thread captures what the
//     request saw (pointers, cheap); the recorder's thread encodes it; replay
//     restores it into the RequestState the replayed hooks run with.
// They are separate from NodeAccounting and Policy so that a policy without
// such state implements nothing; AsNodeStateCodec / AsStateRecorder find them.
//
// JSON travels as text (one parse in the record's own codec) so that this
// header needs no JSON library.
//
// Thread-safety: every method is const and may be called from any thread; a
// CapturedState is immutable.
#ifndef SCHEDEXT_POLICY_RECORDED_STATE_H_
#define SCHEDEXT_POLICY_RECORDED_STATE_H_

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "schedext/model/node_state.h"
#include "schedext/policy/node_accounting.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/request_state.h"
#include "schedext/status.h"

namespace schedext::policy {

class NodeStateCodec {
 public:
  virtual ~NodeStateCodec() = default;
  // The key of this state in records ("GpuShare"); one per accounting.
  virtual std::string_view StateName() const = 0;
  // `state` as a JSON text.
  virtual std::string EncodeState(const model::NodeState& state) const = 0;
  // The state `json` (an EncodeState text) describes; null for one that
  // holds nothing. kInvalidArgument when `json` is not such a text.
  virtual StatusOr<std::shared_ptr<const model::NodeState>> DecodeState(
      std::string_view json) const = 0;
};

// What one request saw of a policy's own sources.
class CapturedState {
 public:
  virtual ~CapturedState() = default;
  // As a JSON text, limited to `nodes` (the request's nodes); the recorder's
  // thread calls it.
  virtual std::string Encode(std::span<const std::string_view> nodes) const = 0;
};

class RequestStateRecorder {
 public:
  virtual ~RequestStateRecorder() = default;
  // On the request thread, after the verb ran with `state`, for a sampled
  // request only: what the request saw (the policy's data in `state` when its
  // Pre* hook ran, else its sources now). Keep pointers, encode later. Null:
  // nothing to record.
  virtual std::shared_ptr<const CapturedState> Capture(const RequestState& state) const = 0;
  // Replay: makes this policy's next PreFilter / PreScore on `state` see
  // what `json` (a CapturedState::Encode text of this policy) recorded
  // instead of its live sources. kInvalidArgument when it does not decode.
  virtual Status Restore(std::string_view json, RequestState& state) const = 0;
};

// The codec `accounting` implements, or null.
const NodeStateCodec* AsNodeStateCodec(const NodeAccounting& accounting);
// The recorder `policy` implements, or null.
const RequestStateRecorder* AsStateRecorder(const Policy& policy);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_RECORDED_STATE_H_
