#include "schedext/server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>

namespace schedext::server {

std::string_view VerbName(Verb verb) {
  switch (verb) {
    case Verb::kFilter:
      return "filter";
    case Verb::kPrioritize:
      return "prioritize";
    case Verb::kPreempt:
      return "preempt";
    case Verb::kBind:
      return "bind";
    case Verb::kExplain:
      return "explain";
  }
  return "unknown";
}

namespace {

constexpr std::array<std::string_view, kOutcomeCount> kOutcomeNames = {"ok", "error",
                                                                       "bad_request"};

void AppendUint(uint64_t v, std::string& out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

void AppendDouble(double v, std::string& out) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

void AppendLabels(std::string_view profile, std::string_view verb, std::string& out) {
  out.append("{profile=\"").append(profile).append("\",verb=\"").append(verb).append("\"");
}

}  // namespace

Metrics::Metrics(std::vector<std::string> profile_names)
    : names_(std::move(profile_names)), series_(new ProfileSeries[names_.size()]) {}

void Metrics::RecordRequest(size_t profile_index, Verb verb, Outcome outcome, double seconds,
                            uint64_t nodes) {
  if (profile_index >= names_.size()) {
    return;
  }
  Series& s = series_[profile_index].verbs[static_cast<size_t>(verb)];
  s.count[static_cast<size_t>(outcome)].fetch_add(1, std::memory_order_relaxed);
  size_t bucket = 0;
  while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) {
    ++bucket;
  }
  if (bucket < kBuckets.size()) {
    s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  }
  s.sum_micros.fetch_add(static_cast<uint64_t>(std::llround(seconds * 1e6)),
                         std::memory_order_relaxed);
  s.nodes.fetch_add(nodes, std::memory_order_relaxed);
}

void Metrics::RecordRejected(size_t profile_index, uint64_t failed, uint64_t unresolvable) {
  if (profile_index >= names_.size()) {
    return;
  }
  series_[profile_index].failed.fetch_add(failed, std::memory_order_relaxed);
  series_[profile_index].unresolvable.fetch_add(unresolvable, std::memory_order_relaxed);
}

void Metrics::Render(std::string& out) const {
  out.append(
      "# HELP schedext_requests_total Extender requests handled, by profile, verb and outcome.\n"
      "# TYPE schedext_requests_total counter\n");
  for (size_t p = 0; p < names_.size(); ++p) {
    for (size_t v = 0; v < kVerbCount; ++v) {
      for (size_t o = 0; o < kOutcomeCount; ++o) {
        out.append("schedext_requests_total");
        AppendLabels(names_[p], VerbName(static_cast<Verb>(v)), out);
        out.append(",outcome=\"").append(kOutcomeNames[o]).append("\"} ");
        AppendUint(series_[p].verbs[v].count[o].load(std::memory_order_relaxed), out);
        out.push_back('\n');
      }
    }
  }
  out.append(
      "# HELP schedext_request_duration_seconds Time from a decoded body to an encoded reply.\n"
      "# TYPE schedext_request_duration_seconds histogram\n");
  for (size_t p = 0; p < names_.size(); ++p) {
    for (size_t v = 0; v < kVerbCount; ++v) {
      const Series& s = series_[p].verbs[v];
      const std::string_view verb = VerbName(static_cast<Verb>(v));
      uint64_t total = 0;
      for (const auto& c : s.count) {
        total += c.load(std::memory_order_relaxed);
      }
      uint64_t cumulative = 0;
      for (size_t b = 0; b < kBuckets.size(); ++b) {
        cumulative += s.buckets[b].load(std::memory_order_relaxed);
        out.append("schedext_request_duration_seconds_bucket");
        AppendLabels(names_[p], verb, out);
        out.append(",le=\"");
        AppendDouble(kBuckets[b], out);
        out.append("\"} ");
        AppendUint(cumulative, out);
        out.push_back('\n');
      }
      out.append("schedext_request_duration_seconds_bucket");
      AppendLabels(names_[p], verb, out);
      out.append(",le=\"+Inf\"} ");
      AppendUint(total, out);
      out.append("\nschedext_request_duration_seconds_sum");
      AppendLabels(names_[p], verb, out);
      out.append("} ");
      AppendDouble(static_cast<double>(s.sum_micros.load(std::memory_order_relaxed)) / 1e6, out);
      out.append("\nschedext_request_duration_seconds_count");
      AppendLabels(names_[p], verb, out);
      out.append("} ");
      AppendUint(total, out);
      out.push_back('\n');
    }
  }
  out.append(
      "# HELP schedext_request_nodes_total Nodes received in extender requests.\n"
      "# TYPE schedext_request_nodes_total counter\n");
  for (size_t p = 0; p < names_.size(); ++p) {
    for (size_t v = 0; v < kVerbCount; ++v) {
      out.append("schedext_request_nodes_total");
      AppendLabels(names_[p], VerbName(static_cast<Verb>(v)), out);
      out.append("} ");
      AppendUint(series_[p].verbs[v].nodes.load(std::memory_order_relaxed), out);
      out.push_back('\n');
    }
  }
  out.append(
      "# HELP schedext_filter_rejected_nodes_total Nodes rejected by filter, by kind.\n"
      "# TYPE schedext_filter_rejected_nodes_total counter\n");
  for (size_t p = 0; p < names_.size(); ++p) {
    out.append("schedext_filter_rejected_nodes_total{profile=\"")
        .append(names_[p])
        .append("\",kind=\"unschedulable\"} ");
    AppendUint(series_[p].failed.load(std::memory_order_relaxed), out);
    out.append("\nschedext_filter_rejected_nodes_total{profile=\"")
        .append(names_[p])
        .append("\",kind=\"unresolvable\"} ");
    AppendUint(series_[p].unresolvable.load(std::memory_order_relaxed), out);
    out.push_back('\n');
  }
  out.append(
      "# HELP schedext_log_suppressed_total Warnings not logged because their rate limit was "
      "exceeded.\n"
      "# TYPE schedext_log_suppressed_total counter\n"
      "schedext_log_suppressed_total ");
  AppendUint(log_suppressed_.load(std::memory_order_relaxed), out);
  if (cache_synced_) {
    out.append(
        "\n# HELP schedext_cache_synced Whether the node and pod cache has synced (1) or not (0).\n"
        "# TYPE schedext_cache_synced gauge\n"
        "schedext_cache_synced ");
    out.push_back(cache_synced_() ? '1' : '0');
  }
  if (leader_) {
    out.append(
        "\n# HELP schedext_leader Whether this replica holds the leader-election Lease and serves "
        "the verbs (1) or stands by (0).\n"
        "# TYPE schedext_leader gauge\n"
        "schedext_leader ");
    out.push_back(leader_() ? '1' : '0');
    out.append(
        "\n# HELP schedext_leader_transitions_total Times this replica started or stopped "
        "leading.\n"
        "# TYPE schedext_leader_transitions_total counter\n"
        "schedext_leader_transitions_total ");
    AppendUint(leader_transitions_ ? leader_transitions_() : 0, out);
  }
  out.push_back('\n');
  if (extra_) {
    extra_(out);
  }
}

}  // namespace schedext::server
