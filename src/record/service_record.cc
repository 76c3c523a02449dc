// ExtenderService::RecordExchange: the recorder's hook at the end of Handle.
// On the request thread, so it only samples (sizes checked before any copy)
// and, for a sampled request, copies the bodies and the pointers to what the cache lent the
// request; the recorder's thread does the rest (record/recorder.h).
#include <chrono>
#include <string>

#include "schedext/policy/recorded_state.h"
#include "schedext/record/recorder.h"
#include "schedext/server/service.h"
#include "schedext/wire/encoder.h"

namespace schedext::server {

void ExtenderService::RecordExchange(Verb verb, const pipeline::Profile& profile,
                                     const wire::RequestBuffer& body, const Scratch& s,
                                     std::string_view out, int http_status,
                                     std::chrono::steady_clock::time_point start) const {
  // Undecodable bodies cannot be replayed; explain is not a verb.
  if (verb == Verb::kExplain || http_status == 400 ||
      !recorder_->Sample(VerbName(verb), body.size() + wire::SplicedSize(out, s.reply_splices))) {
    return;
  }
  record::Exchange e;
  e.verb = VerbName(verb);
  e.profile = profile.name();
  e.status = http_status;
  e.latency_micros = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  e.request.assign(body.data(), body.size());
  e.reply.clear();
  wire::AppendSpliced(out, s.reply_splices, e.reply);
  const bool args = verb == Verb::kFilter || verb == Verb::kPrioritize;
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
  if (verb == Verb::kPreempt && s.snapshot != nullptr && http_status == 200) {
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
  if (verb != Verb::kBind) {
    // What the stateful policies saw: the RequestState the verb ran with.
    const policy::RequestState& state = verb == Verb::kPrioritize ? s.score.state : s.state;
    for (const auto& policy : profile.policies()) {
      if (const policy::RequestStateRecorder* r = policy::AsStateRecorder(*policy)) {
        e.policy_states.emplace_back(std::string(policy->Name()), r->Capture(state));
      }
    }
  }
  recorder_->Enqueue(std::move(e));
}

}  // namespace schedext::server
