// ExtenderService::Explain: POST /<profile>/explain. The body is a filter or
// prioritize body (either node mode); nodes are resolved exactly as the verbs
// resolve them (ResolveNodes), and the profile explains them
// (Profile::Explain). Kept out of service.cc: the verbs never come here.
#include <string>

#include "schedext/explain/explain.h"
#include "schedext/pipeline/explain.h"
#include "schedext/server/service.h"
#include "schedext/wire/encoder.h"

namespace schedext::server {

int ExtenderService::Explain(const pipeline::Profile& profile, const wire::RequestBuffer& body,
                             Scratch& s, std::string& out, RequestSummary& summary) const {
  if (!DecodeExtenderArgs(profile, body, s, out, summary, wire::AppendErrorBody)) {
    return 400;
  }
  const Status st = ResolveNodes(s);
  if (!st.ok()) {
    // Unlike filter, explain has no Error field of its own to put it in.
    summary.error = "explain: " + st.message();
    wire::AppendErrorBody(summary.error, out);
    return st.code() == StatusCode::kUnavailable ? 503 : 500;
  }
  pipeline::Explanation explanation;
  profile.Explain(s.args.pod, s.nodes, pipeline::ExplainScoring::kPassing, explanation);
  explain::AppendExplanationJson(profile, s.args, s.node_index, explanation, out);
  summary.nodes_out = s.nodes.size();
  return 200;
}

}  // namespace schedext::server
