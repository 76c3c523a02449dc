// Verdict: what one filter says about one node. "Does not fit" is a verdict,
// not an error; only kError fails the request.
#ifndef SCHEDEXT_POLICY_VERDICT_H_
#define SCHEDEXT_POLICY_VERDICT_H_

#include <string_view>

namespace schedext::policy {

struct Verdict {
  enum class Code {
    kSuccess,
    // The node is rejected; preemption may still try it (FailedNodes).
    kUnschedulable,
    // The node is rejected and preemption cannot help (FailedAndUnresolvableNodes).
    kUnschedulableAndUnresolvable,
    // An internal failure: the whole request fails with this reason.
    kError,
  };

  Code code = Code::kSuccess;
  // Short and stable: it lands in the pod's FailedScheduling event, where the
  // scheduler counts nodes per distinct text. It must point at text that
  // outlives the request (a literal, or text the policy owns).
  std::string_view reason;

  bool ok() const { return code == Code::kSuccess; }

  static constexpr Verdict Success() { return {}; }
  static constexpr Verdict Unschedulable(std::string_view reason) {
    return {Code::kUnschedulable, reason};
  }
  static constexpr Verdict Unresolvable(std::string_view reason) {
    return {Code::kUnschedulableAndUnresolvable, reason};
  }
  static constexpr Verdict Error(std::string_view reason) { return {Code::kError, reason}; }
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_VERDICT_H_
