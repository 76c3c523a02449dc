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
  Status st = s.decoder.DecodeExtenderArgs(body, s.args);
  if (!st.ok()) {
    summary.error = st.message();
    wire::AppendErrorBody(summary.error, out);
    return 400;
  }
  summary.pod_namespace = s.args.pod.namespace_name;
  summary.pod_name = s.args.pod.name;
  summary.nodes_in = s.args.node_names.size();
  if (!s.args.has_pod && summary.nodes_in > 0) {
    summary.error = "decode ExtenderArgs: /Pod: missing or null, but nodes were sent";
    wire::AppendErrorBody(summary.error, out);
    return 400;
  }
  st = ResolveNodes(s);
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
