// Hand-written encoders for the extender replies. They append to a reused
// std::string, use the exact Go key names and write every key of the message,
// null where unused, as kube-scheduler's own encoding/json would.
//
// Thread-safety: pure functions.
#ifndef SCHEDEXT_WIRE_ENCODER_H_
#define SCHEDEXT_WIRE_ENCODER_H_

#include <span>
#include <string>
#include <string_view>

#include "schedext/wire/messages.h"

namespace schedext::wire {

// Appends `text` as a JSON string literal (quotes included), escaping '"', '\\'
// and control characters. Other bytes are copied as they are.
void AppendJsonString(std::string_view text, std::string& out);

// ExtenderFilterResult with Error "". kFullNodes: {"Nodes":{"metadata":{},
// "items":[<raw passing nodes>]},"NodeNames":null,...}; kNodeNames and kNone:
// {"Nodes":null,"NodeNames":[...],...}. Empty failure maps are written as {}.
void AppendFilterResult(const FilterResultView& result, std::string& out);

// ExtenderFilterResult carrying only an error:
// {"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":"..."}
void AppendFilterError(std::string_view error, std::string& out);

// HostPriorityList: [{"Host":"n1","Score":10},...] ([] when empty).
void AppendHostPriorityList(std::span<const HostScore> scores, std::string& out);

// ExtenderPreemptionResult: {"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u"}],
// "NumPDBViolations":0}}} ({} when there are no nodes).
void AppendPreemptionResult(std::span<const MetaVictimsEntry> nodes, std::string& out);

// ExtenderBindingResult: {"Error":"..."} ("" on success).
void AppendBindingResult(std::string_view error, std::string& out);

// The body of a non-200 reply: {"Error":"..."}.
void AppendErrorBody(std::string_view error, std::string& out);

}  // namespace schedext::wire

#endif  // SCHEDEXT_WIRE_ENCODER_H_
