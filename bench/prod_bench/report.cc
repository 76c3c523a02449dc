#include "prod_bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

namespace schedext::bench::prod {
namespace {

std::string Join(const std::vector<double>& v, const std::string& sep = " / ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + Ms(v[i]);
  return s;
}

}  // namespace

std::string Ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f" : (v < 100 ? "%.1f" : "%.0f"), v);
  return buf;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Table(const std::vector<Run>& runs, const std::string& condition, bool has_go) {
  std::vector<std::tuple<std::string, std::string, size_t>> keys;
  for (const Run& r : runs) {
    if (r.condition != condition) continue;
    const auto key = std::make_tuple(r.profile, r.verb, r.nodes);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  std::ostringstream o;
  o << "| profile | verb | nodes | schedext p50 per round (ms) | p50 median | p99 per round | "
       "spread max/min p50 | schedext CPU ms/req per round | minor faults/req | "
       "outside CPU % per round |"
    << (has_go ? " Go p50 per round | Go/schedext p50 |" : "") << "\n";
  o << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" << (has_go ? "---:|---:|" : "") << "\n";
  for (const auto& [profile, verb, nodes] : keys) {
    std::vector<double> p50, p99, cpu, flt, others, go50;
    for (const Run& r : runs) {
      if (r.condition != condition || r.profile != profile || r.verb != verb || r.nodes != nodes) {
        continue;
      }
      if (r.server == "schedext") {
        p50.push_back(r.p50);
        p99.push_back(r.p99);
        cpu.push_back(r.cpu_ms_per_req);
        flt.push_back(r.minflt_per_req);
        others.push_back(r.others_pct);
      } else {
        go50.push_back(r.p50);
      }
    }
    const double lo = p50.empty() ? 0 : *std::min_element(p50.begin(), p50.end());
    const double hi = p50.empty() ? 0 : *std::max_element(p50.begin(), p50.end());
    char spread[32];
    std::snprintf(spread, sizeof spread, "%.2f×", lo > 0 ? hi / lo : 0);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1f×", Median(p50) > 0 ? Median(go50) / Median(p50) : 0);
    std::vector<double> others_rounded;
    for (double v : others) others_rounded.push_back(std::round(v));
    std::string others_s;
    for (size_t i = 0; i < others_rounded.size(); ++i) {
      others_s += (i ? " / " : "") + std::to_string(static_cast<int>(others_rounded[i]));
    }
    o << "| " << profile << " | " << verb << " | " << nodes << " | " << Join(p50) << " | "
      << Ms(Median(p50)) << " | " << Join(p99) << " | " << spread << " | " << Join(cpu) << " | "
      << Ms(Median(flt)) << " | " << others_s << " |";
    if (has_go) o << " " << Join(go50) << " | " << ratio << " |";
    o << "\n";
  }
  return o.str();
}

std::string CheckReply(const std::string& verb, const std::string& reply, size_t nodes, bool& ok) {
  const nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
  if (j.is_discarded()) {
    ok = false;
    return "reply is not JSON: " + reply.substr(0, 200);
  }
  std::ostringstream o;
  if (verb == "prioritize") {
    // Only scores above the request's lowest are listed, each less the lowest.
    ok = ok && j.is_array() && j.size() <= nodes;
    for (const nlohmann::json& h : ok ? j : nlohmann::json::array()) {
      const int64_t score = h.is_object() ? h.value("Score", int64_t{0}) : 0;
      ok = ok && score >= 1 && score <= 10;
    }
    o << (j.is_array() ? j.size() : 0) << " of " << nodes << " nodes listed (above the lowest)";
    return o.str();
  }
  const size_t passing = j.contains("NodeNames") && j["NodeNames"].is_array()
                             ? j["NodeNames"].size()
                             : (j.contains("Nodes") && j["Nodes"].is_object()
                                    ? j["Nodes"].value("items", nlohmann::json::array()).size()
                                    : 0);
  std::map<std::string, size_t> reasons;
  size_t failed = 0;
  for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
    if (j.contains(key) && j[key].is_object()) {
      for (const auto& [name, reason] : j[key].items()) {
        ++failed;
        ++reasons[reason.is_string() ? reason.get<std::string>() : reason.dump()];
      }
    }
  }
  const std::string error = j.value("Error", "");
  ok = error.empty() && passing + failed == nodes;
  o << passing << " pass, " << failed << " fail";
  for (const auto& [reason, count] : reasons) o << "; " << count << " \"" << reason << "\"";
  if (!error.empty()) o << "; Error: " << error;
  return o.str();
}

void WriteSummary(const Summary& s, std::ostream& out) {
  const Options& o = s.options;
  out << "Production path: " << o.nodes << " nodes and " << o.nodes * o.pods_per_node
      << " pods in a real kube-apiserver, schedext's cache filled through `--kubeconfig`; "
      << o.rounds << " alternating rounds, " << o.requests << " schedext / " << o.go_requests
      << " Go requests per run on one keep-alive connection (full mode: "
      << FullRequestsFor(o, 5000).schedext << " schedext / " << FullRequestsFor(o, 5000).go
      << " Go up to 5,000 nodes, " << FullRequestsFor(o, 5001).schedext << " / "
      << FullRequestsFor(o, 5001).go << " above).\n\n"
      << s.notes << "\n";
  out << "Replies checked before measuring:\n\n" << s.sanity << "\n";
  out << "#### Names mode, idle\n\n"
      << Table(s.runs, "idle", s.go_idle || !o.go_baseline.empty()) << "\n";
  if (o.churn_rate > 0) {
    out << "#### Names mode, under watch churn (" << s.churn << ")\n\n"
        << Table(s.runs, "churn", !o.go_baseline.empty()) << "\n";
  }
  if (!o.full.empty()) {
    out << "#### Full mode (nodes in the body, profile " << o.profiles.front() << ")\n\n"
        << Table(s.runs, "full", !o.go_baseline.empty()) << "\n";
  }
  for (const std::string& name : s.variants) {
    out << "#### Variant `" << name << "` (idle, "
        << (name == "main" ? o.config : [&] {
              for (const auto& [n, f] : o.variants) {
                if (n == name) return f;
              }
              return std::string();
            }())
        << "), rounds alternating with the other variants\n\n"
        << Table(s.runs, "variant:" + name, false) << "\n";
  }
  if (!s.traces.empty()) {
    out << "#### Time series (" << o.trace_seconds << " s of back-to-back filters per row, "
        << o.trace_window_s << " s windows)\n\n"
        << "| profile | condition | windows | p50 per window min / median / max (ms) | "
           "CPU ms/req per window min / median / max | file |\n|---|---|---:|---:|---:|---|\n"
        << s.traces << "\n";
  }
}

}  // namespace schedext::bench::prod
