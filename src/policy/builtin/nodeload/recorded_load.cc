#include "policy/builtin/nodeload/recorded_load.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace schedext::policy::nodeload {
namespace {

// NaN (no series) is null in a record.
nlohmann::json Number(double value) {
  return std::isnan(value) ? nlohmann::json(nullptr) : nlohmann::json(value);
}

// What a request saw, as RequestStateRecorder::Capture keeps it (the format
// is recorded_load.h's).
class CapturedLoad final : public CapturedState {
 public:
  CapturedLoad(std::shared_ptr<const LoadSnapshot> snapshot,
               std::shared_ptr<const BindLedger::View> binds, Clock::time_point now)
      : snapshot_(std::move(snapshot)), binds_(std::move(binds)), now_(now) {}

  std::string Encode(std::span<const std::string_view> nodes) const override {
    nlohmann::json doc;
    doc["sampleAgeNanos"] = nullptr;
    nlohmann::json samples = nlohmann::json::object();
    if (snapshot_ != nullptr) {
      doc["sampleAgeNanos"] =
          std::chrono::duration_cast<std::chrono::nanoseconds>(now_ - snapshot_->taken()).count();
      for (std::string_view node : nodes) {
        if (const NodeLoadSample* s = snapshot_->Find(node)) {
          samples[std::string(node)] = {{"cpu", Number(s->cpu)},
                                        {"cpuStddev", Number(s->cpu_stddev)},
                                        {"memory", Number(s->memory)},
                                        {"memoryStddev", Number(s->memory_stddev)}};
        }
      }
    }
    doc["nodes"] = std::move(samples);
    nlohmann::json binds = nlohmann::json::array();
    if (binds_ != nullptr) {
      binds_->ForEach([&](const BindLedger::Entry& e) {
        if (std::find(nodes.begin(), nodes.end(), e.node) == nodes.end()) {
          return;
        }
        binds.push_back(
            {{"node", e.node},
             {"cpuMillis", e.cpu_millis},
             {"memoryBytes", e.memory_bytes},
             {"boundNanosAgo",
              std::chrono::duration_cast<std::chrono::nanoseconds>(now_ - e.bound).count()}});
      });
    }
    doc["binds"] = std::move(binds);
    return doc.dump();
  }

 private:
  const std::shared_ptr<const LoadSnapshot> snapshot_;
  const std::shared_ptr<const BindLedger::View> binds_;
  const Clock::time_point now_;
};

// A sample value of a record: a number, or null for none.
bool ReadSample(const nlohmann::json& doc, const char* key, double& out) {
  if (!doc.contains(key) || doc[key].is_null()) {
    out = kNoData;
    return true;
  }
  if (!doc[key].is_number()) {
    return false;
  }
  out = doc[key].get<double>();
  return true;
}
}  // namespace

std::shared_ptr<const CapturedState> CaptureLoad(std::shared_ptr<const LoadSnapshot> snapshot,
                                                 std::shared_ptr<const BindLedger::View> binds,
                                                 Clock::time_point now) {
  return std::make_shared<CapturedLoad>(std::move(snapshot), std::move(binds), now);
}

StatusOr<std::unique_ptr<RestoredSources>> DecodeCapturedLoad(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  auto invalid = [](std::string_view what) {
    return InvalidArgumentError("NodeLoad state: " + std::string(what));
  };
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_object() ||
      !doc.contains("binds") || !doc["binds"].is_array() || !doc.contains("sampleAgeNanos")) {
    return invalid("expected sampleAgeNanos, nodes and binds");
  }
  // Any fixed instant serves as the request's `now`: only differences count.
  auto restored = std::make_unique<RestoredSources>();
  restored->now = Clock::time_point() + std::chrono::hours(24 * 365);
  if (!doc["sampleAgeNanos"].is_null()) {
    if (!doc["sampleAgeNanos"].is_number_integer()) {
      return invalid("sampleAgeNanos: expected an integer or null");
    }
    std::vector<std::pair<std::string, NodeLoadSample>> nodes;
    for (const auto& [name, sample] : doc["nodes"].items()) {
      NodeLoadSample s;
      if (!sample.is_object() || !ReadSample(sample, "cpu", s.cpu) ||
          !ReadSample(sample, "cpuStddev", s.cpu_stddev) ||
          !ReadSample(sample, "memory", s.memory) ||
          !ReadSample(sample, "memoryStddev", s.memory_stddev)) {
        return invalid("nodes." + name + ": expected numbers or null");
      }
      nodes.emplace_back(name, s);
    }
    restored->snapshot = std::make_shared<const LoadSnapshot>(
        std::move(nodes),
        restored->now - std::chrono::nanoseconds(doc["sampleAgeNanos"].get<int64_t>()));
  }
  std::vector<BindLedger::Entry> entries;
  for (const nlohmann::json& b : doc["binds"]) {
    if (!b.is_object() || !b.contains("node") || !b["node"].is_string() ||
        !b.contains("cpuMillis") || !b["cpuMillis"].is_number_integer() ||
        !b.contains("memoryBytes") || !b["memoryBytes"].is_number_integer() ||
        !b.contains("boundNanosAgo") || !b["boundNanosAgo"].is_number_integer()) {
      return invalid("binds: expected node, cpuMillis, memoryBytes, boundNanosAgo");
    }
    BindLedger::Entry e;
    e.node = b["node"].get<std::string>();
    e.cpu_millis = b["cpuMillis"].get<int64_t>();
    e.memory_bytes = b["memoryBytes"].get<int64_t>();
    e.bound = restored->now - std::chrono::nanoseconds(b["boundNanosAgo"].get<int64_t>());
    entries.push_back(std::move(e));
  }
  // The view's order (node, then bind time) is what SumSince searches.
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.node != b.node ? a.node < b.node : a.bound < b.bound;
  });
  restored->binds = std::make_shared<const BindLedger::View>(std::move(entries));
  return restored;
}
}  // namespace schedext::policy::nodeload
