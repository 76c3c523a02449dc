// Recorder::OnExchange: the recorder's hook at the end of ExtenderService's
// Handle. On the request thread, so it only samples (sizes checked before any
// copy) and, for a sampled request, copies the bodies and the pointers to what
// the cache lent the request; the recorder's thread does the rest.
#include <chrono>
#include <string>
#include <utility>

#include "schedext/policy/recorded_state.h"
#include "schedext/record/recorder.h"
#include "schedext/wire/encoder.h"

namespace schedext::record {

void Recorder::OnExchange(const server::HandledExchange& x) {
  using server::Verb;
  const server::Scratch& s = x.scratch;
  // Undecodable bodies cannot be replayed; explain is not a verb.
  if (x.verb == Verb::kExplain || x.http_status == 400 ||
      !Sample(server::VerbName(x.verb),
              x.body.size() + wire::SplicedSize(x.reply, s.reply_splices))) {
    return;
  }
  Exchange e;
  e.verb = server::VerbName(x.verb);
  e.profile = x.profile.name();
  e.status = x.http_status;
  e.latency_micros = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - x.start)
                         .count();
  e.request.assign(x.body.data(), x.body.size());
  wire::AppendSpliced(x.reply, s.reply_splices, e.reply);
  const bool args = x.verb == Verb::kFilter || x.verb == Verb::kPrioritize;
  if (args && s.snapshot != nullptr && !s.args.node_names.empty()) {
    e.snapshot = s.snapshot;
    if (s.args.mode == wire::NodeMode::kNodeNames) {
      e.nodes = s.resolved;  // NodeInfos of the snapshot, usage attached
    } else {
      e.usage.reserve(s.args.nodes.size());
      for (const model::NodeInfo& node : s.args.nodes) {
        e.usage.push_back(node.usage);
      }
    }
  }
  if (x.verb == Verb::kPreempt && s.snapshot != nullptr && x.http_status == 200) {
    // The candidates' nodes, and the victims the cache knew (the pods in a
    // full-pods request are in its body already).
    e.snapshot = s.snapshot;
    e.nodes = s.resolved;
    if (!s.preemption.full_pods) {
      for (const wire::VictimsView& candidate : s.preemption.candidates()) {
        for (const model::PodInfo& victim : candidate.pods) {
          if (const model::PodInfo* known = s.snapshot->FindPod(victim.uid)) {
            e.victims.push_back(known);
          }
        }
      }
    }
  }
  if (x.verb != Verb::kBind) {
    // What the stateful policies saw: the RequestState the verb ran with.
    const policy::RequestState& state = x.verb == Verb::kPrioritize ? s.score.state : s.state;
    for (const auto& policy : x.profile.policies()) {
      if (const policy::RequestStateRecorder* r = policy::AsStateRecorder(*policy)) {
        e.policy_states.emplace_back(std::string(policy->Name()), r->Capture(state));
      }
    }
  }
  Enqueue(std::move(e));
}

}  // namespace schedext::record
