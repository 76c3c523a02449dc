// The replay report (record/replay.h): ReplayDirectory's counts as text or
// JSON; the replay itself is replay.cc.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/stats.h"
#include "schedext/record/replay.h"

namespace schedext::record {

using Json = nlohmann::json;

namespace {

std::string Counts(const std::map<std::string, size_t>& counts, bool quote) {
  std::vector<std::pair<std::string, size_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [key, n] : sorted) {
    out += (out.empty() ? "" : ", ") + (quote ? "\"" + key + "\"" : key) + " " + std::to_string(n);
  }
  return out;
}

}  // namespace

std::string FormatReplayText(const ReplayReport& report, bool diff) {
  std::string out;
  out += "replayed " + std::to_string(report.replayed) + " of " + std::to_string(report.records) +
         " recorded request(s)";
  if (report.unreadable > 0) {
    out += " (" + std::to_string(report.unreadable) + " unreadable line(s))";
  }
  out += "\n";
  for (const auto& [verb, n] : report.by_verb) {
    const auto changed = report.changed_by_verb.find(verb);
    out += "  " + verb + ": " + std::to_string(n) + ", " +
           std::to_string(changed == report.changed_by_verb.end() ? 0 : changed->second) +
           " changed\n";
  }
  for (const auto& [reason, n] : report.skipped) {
    out += "  skipped: " + std::to_string(n) + " (" + reason + ")\n";
  }
  out += "changed requests: " + std::to_string(report.changed) + "\n";
  out += "node decisions changed: " + std::to_string(report.decisions_changed) + "\n";
  out += "  newly rejected: " + std::to_string(report.newly_rejected);
  if (!report.newly_rejected_by.empty()) {
    out += " (by " + Counts(report.newly_rejected_by, false) + ")";
  }
  out += "\n  newly accepted: " + std::to_string(report.newly_accepted);
  if (!report.newly_accepted_from.empty()) {
    out += " (were " + Counts(report.newly_accepted_from, true) + ")";
  }
  out += "\n";
  if (report.outcome_changed > 0) {
    out += "requests that now fail or no longer fail: " + std::to_string(report.outcome_changed) +
           "\n";
  }
  out += "top node changed: " + std::to_string(report.top_changed) + " of " +
         std::to_string(report.prioritize) + " prioritize request(s)\n";
  out += "scores changed: " + std::to_string(report.scores_changed) + " of " +
         std::to_string(report.scores);
  if (report.scores_changed > 0) {
    char mean[32];
    std::snprintf(
        mean, sizeof(mean), "%.2f",
        static_cast<double>(report.total_shift) / static_cast<double>(report.scores_changed));
    out += " (max shift " + std::to_string(report.max_shift) + ", mean " + mean + ")";
  }
  out += "\n";
  if (report.preempt > 0) {
    out += "preempt: victims changed on " + std::to_string(report.preempt_nodes_changed) + " of " +
           std::to_string(report.preempt_nodes) + " candidate node(s) in " +
           std::to_string(report.preempt) + " request(s)\n";
  }
  if (report.without_state > 0) {
    out += "state not recorded: " + std::to_string(report.without_state) +
           " request(s) (recorded before policy state was; GpuShare, HamiVgpu and NodeLoad replay "
           "them against empty state)\n";
  }
  for (const std::string& e : report.state_errors) {
    out += "state does not decode: " + e + "\n";
  }
  std::vector<int64_t> recorded;
  std::vector<int64_t> replayed;
  for (const RequestReplay& r : report.requests) {
    if (r.replayed) {
      recorded.push_back(r.recorded_micros);
      replayed.push_back(r.replay_micros);
    }
  }
  std::sort(recorded.begin(), recorded.end());
  std::sort(replayed.begin(), replayed.end());
  out += "latency us: recorded (whole request) p50 " + std::to_string(Percentile(recorded, 0.5)) +
         " p99 " + std::to_string(Percentile(recorded, 0.99)) + "; replay (policies only) p50 " +
         std::to_string(Percentile(replayed, 0.5)) + " p99 " +
         std::to_string(Percentile(replayed, 0.99)) + "\n";
  if (diff) {
    for (const RequestReplay& r : report.requests) {
      if (!r.changed) {
        continue;
      }
      out += "\n" + r.where + " " + r.verb + " " + r.pod + " (profile " + r.profile + ")\n";
      for (const std::string& line : r.diff) {
        out += "  " + line + "\n";
      }
    }
  }
  return out;
}

std::string FormatReplayJson(const ReplayReport& report) {
  Json requests = Json::array();
  for (const RequestReplay& r : report.requests) {
    requests.push_back({{"where", r.where},
                        {"verb", r.verb},
                        {"profile", r.profile},
                        {"pod", r.pod},
                        {"replayed", r.replayed},
                        {"skipped", r.skipped.empty() ? Json(nullptr) : Json(r.skipped)},
                        {"changed", r.changed},
                        {"stateRecorded", r.state_recorded},
                        {"diff", r.diff},
                        {"recordedMicros", r.recorded_micros},
                        {"replayMicros", r.replay_micros}});
  }
  const Json doc = {{"records", report.records},
                    {"replayed", report.replayed},
                    {"changed", report.changed},
                    {"unreadable", report.unreadable},
                    {"decisionsChanged", report.decisions_changed},
                    {"newlyRejected", report.newly_rejected},
                    {"newlyRejectedBy", report.newly_rejected_by},
                    {"newlyAccepted", report.newly_accepted},
                    {"newlyAcceptedFrom", report.newly_accepted_from},
                    {"outcomeChanged", report.outcome_changed},
                    {"prioritize", report.prioritize},
                    {"topChanged", report.top_changed},
                    {"scores", report.scores},
                    {"scoresChanged", report.scores_changed},
                    {"maxShift", report.max_shift},
                    {"preempt", report.preempt},
                    {"preemptNodes", report.preempt_nodes},
                    {"preemptNodesChanged", report.preempt_nodes_changed},
                    {"withoutState", report.without_state},
                    {"stateErrors", report.state_errors},
                    {"requests", std::move(requests)}};
  return doc.dump(2) + "\n";
}
}  // namespace schedext::record
