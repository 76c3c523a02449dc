// ExplainVerb: POST /<profile>/explain over the service's request resolution.
#include <span>
#include <string>

#include "schedext/explain/explain.h"
#include "schedext/explain/preemption.h"
#include "schedext/pipeline/explain.h"
#include "schedext/wire/encoder.h"

namespace schedext::explain {

int ExplainVerb::Handle(const server::ExtenderService& service, const pipeline::Profile& profile,
                        const wire::RequestBuffer& body, server::Scratch& s, std::string& out,
                        server::RequestSummary& summary) const {
  // A preemption body names its candidates in NodeNameTo(Meta)Victims; any
  // other body is explained as filter and prioritize would see it.
  const Status decoded = s.decoder.DecodePreemptionArgs(body, s.preemption);
  if (s.preemption.has_victims_map) {
    if (!decoded.ok()) {
      summary.error = "explain: " + decoded.message();
      wire::AppendErrorBody(summary.error, out);
      return 400;
    }
    const int status = service.DecidePreemption(profile, s, summary);
    if (status != 200) {
      summary.error = "explain: " + summary.error;
      wire::AppendErrorBody(summary.error, out);
      return status;
    }
    const PreemptionExplanation explanation = ExplainPreemption(
        profile, s.preemption, s.candidates,
        std::span<const pipeline::PreemptDecision>(s.decisions.data(), s.candidates.size()));
    AppendPreemptionJson(profile, explanation, out);
    summary.nodes_out = explanation.candidates.size();
    return 200;
  }
  if (!service.DecodeExtenderArgs(profile, body, s, out, summary, wire::AppendErrorBody)) {
    return 400;
  }
  const Status st = service.ResolveNodes(s);
  if (!st.ok()) {
    // Unlike filter, explain has no Error field of its own to put it in.
    summary.error = "explain: " + st.message();
    wire::AppendErrorBody(summary.error, out);
    return st.code() == StatusCode::kUnavailable ? 503 : 500;
  }
  pipeline::Explanation explanation;
  profile.Explain(s.args.pod, s.nodes, pipeline::ExplainScoring::kPassing, explanation);
  AppendExplanationJson(profile, s.args, s.node_index, explanation, out);
  summary.nodes_out = s.nodes.size();
  return 200;
}

}  // namespace schedext::explain
