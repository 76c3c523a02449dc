// What NodeLoad keeps in a sampled request's record (RequestStateRecorder,
// policy/recorded_state.h) and reads back in `schedext replay`: the load
// snapshot and the bind ledger as the request read them. Times are recorded
// relative to the request's `now`, in nanoseconds of the steady clock, so
// that replay compares ages exactly as the request did:
//   {"sampleAgeNanos": 1500000000 | null (no snapshot),
//    "nodes": {"n1": {"cpu": 10, "cpuStddev": null, "memory": 25,
//                     "memoryStddev": null}},
//    "binds": [{"node": "n2", "cpuMillis": 1500, "memoryBytes": 0,
//               "boundNanosAgo": 2000000000}]}
// limited to the request's nodes. Called by the NodeLoad policy (nodeload.cc).
#ifndef SCHEDEXT_POLICY_BUILTIN_NODELOAD_RECORDED_LOAD_H_
#define SCHEDEXT_POLICY_BUILTIN_NODELOAD_RECORDED_LOAD_H_

#include <memory>
#include <string_view>

#include "policy/builtin/nodeload/bind_ledger.h"
#include "policy/builtin/nodeload/load_poller.h"
#include "schedext/policy/recorded_state.h"
#include "schedext/policy/request_state.h"
#include "schedext/status.h"

namespace schedext::policy::nodeload {

// Sources a replay restored (RequestStateRecorder::Restore), read by Prepare
// instead of the live ones.
struct RestoredSources final : StateData {
  std::shared_ptr<const LoadSnapshot> snapshot;  // null: there was none
  std::shared_ptr<const BindLedger::View> binds;
  Clock::time_point now;
};

// The sources a request read (`snapshot` null: none), to encode on demand.
std::shared_ptr<const CapturedState> CaptureLoad(std::shared_ptr<const LoadSnapshot> snapshot,
                                                 std::shared_ptr<const BindLedger::View> binds,
                                                 Clock::time_point now);

// A record's text back as sources; kInvalidArgument "NodeLoad state: ..." when
// it is not the format above. Its `now` is a fixed instant: only ages count.
StatusOr<std::unique_ptr<RestoredSources>> DecodeCapturedLoad(std::string_view text);

}  // namespace schedext::policy::nodeload

#endif  // SCHEDEXT_POLICY_BUILTIN_NODELOAD_RECORDED_LOAD_H_
