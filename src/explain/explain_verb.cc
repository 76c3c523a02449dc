// ExplainVerb: POST /<profile>/explain over the service's request resolution.
#include <string>

#include "schedext/explain/explain.h"
#include "schedext/pipeline/explain.h"
#include "schedext/wire/encoder.h"

namespace schedext::explain {

int ExplainVerb::Handle(const server::ExtenderService& service, const pipeline::Profile& profile,
                        const wire::RequestBuffer& body, server::Scratch& s, std::string& out,
                        server::RequestSummary& summary) const {
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
