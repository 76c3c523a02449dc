#include "policy/builtin/nodeload/load_poller.h"

#include <algorithm>
#include <utility>

namespace schedext::policy::nodeload {

namespace {

std::vector<std::pair<std::string, NodeLoadSample>> SortedByName(
    std::vector<std::pair<std::string, NodeLoadSample>> nodes) {
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return nodes;
}

}  // namespace

LoadSnapshot::LoadSnapshot(std::vector<std::pair<std::string, NodeLoadSample>> nodes,
                           Clock::time_point taken)
    : nodes_(SortedByName(std::move(nodes))), taken_(taken) {}

const NodeLoadSample* LoadSnapshot::Find(std::string_view node) const {
  auto it = std::lower_bound(
      nodes_.begin(), nodes_.end(), node,
      [](const std::pair<std::string, NodeLoadSample>& entry, std::string_view name) {
        return std::string_view(entry.first) < name;
      });
  if (it == nodes_.end() || it->first != node) {
    return nullptr;
  }
  return &it->second;
}

LoadPoller::LoadPoller(std::unique_ptr<PrometheusClient> client, LoadQueries queries,
                       std::string node_label, bool trim_port, std::chrono::milliseconds interval)
    : client_(std::move(client)),
      queries_(std::move(queries)),
      node_label_(std::move(node_label)),
      trim_port_(trim_port),
      interval_(interval) {}

LoadPoller::~LoadPoller() { Stop(); }

void LoadPoller::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) {
    return;
  }
  thread_ = std::thread([this] { Run(); });
}

void LoadPoller::Stop() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  wake_.notify_all();
  if (thread.joinable()) {
    thread.join();
  }
}

void LoadPoller::Run() {
  for (;;) {
    Status ignored = PollOnce();  // recorded in stats()
    (void)ignored;
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
      return;
    }
  }
}

Status LoadPoller::PollOnce() {
  polls_.fetch_add(1, std::memory_order_relaxed);
  const Clock::time_point taken = Clock::now();
  // Merged per node: a small sorted vector per query, then one pass.
  std::vector<std::pair<std::string, NodeLoadSample>> nodes;
  struct Series {
    const std::string* query;
    double NodeLoadSample::*field;
    const char* name;
  };
  const Series series[] = {
      {&queries_.cpu, &NodeLoadSample::cpu, "cpu"},
      {&queries_.cpu_stddev, &NodeLoadSample::cpu_stddev, "cpuStddev"},
      {&queries_.memory, &NodeLoadSample::memory, "memory"},
      {&queries_.memory_stddev, &NodeLoadSample::memory_stddev, "memoryStddev"},
  };
  for (const Series& s : series) {
    if (s.query->empty()) {
      continue;
    }
    StatusOr<VectorReply> reply = [&]() -> StatusOr<VectorReply> {
      SCHEDEXT_ASSIGN_OR_RETURN(std::string body, client_->Query(*s.query));
      return ParseVectorReply(body, node_label_, trim_port_);
    }();
    if (!reply.ok()) {
      query_errors_.fetch_add(1, std::memory_order_relaxed);
      Status failed(reply.status().code(),
                    std::string("query ") + s.name + ": " + reply.status().message());
      std::lock_guard<std::mutex> lock(mu_);
      last_error_ = failed.message();
      return failed;
    }
    // Both sorted by name: merge.
    std::vector<std::pair<std::string, NodeLoadSample>> merged;
    merged.reserve(nodes.size() + reply->values.size());
    auto a = nodes.begin();
    auto b = reply->values.begin();
    while (a != nodes.end() || b != reply->values.end()) {
      if (b == reply->values.end() || (a != nodes.end() && a->first < b->node)) {
        merged.push_back(std::move(*a++));
      } else if (a == nodes.end() || b->node < a->first) {
        NodeLoadSample sample;
        sample.*s.field = b->value;
        merged.emplace_back(std::move(b->node), sample);
        ++b;
      } else {
        a->second.*s.field = b->value;
        merged.push_back(std::move(*a++));
        ++b;
      }
    }
    nodes = std::move(merged);
  }
  current_.store(std::make_shared<const LoadSnapshot>(std::move(nodes), taken));
  std::lock_guard<std::mutex> lock(mu_);
  last_error_.clear();
  return OkStatus();
}

PollerStats LoadPoller::stats() const {
  PollerStats out;
  out.polls = polls_.load(std::memory_order_relaxed);
  out.query_errors = query_errors_.load(std::memory_order_relaxed);
  if (std::shared_ptr<const LoadSnapshot> snapshot = current_.load()) {
    out.nodes_with_data = snapshot->size();
    out.last_success = snapshot->taken();
  }
  std::lock_guard<std::mutex> lock(mu_);
  out.last_error = last_error_;
  return out;
}

PollerTask::PollerTask(std::shared_ptr<LoadPoller> poller) : poller_(std::move(poller)) {}

Status PollerTask::Start() {
  poller_->Start();
  return OkStatus();
}

void PollerTask::Stop() { poller_->Stop(); }

}  // namespace schedext::policy::nodeload
