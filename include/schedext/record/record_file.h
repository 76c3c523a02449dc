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
//                               "scoringRequested": {...}, "pods": 3}}}
//
// "nodes" holds what policies read of a node (metadata name, uid, labels,
// annotations; spec unschedulable, taints; status capacity, allocatable,
// conditions type and status), quantities in canonical integer form; "usage"
// is the cluster cache's count per node (null without a cache); stateful
// policies' per-node state (NodeUsage::states, e.g. GpuShare's devices) is not
// recorded, so such policies replay against empty state. Bodies are
// strings so that any body, even one that is not valid JSON, stays one line.
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
#include "schedext/record/recorder.h"
#include "schedext/status.h"

namespace schedext::record {

inline constexpr std::string_view kRecordFilePrefix = "records-";
inline constexpr std::string_view kRecordFileSuffix = ".jsonl";

// The line (newline included) for `exchange`, at `time`. `node_names` are the
// request's node names in order (for the usage of full-mode requests).
std::string EncodeRecord(const Exchange& exchange, std::span<const std::string_view> node_names,
                         std::chrono::system_clock::time_point time);

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
