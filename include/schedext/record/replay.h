// Replay: runs recorded requests (record_file.h) through a configuration's
// profiles and reports what would change.
//
// Each filter, prioritize and preempt record is decoded again, its nodes are
// the ones recorded (full mode: from the request, node-cache mode and preempt:
// the recorded node objects; unknown names stay unknown) with the recorded
// usage, and the profile of the same name decides with the verbs' own loops
// (Profile::RunFilters, RunScorers, RunPreempt). Stateful policies see what
// the live request saw: each recorded node state is decoded by the new
// configuration's accounting of the same name into its slot, and each
// recorded policy state is restored into the request's RequestState
// (policy/recorded_state.h). Records without state (written before it was
// recorded) replay against empty state and are counted (without_state).
// filter: a node whose verdict changed is attributed to the policy that now
// rejects it first; prioritize: scores and top nodes; preempt: the victims
// kept per candidate node, or that it is dropped now. bind records are counted
// but not replayed: bind has side effects (pod annotations, a Binding).
//
// Thread-safety: pure functions over their arguments.
#ifndef SCHEDEXT_RECORD_REPLAY_H_
#define SCHEDEXT_RECORD_REPLAY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "schedext/pipeline/profile.h"
#include "schedext/status.h"

namespace schedext::record {

// One replayed request.
struct RequestReplay {
  std::string where;  // "<file>:<line>"
  std::string verb;
  std::string profile;
  std::string pod;  // namespace/name
  bool replayed = false;
  std::string skipped;  // why not, when !replayed
  bool changed = false;
  bool state_recorded = false;  // the record carries the policies' state
  // The differences, one line each ("n1: pass -> unresolvable (NodeLabel: ...)").
  std::vector<std::string> diff;
  int64_t recorded_micros = 0;
  int64_t replay_micros = 0;  // the profile's loops only (no decode or encode)
};

struct ReplayReport {
  size_t records = 0;
  size_t replayed = 0;
  size_t changed = 0;
  std::map<std::string, size_t> by_verb;  // replayed, per verb
  std::map<std::string, size_t> changed_by_verb;
  std::map<std::string, size_t> skipped;  // per reason
  size_t unreadable = 0;                  // lines that are not records
  size_t decisions_changed = 0;           // node verdicts (filter) that differ
  size_t newly_rejected = 0;
  std::map<std::string, size_t> newly_rejected_by;  // per policy that now rejects
  size_t newly_accepted = 0;
  std::map<std::string, size_t> newly_accepted_from;  // per recorded reason
  size_t outcome_changed = 0;  // a request that now fails, or no longer fails
  size_t prioritize = 0;       // prioritize requests replayed
  size_t top_changed = 0;      // ... whose best-scored node(s) changed
  size_t scores = 0;           // node scores compared
  size_t scores_changed = 0;
  int64_t max_shift = 0;
  int64_t total_shift = 0;              // Σ |shift|
  size_t preempt = 0;                   // preempt requests replayed
  size_t preempt_nodes = 0;             // candidate nodes compared
  size_t preempt_nodes_changed = 0;     // ... whose victims changed, or dropped / kept now
  size_t without_state = 0;             // replayed records that carry no policy state
  std::vector<std::string> state_errors;  // "<where>: <why>" for states that do not decode
  std::vector<RequestReplay> requests;  // every record, in file order
};

// Replays every record of the recording files in `dir` through `profiles`,
// whose policies registered `accountings` (by slot: PolicyHost::accountings()
// of the host the profiles were built with; empty: recorded node states are
// not restored). Fails only when `dir` cannot be read; bad lines are counted
// (unreadable).
StatusOr<ReplayReport> ReplayDirectory(
    const std::string& dir, const std::vector<std::shared_ptr<const pipeline::Profile>>& profiles,
    std::span<const std::shared_ptr<const policy::NodeAccounting>> accountings = {});

// The report for people; with `diff`, each changed request's differences.
std::string FormatReplayText(const ReplayReport& report, bool diff);
// The report as JSON (every request with its differences).
std::string FormatReplayJson(const ReplayReport& report);

}  // namespace schedext::record

#endif  // SCHEDEXT_RECORD_REPLAY_H_
