#include "policy/builtin/nodeload/bind_ledger.h"

#include <algorithm>
#include <utility>

namespace schedext::policy::nodeload {

void BindLedger::View::SumSince(std::string_view node, Clock::time_point since,
                                int64_t& cpu_millis, int64_t& memory_bytes) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), node,
                             [](const Entry& e, std::string_view name) {
                               return std::string_view(e.node) < name;
                             });
  for (; it != entries_.end() && it->node == node; ++it) {
    if (it->bound > since) {
      cpu_millis += it->cpu_millis;
      memory_bytes += it->memory_bytes;
    }
  }
}

BindLedger::BindLedger(Clock::duration retention, std::function<Clock::time_point()> now)
    : retention_(retention), now_(std::move(now)), current_(std::make_shared<const View>(std::vector<Entry>{})) {}

void BindLedger::Add(std::string_view node, std::string_view pod_uid, int64_t cpu_millis,
                     int64_t memory_bytes, Clock::time_point bound) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<const View> old = current_.load();
  std::vector<Entry> entries;
  entries.reserve(old->size() + 1);
  old->ForEach([&](const Entry& e) {
    if (e.pod_uid != pod_uid) {
      entries.push_back(e);
    }
  });
  entries.push_back({std::string(node), std::string(pod_uid), cpu_millis, memory_bytes, bound});
  Publish(std::move(entries));
}

void BindLedger::Remove(std::string_view pod_uid) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<const View> old = current_.load();
  std::vector<Entry> entries;
  entries.reserve(old->size());
  bool found = false;
  old->ForEach([&](const Entry& e) {
    if (e.pod_uid == pod_uid) {
      found = true;
    } else {
      entries.push_back(e);
    }
  });
  if (found) {
    Publish(std::move(entries));
  }
}

void BindLedger::Publish(std::vector<Entry> entries) {
  const Clock::time_point oldest = now_() - retention_;
  std::erase_if(entries, [&](const Entry& e) { return e.bound < oldest; });
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.node != b.node ? a.node < b.node : a.bound < b.bound;
  });
  current_.store(std::make_shared<const View>(std::move(entries)));
}

}  // namespace schedext::policy::nodeload
