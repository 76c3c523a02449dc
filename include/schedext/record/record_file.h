// The recording format: files named records-<UTC time>-<sequence>.jsonl in
// server.record.dir, one JSON object per line:
//
//   {"version": 1, "time": "2026-12-01T14:00:00.123456Z",
//    "verb": "filter" | "prioritize" | "preempt" | "bind",
//    "profile": "default", "status": 200, "latencyMicros": 57,
//    "request": "<the request body, as a JSON string>",
//    "reply": "<the reply body, as a JSON string>",
//    "nodes": null | [<v1.Node>],   // node-cache mode: the nodes the cache knew
//    "usage": null | {"<node>": {"requested": {"cpu": "1500m", "memory": "..."},
//                               "scoringRequested": {...}, "pods": 3,
//                               "states": {"GpuShare": {...}}}},
//    "victims": [<v1.Pod>],        // preempt, node-cache mode
//    "policyState": {"NodeLoad": {...}}}
//
// "nodes" holds what policies read of a node (metadata name, uid, labels,
// annotations; spec unschedulable, taints; status capacity, allocatable,
// conditions type and status), quantities in canonical integer form; for
// preempt, the candidate nodes. "usage" is the cluster cache's count per node
// (null without a cache) and "states" each stateful policy's per-node state
// (NodeUsage::states) whose accounting implements policy::NodeStateCodec, by
// its StateName. "victims" are the pods the cache resolved MetaVictims' UIDs
// to, with what the preempt hooks read (metadata name, namespace, uid, labels,
// annotations; spec nodeName, priority, priorityClassName, preemptionPolicy,
// containers' and init containers' requests and limits, overhead; status
// phase). "policyState" is what each policy::RequestStateRecorder of the
// profile saw, by policy name. Records written before "states" and
// "policyState" existed have neither: their stateful policies replay against
// empty state (Record::has_state). Bodies are strings so that any body, even
// one that is not valid JSON, stays one line.
//
// Thread-safety: pure functions.
#ifndef SCHEDEXT_RECORD_RECORD_FILE_H_
#define SCHEDEXT_RECORD_RECORD_FILE_H_

#include <chrono>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/node_info.h"
#include "schedext/model/owned.h"
#include "schedext/policy/recorded_state.h"
#include "schedext/record/recorder.h"
#include "schedext/status.h"

namespace schedext::record {

inline constexpr std::string_view kRecordFilePrefix = "records-";
inline constexpr std::string_view kRecordFileSuffix = ".jsonl";

// The line (newline included) for `exchange`, at `time`. `node_names` are the
// request's node names in order (for the usage of full-mode requests and the
// policies' states). `codecs` by slot encode NodeUsage::states (null or past
// the end: that slot is not recorded).
std::string EncodeRecord(const Exchange& exchange, std::span<const std::string_view> node_names,
                         std::chrono::system_clock::time_point time,
                         std::span<const policy::NodeStateCodec* const> codecs = {});

// One node's recorded state of one accounting.
struct RecordedNodeState {
  std::string node;
  std::string name;  // NodeStateCodec::StateName
  std::string json;  // NodeStateCodec::EncodeState
};

// One record read back.
struct Record {
  std::string file;  // path
  size_t line = 0;   // 1-based
  std::string time;
  std::string verb;
  std::string profile;
  int status = 0;
  int64_t latency_micros = 0;
  std::string request;
  std::string reply;
  bool has_nodes = false;  // "nodes" was recorded (node-cache mode)
  std::vector<std::unique_ptr<model::OwnedNode>> nodes;
  bool has_usage = false;  // "usage" was recorded (a cache was running)
  std::vector<std::pair<std::string, model::NodeUsage>> usage;
  // Owns the resource names the usage lists point to.
  std::deque<std::string> names;
  // The record has "policyState" (and its usage "states"): written by a
  // recorder that records stateful policies' state.
  bool has_state = false;
  std::vector<RecordedNodeState> node_states;
  // Policy name → CapturedState::Encode text.
  std::vector<std::pair<std::string, std::string>> policy_states;
  // preempt: the victims the cache had resolved.
  std::vector<std::unique_ptr<model::OwnedPod>> victims;

  // The recorded victim of `uid`, or nullptr.
  const model::PodInfo* FindVictim(std::string_view uid) const;

  // The recorded node `name`, or nullptr.
  const model::NodeInfo* FindNode(std::string_view name) const;
  // The recorded usage of `name`, or nullptr.
  const model::NodeUsage* FindUsage(std::string_view name) const;
};

// Parses one line of a recording. kInvalidArgument when it is not a record.
StatusOr<std::unique_ptr<Record>> DecodeRecord(std::string_view line);

// The recording files in `dir` (records-*.jsonl), oldest first (by name).
StatusOr<std::vector<std::string>> ListRecordFiles(const std::string& dir);

}  // namespace schedext::record

#endif  // SCHEDEXT_RECORD_RECORD_FILE_H_
