// Hand-written encoders for the extender replies. They append to a reused
// std::string, use the exact Go key names and write every key of the message,
// null where unused, as kube-scheduler's own encoding/json would.
//
// Thread-safety: pure functions.
#ifndef SCHEDEXT_WIRE_ENCODER_H_
#define SCHEDEXT_WIRE_ENCODER_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/wire/messages.h"

namespace schedext::wire {

// Appends `text` as a JSON string literal (quotes included), escaping '"', '\\'
// and control characters. Other bytes are copied as they are.
void AppendJsonString(std::string_view text, std::string& out);

// ExtenderFilterResult with Error "". kFullNodes: {"Nodes":{"metadata":{},
// "items":[<raw passing nodes>]},"NodeNames":null,...}; kNodeNames and kNone:
// {"Nodes":null,"NodeNames":[...],...}. Empty failure maps are written as {}.
void AppendFilterResult(const FilterResultView& result, std::string& out);

// Bytes a reply takes from elsewhere instead of holding them: inserted into
// the reply text before its byte `at`.
struct ReplySplice {
  size_t at = 0;
  std::string_view bytes;
};

// AppendFilterResult for a writer that can send a reply in pieces. With
// `splices`, kFullNodes does not copy the passing nodes into `out`: each run
// of them is appended to `splices` (offsets into `out`), a run being nodes
// that lie in the same buffer separated by exactly one ',' (the request body's
// own separator, so a run is a single span of it). kNodeNames with
// names_quoted splices the same way the runs of names that are long enough
// to be worth a write buffer of their own (from a run's first opening quote to
// its last closing quote). The reply is then `out` with every splice inserted
// (SplicedSize / AppendSpliced), byte for byte what AppendFilterResult writes;
// the spans must outlive its writing. Other modes, and `splices` null, write
// `out` alone.
void AppendFilterResult(const FilterResultView& result, std::string& out,
                        std::vector<ReplySplice>* splices);

// The size of `text` with `splices` inserted.
size_t SplicedSize(std::string_view text, std::span<const ReplySplice> splices);

// Appends `text` with `splices` inserted (offsets relative to `text`) to `out`.
void AppendSpliced(std::string_view text, std::span<const ReplySplice> splices,
                   std::string& out);

// ExtenderFilterResult carrying only an error:
// {"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":"..."}
void AppendFilterError(std::string_view error, std::string& out);

// HostPriorityList: [{"Host":"n1","Score":10},...] ([] when empty).
void AppendHostPriorityList(std::span<const HostScore> scores, std::string& out);

// The same, where `hosts_quoted` says every host needs no escaping and its
// buffer holds it between '"' bytes (ExtenderArgsView::names_quoted): each
// host's literal is then copied whole, without looking for escapes.
void AppendHostPriorityList(std::span<const HostScore> scores, std::string& out,
                            bool hosts_quoted);

// Rewrites one score per request node into the shortest list that leaves
// kube-scheduler's choice as it was: every score less the lowest, and only the
// hosts left above zero, in their order. kube-scheduler adds score x weight to
// each node's total and adds nothing for a host the list leaves out
// (prioritizeNodes), so this lowers every total by the same amount and orders
// them as before. Ties: 1.26 picks among equal totals at random; 1.37 draws
// its random tie-breaker only for hosts some extender listed, so a host left
// out here loses a tie to one this list prefers. The Prioritize verb calls it
// before AppendHostPriorityList, with the protocol's 0..10 scores. Allocates
// nothing.
void KeepScoresAboveLowest(std::vector<HostScore>& scores);

// ExtenderPreemptionResult: {"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u"}],
// "NumPDBViolations":0}}} ({} when there are no nodes).
void AppendPreemptionResult(std::span<const MetaVictimsEntry> nodes, std::string& out);

// ExtenderBindingResult: {"Error":"..."} ("" on success).
void AppendBindingResult(std::string_view error, std::string& out);

// The body of a non-200 reply: {"Error":"..."}.
void AppendErrorBody(std::string_view error, std::string& out);

}  // namespace schedext::wire

#endif  // SCHEDEXT_WIRE_ENCODER_H_
