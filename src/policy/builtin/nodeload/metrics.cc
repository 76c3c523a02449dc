#include "policy/builtin/nodeload/metrics.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <utility>

#include "common/text.h"

namespace schedext::policy::nodeload {

std::string InstanceName(std::string_view args_path) {
  if (args_path.ends_with(".args")) {
    args_path.remove_suffix(5);
  }
  std::string out;
  for (char c : args_path) {
    if (c == '"' || c == '\\' || c == '\n') {
      out += '_';
    } else {
      out += c;
    }
  }
  return out;
}

void NodeLoadMetrics::Add(std::string instance, std::shared_ptr<const LoadPoller> poller,
                          std::shared_ptr<const BindLedger> ledger) {
  std::lock_guard<std::mutex> lock(mu_);
  instances_.push_back({std::move(instance), std::move(poller), std::move(ledger)});
}

void NodeLoadMetrics::Write(std::string& out) const {
  struct Row {
    std::string label;
    PollerStats stats;
    size_t binds;
  };
  std::vector<Row> rows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Instance& i : instances_) {
      rows.push_back({"{policy=\"" + i.name + "\"}", i.poller->stats(), i.ledger->Current()->size()});
    }
  }
  const Clock::time_point now = Clock::now();
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
    for (const Row& r : rows) {
      std::optional<double> v = value(r);
      if (v.has_value()) {
        out.append(name).append(r.label).append(" ").append(FormatNumber(*v)).append("\n");
      }
    }
  };
  family("schedext_nodeload_polls_total", "counter", "Rounds of Prometheus queries run.",
         [](const Row& r) { return std::optional<double>(static_cast<double>(r.stats.polls)); });
  family("schedext_nodeload_query_errors_total", "counter",
         "Prometheus queries that failed (transport, HTTP status or reply).", [](const Row& r) {
           return std::optional<double>(static_cast<double>(r.stats.query_errors));
         });
  family("schedext_nodeload_sample_age_seconds", "gauge",
         "Age of the load sample in use (absent before the first one).",
         [&](const Row& r) -> std::optional<double> {
           if (!r.stats.last_success.has_value()) {
             return std::nullopt;
           }
           return std::chrono::duration<double>(now - *r.stats.last_success).count();
         });
  family("schedext_nodeload_nodes_with_data", "gauge",
         "Nodes the load sample in use has data for.", [](const Row& r) {
           return std::optional<double>(static_cast<double>(r.stats.nodes_with_data));
         });
  family("schedext_nodeload_recent_binds", "gauge",
         "Pods bound recently enough to be counted with their requests.",
         [](const Row& r) { return std::optional<double>(static_cast<double>(r.binds)); });
}

}  // namespace schedext::policy::nodeload
