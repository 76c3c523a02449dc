#include "policy/builtin/nodeload/nodeload.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <utility>

#include "policy/args.h"
#include "policy/builtin/nodeload/formulas.h"
#include "schedext/model/resources.h"
#include "schedext/policy/recorded_state.h"

namespace schedext::policy {
namespace nodeload {
namespace {

constexpr std::string_view kName = "NodeLoad";
constexpr std::string_view kTargetLoadPacking = "TargetLoadPacking";
constexpr std::string_view kRiskBalancing = "LoadVariationRiskBalancing";

using std::chrono::milliseconds;

std::string FormatNumber(double value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) {
    return std::to_string(value);
  }
  return std::string(buffer, ptr);
}

// Prometheus label names: [a-zA-Z_][a-zA-Z0-9_]*.
bool IsLabelName(std::string_view text) {
  if (text.empty()) {
    return false;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) {
      return false;
    }
  }
  return true;
}

// "profiles[0].policies[1].args" → "profiles[0].policies[1]": names one
// NodeLoad instance in metrics.
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

bool Readable(const std::string& path) { return std::ifstream(path).good(); }

// An optional number of seconds in (0, max] as milliseconds.
StatusOr<std::optional<milliseconds>> Seconds(const ArgsReader& reader, std::string_view key,
                                              double min, bool min_inclusive, double max) {
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<double> value, reader.Number(key));
  if (!value.has_value()) {
    return std::optional<milliseconds>();
  }
  const bool low = min_inclusive ? *value < min : *value <= min;
  if (low || *value > max) {
    return reader.FieldError(key, std::string("must be ") + (min_inclusive ? "at least " : "above ") +
                                      FormatNumber(min) + " and at most " + FormatNumber(max) +
                                      " seconds, got " + FormatNumber(*value));
  }
  return std::optional<milliseconds>(milliseconds(std::llround(*value * 1000)));
}

// An optional number in [min, max] (or (min, max] / [min, max)).
StatusOr<std::optional<double>> Bounded(const ArgsReader& reader, std::string_view key,
                                        double min, bool min_inclusive, double max,
                                        bool max_inclusive) {
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<double> value, reader.Number(key));
  if (!value.has_value()) {
    return value;
  }
  const bool low = min_inclusive ? *value < min : *value <= min;
  const bool high = max_inclusive ? *value > max : *value >= max;
  if (low || high) {
    return reader.FieldError(key, "must be " + std::string(min_inclusive ? "in [" : "in (") +
                                      FormatNumber(min) + ", " + FormatNumber(max) +
                                      (max_inclusive ? "]" : ")") + ", got " +
                                      FormatNumber(*value));
  }
  return value;
}

Status OnlyInMode(const ArgsReader& reader, std::string_view key, std::string_view mode) {
  if (reader.Has(key)) {
    return reader.FieldError(key, "only applies to mode " + std::string(mode));
  }
  return OkStatus();
}

// The node's CPU capacity in milli-cores: TargetLoadPacking reads capacity as
// Trimaran does, falling back to allocatable.
double CpuCapacity(const model::NodeInfo& node) {
  const int64_t capacity = node.capacity.milli_cpu;
  return static_cast<double>(capacity > 0 ? capacity : node.allocatable.milli_cpu);
}

// What PreFilter / PreScore found once per request.
struct NodeLoadState final : StateData {
  // Null when there is no snapshot or it is older than maxAge: neutral.
  std::shared_ptr<const LoadSnapshot> snapshot;
  // The sources as the request read them (a recording keeps them: a stale
  // snapshot too, which a larger maxAge would use).
  std::shared_ptr<const LoadSnapshot> seen;
  Clock::time_point now;
  std::shared_ptr<const BindLedger::View> binds;
  Clock::time_point binds_since;  // binds after this count
  int64_t pod_cpu_millis = 0;     // the pod's own estimate (mode-dependent)
  int64_t pod_cpu_request = 0;
  int64_t pod_memory_request = 0;
};

// Sources a replay restored (RequestStateRecorder::Restore), read by Prepare
// instead of the live ones.
struct RestoredSources final : StateData {
  std::shared_ptr<const LoadSnapshot> snapshot;  // null: there was none
  std::shared_ptr<const BindLedger::View> binds;
  Clock::time_point now;
};

// NaN (no series) is null in a record.
nlohmann::json Number(double value) {
  return std::isnan(value) ? nlohmann::json(nullptr) : nlohmann::json(value);
}

// What a request saw, as RequestStateRecorder::Capture keeps it. Times are
// recorded relative to the request's `now`, in nanoseconds of the steady
// clock, so that replay compares ages exactly as the request did:
//   {"sampleAgeNanos": 1500000000 | null (no snapshot),
//    "nodes": {"n1": {"cpu": 10, "cpuStddev": null, "memory": 25,
//                     "memoryStddev": null}},
//    "binds": [{"node": "n2", "cpuMillis": 1500, "memoryBytes": 0,
//               "boundNanosAgo": 2000000000}]}
// limited to the request's nodes.
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

class NodeLoad final : public Policy,
                       public FilterHook,
                       public ScoreHook,
                       public RequestStateRecorder {
 public:
  NodeLoad(NodeLoadSpec spec, LoadSources sources, std::shared_ptr<BindLedger> ledger,
           std::shared_ptr<void> keep_alive)
      : spec_(std::move(spec)),
        sources_(std::move(sources)),
        ledger_(std::move(ledger)),
        keep_alive_(std::move(keep_alive)),
        reason_cpu_("node(s) were too hot: CPU use above " +
                    FormatNumber(spec_.hot_cpu_percent.value_or(0)) + "%"),
        reason_memory_("node(s) were too hot: memory use above " +
                       FormatNumber(spec_.hot_memory_percent.value_or(0)) + "%") {}

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kResources; }
  const FilterHook* AsFilter() const override {
    return spec_.hot_cpu_percent.has_value() || spec_.hot_memory_percent.has_value() ? this
                                                                                      : nullptr;
  }
  const ScoreHook* AsScorer() const override { return this; }

  // FilterHook
  Status PreFilter(RequestState& state, const model::PodInfo& pod) const override {
    state.Set(this, Prepare(state, pod));
    return OkStatus();
  }
  Verdict Filter(const RequestState& state, const model::PodInfo& /*pod*/,
                 const model::NodeInfo& node) const override {
    const NodeLoadState* s = state.GetAs<NodeLoadState>(this);
    if (s == nullptr || s->snapshot == nullptr) {
      return Verdict::Success();
    }
    const NodeLoadSample* sample = s->snapshot->Find(node.name);
    if (sample == nullptr) {
      return Verdict::Success();
    }
    int64_t pending_cpu = 0;
    int64_t pending_memory = 0;
    s->binds->SumSince(node.name, s->binds_since, pending_cpu, pending_memory);
    if (spec_.hot_cpu_percent.has_value() && !std::isnan(sample->cpu)) {
      const double capacity = CpuCapacity(node);
      if (capacity > 0 && PredictedCpuPercent(sample->cpu, capacity,
                                              static_cast<double>(pending_cpu)) >
                              *spec_.hot_cpu_percent) {
        return Verdict::Unresolvable(reason_cpu_);
      }
    }
    if (spec_.hot_memory_percent.has_value() && !std::isnan(sample->memory)) {
      const double capacity = static_cast<double>(node.allocatable.memory);
      if (capacity > 0 &&
          sample->memory + 100 * static_cast<double>(pending_memory) / capacity >
              *spec_.hot_memory_percent) {
        return Verdict::Unresolvable(reason_memory_);
      }
    }
    return Verdict::Success();
  }

  // The node's predicted use, which the reasons leave out (they name only
  // the configured limit).
  std::string Detail(const RequestState& state, const model::PodInfo& /*pod*/,
                     const model::NodeInfo& node) const override {
    const NodeLoadState* s = state.GetAs<NodeLoadState>(this);
    const NodeLoadSample* sample =
        s == nullptr || s->snapshot == nullptr ? nullptr : s->snapshot->Find(node.name);
    if (sample == nullptr) {
      return {};
    }
    int64_t pending_cpu = 0;
    int64_t pending_memory = 0;
    s->binds->SumSince(node.name, s->binds_since, pending_cpu, pending_memory);
    // Tenths of a percent: enough to compare with the limit, and no float noise.
    auto percent = [](double value) { return FormatNumber(std::round(value * 10) / 10) + "%"; };
    std::string out;
    const double cpu_capacity = CpuCapacity(node);
    if (!std::isnan(sample->cpu) && cpu_capacity > 0) {
      out = "CPU use " + percent(PredictedCpuPercent(sample->cpu, cpu_capacity,
                                                     static_cast<double>(pending_cpu)));
    }
    const double memory_capacity = static_cast<double>(node.allocatable.memory);
    if (!std::isnan(sample->memory) && memory_capacity > 0) {
      out += (out.empty() ? "" : ", ") + std::string("memory use ") +
             percent(sample->memory + 100 * static_cast<double>(pending_memory) / memory_capacity);
    }
    return out.empty() ? out : out + " (with binds since the sample)";
  }

  // ScoreHook
  Status PreScore(RequestState& state, const model::PodInfo& pod,
                  NodeSpan /*nodes*/) const override {
    state.Set(this, Prepare(state, pod));
    return OkStatus();
  }
  int64_t Score(const RequestState& state, const model::PodInfo& /*pod*/,
                const model::NodeInfo& node) const override {
    const NodeLoadState* s = state.GetAs<NodeLoadState>(this);
    if (s == nullptr || s->snapshot == nullptr) {
      return spec_.neutral_score;
    }
    const NodeLoadSample* sample = s->snapshot->Find(node.name);
    if (sample == nullptr) {
      return spec_.neutral_score;
    }
    int64_t pending_cpu = 0;
    int64_t pending_memory = 0;
    s->binds->SumSince(node.name, s->binds_since, pending_cpu, pending_memory);
    if (spec_.mode == Mode::kTargetLoadPacking) {
      const double capacity = CpuCapacity(node);
      if (std::isnan(sample->cpu) || !(capacity > 0)) {
        return spec_.neutral_score;
      }
      const double predicted = PredictedCpuPercent(
          sample->cpu, capacity, static_cast<double>(s->pod_cpu_millis + pending_cpu));
      return TargetLoadPackingScore(predicted, spec_.target_utilization);
    }
    // LoadVariationRiskBalancing: the worse of CPU and memory, or the one with
    // data (Trimaran takes the max of the two when one is missing, i.e. it).
    std::optional<double> cpu_score;
    std::optional<double> memory_score;
    const double cpu_capacity = static_cast<double>(node.allocatable.milli_cpu);
    if (!std::isnan(sample->cpu) && cpu_capacity > 0) {
      ResourceStats stats;
      stats.capacity = cpu_capacity;
      stats.request = static_cast<double>(s->pod_cpu_request);
      stats.used_avg = sample->cpu * cpu_capacity / 100 + static_cast<double>(pending_cpu);
      stats.used_stddev =
          std::isnan(sample->cpu_stddev) ? 0 : sample->cpu_stddev * cpu_capacity / 100;
      cpu_score = RiskBalancingScore(stats, spec_.safe_variance_margin,
                                     spec_.safe_variance_sensitivity);
    }
    const double memory_capacity = static_cast<double>(node.allocatable.memory);
    if (!std::isnan(sample->memory) && memory_capacity > 0) {
      ResourceStats stats;
      stats.capacity = memory_capacity;
      stats.request = static_cast<double>(s->pod_memory_request);
      stats.used_avg =
          sample->memory * memory_capacity / 100 + static_cast<double>(pending_memory);
      stats.used_stddev =
          std::isnan(sample->memory_stddev) ? 0 : sample->memory_stddev * memory_capacity / 100;
      memory_score = RiskBalancingScore(stats, spec_.safe_variance_margin,
                                        spec_.safe_variance_sensitivity);
    }
    if (!cpu_score && !memory_score) {
      return spec_.neutral_score;
    }
    const double total = cpu_score && memory_score ? std::min(*cpu_score, *memory_score)
                                                   : cpu_score.value_or(*memory_score);
    return std::llround(total);
  }
  // Scores are absolute (0..100), as Trimaran's: no normalisation, so that a
  // neutral node keeps the neutral score.
  void Normalize(const RequestState& /*state*/, std::span<int64_t> scores) const override {
    for (int64_t& score : scores) {
      score = std::clamp<int64_t>(score, 0, kMaxNodeScore);
    }
  }

  // RequestStateRecorder
  std::shared_ptr<const CapturedState> Capture(const RequestState& state) const override {
    if (const NodeLoadState* s = state.GetAs<NodeLoadState>(this)) {
      return std::make_shared<CapturedLoad>(s->seen, s->binds, s->now);
    }
    // The verb did not run this policy's hooks (no hot filter at filter):
    // its sources now, for a replay whose configuration does.
    return std::make_shared<CapturedLoad>(sources_.snapshot(), ledger_->Current(), sources_.now());
  }
  Status Restore(std::string_view json, RequestState& state) const override {
    SCHEDEXT_ASSIGN_OR_RETURN(std::unique_ptr<RestoredSources> restored, DecodeCapturedLoad(json));
    state.Set(&restore_key_, std::move(restored));
    return OkStatus();
  }

 private:
  std::unique_ptr<NodeLoadState> Prepare(const RequestState& request,
                                         const model::PodInfo& pod) const {
    auto state = std::make_unique<NodeLoadState>();
    const RestoredSources* restored = request.GetAs<RestoredSources>(&restore_key_);
    state->seen = restored != nullptr ? restored->snapshot : sources_.snapshot();
    state->now = restored != nullptr ? restored->now : sources_.now();
    state->binds = restored != nullptr ? restored->binds : ledger_->Current();
    if (state->seen != nullptr && state->now - state->seen->taken() <= spec_.max_age) {
      state->binds_since = state->seen->taken() - spec_.bind_settle;
      state->snapshot = state->seen;
    }
    int64_t memory = 0;
    PodEstimate(spec_, pod, state->pod_cpu_millis, memory);
    state->pod_cpu_request = pod.requests.milli_cpu;
    state->pod_memory_request = pod.requests.memory;
    return state;
  }

  const NodeLoadSpec spec_;
  const LoadSources sources_;
  const std::shared_ptr<BindLedger> ledger_;
  const std::shared_ptr<void> keep_alive_;
  const std::string reason_cpu_;
  const std::string reason_memory_;
  // Where Restore keeps the recorded sources in a RequestState (`this` is
  // the key of the per-request NodeLoadState).
  const char restore_key_ = 0;
};

}  // namespace

LoadQueries DefaultQueries(Mode mode, const std::string& node_label) {
  const std::string cpu = "100 * (1 - avg by (" + node_label +
                          ") (rate(node_cpu_seconds_total{mode=\"idle\"}[2m])))";
  const std::string memory = "100 * (1 - sum by (" + node_label +
                             ") (node_memory_MemAvailable_bytes) / sum by (" + node_label +
                             ") (node_memory_MemTotal_bytes))";
  LoadQueries q;
  if (mode == Mode::kTargetLoadPacking) {
    q.cpu = cpu;
    q.memory = memory;
  } else {
    // Trimaran's load-watcher reports average and deviation over 15 minutes.
    q.cpu = "avg_over_time((" + cpu + ")[15m:1m])";
    q.cpu_stddev = "stddev_over_time((" + cpu + ")[15m:1m])";
    q.memory = "avg_over_time((" + memory + ")[15m:1m])";
    q.memory_stddev = "stddev_over_time((" + memory + ")[15m:1m])";
  }
  return q;
}

void PodEstimate(const NodeLoadSpec& spec, const model::PodInfo& pod, int64_t& cpu_millis,
                 int64_t& memory_bytes) {
  cpu_millis = spec.mode == Mode::kTargetLoadPacking
                   ? PredictPodCpuMillis(pod, spec.default_cpu_request_millis,
                                         spec.requests_multiplier)
                   : pod.requests.milli_cpu;
  memory_bytes = pod.requests.memory;
}

StatusOr<NodeLoadSpec> ParseNodeLoadArgs(const nlohmann::json& args,
                                         const PolicyContext& context) {
  SCHEDEXT_ASSIGN_OR_RETURN(
      ArgsReader reader,
      ArgsReader::Make(args, context.args_path,
                       {"mode", "prometheus", "queries", "nodeLabel", "trimPort",
                        "pollIntervalSeconds", "maxAgeSeconds", "bindSettleSeconds",
                        "neutralScore", "hotCpuPercent", "hotMemoryPercent", "targetUtilization",
                        "defaultCpuRequest", "defaultRequestsMultiplier", "safeVarianceMargin",
                        "safeVarianceSensitivity"}));
  NodeLoadSpec spec;
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string_view> mode,
                            reader.Enum("mode", {kTargetLoadPacking, kRiskBalancing}));
  spec.mode = mode.has_value() && *mode == kRiskBalancing ? Mode::kLoadVariationRiskBalancing
                                                          : Mode::kTargetLoadPacking;

  // prometheus
  SCHEDEXT_ASSIGN_OR_RETURN(
      std::optional<ArgsReader> prometheus,
      reader.Object("prometheus", {"url", "bearerTokenFile", "caFile", "timeoutSeconds"}));
  if (!prometheus.has_value()) {
    return reader.FieldError("prometheus", "required (an object with at least url)");
  }
  SCHEDEXT_ASSIGN_OR_RETURN(spec.prometheus.url, prometheus->RequiredString("url"));
  StatusOr<PrometheusUrl> url = ParsePrometheusUrl(spec.prometheus.url);
  if (!url.ok()) {
    return prometheus->FieldError("url", "\"" + spec.prometheus.url + "\" " +
                                             std::string(url.status().message()));
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> token,
                            prometheus->String("bearerTokenFile"));
  if (token.has_value()) {
    if (token->empty() || !Readable(*token)) {
      return prometheus->FieldError("bearerTokenFile", "cannot read \"" + *token + "\"");
    }
    spec.prometheus.bearer_token_file = *token;
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> ca, prometheus->String("caFile"));
  if (ca.has_value()) {
    if (!url->tls) {
      return prometheus->FieldError("caFile", "needs an https:// url");
    }
    if (ca->empty() || !Readable(*ca)) {
      return prometheus->FieldError("caFile", "cannot read \"" + *ca + "\"");
    }
    spec.prometheus.ca_file = *ca;
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<milliseconds> timeout,
                            Seconds(*prometheus, "timeoutSeconds", 0, false, 300));
  spec.prometheus.timeout = timeout.value_or(milliseconds(5000));

  // how series map to nodes
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> label, reader.String("nodeLabel"));
  if (label.has_value()) {
    if (!IsLabelName(*label)) {
      return reader.FieldError("nodeLabel", "\"" + *label +
                                                "\" is not a Prometheus label name "
                                                "([a-zA-Z_][a-zA-Z0-9_]*)");
    }
    spec.node_label = *label;
  }
  SCHEDEXT_ASSIGN_OR_RETURN(spec.trim_port, reader.Bool("trimPort", true));

  // queries
  const bool risk = spec.mode == Mode::kLoadVariationRiskBalancing;
  spec.queries = DefaultQueries(spec.mode, spec.node_label);
  SCHEDEXT_ASSIGN_OR_RETURN(
      std::optional<ArgsReader> queries,
      reader.Object("queries", {"cpu", "memory", "cpuStddev", "memoryStddev"}));
  if (queries.has_value()) {
    struct Field {
      std::string_view key;
      std::string* target;
    };
    const Field fields[] = {{"cpu", &spec.queries.cpu},
                            {"memory", &spec.queries.memory},
                            {"cpuStddev", &spec.queries.cpu_stddev},
                            {"memoryStddev", &spec.queries.memory_stddev}};
    for (const Field& f : fields) {
      if (!risk && (f.key == "cpuStddev" || f.key == "memoryStddev")) {
        SCHEDEXT_RETURN_IF_ERROR(OnlyInMode(*queries, f.key, kRiskBalancing));
      }
      SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> q, queries->String(f.key));
      if (q.has_value()) {
        if (q->find_first_not_of(" \t\n") == std::string::npos) {
          return queries->FieldError(f.key, "must not be empty");
        }
        *f.target = *q;
      }
    }
  }

  // timing
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<milliseconds> poll,
                            Seconds(reader, "pollIntervalSeconds", 0, false, 3600));
  spec.poll_interval = poll.value_or(milliseconds(15000));
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<milliseconds> max_age,
                            Seconds(reader, "maxAgeSeconds", 0, false, 86400));
  spec.max_age = max_age.value_or(4 * spec.poll_interval);
  if (spec.max_age < spec.poll_interval) {
    return reader.FieldError("maxAgeSeconds",
                             "must not be below pollIntervalSeconds (every sample would be "
                             "stale before the next poll)");
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<milliseconds> settle,
                            Seconds(reader, "bindSettleSeconds", 0, true, 3600));
  spec.bind_settle = settle.value_or(milliseconds(60000));

  // scores and filters
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> neutral,
                            reader.Int("neutralScore", 0, kMaxNodeScore));
  spec.neutral_score = neutral.value_or(50);
  SCHEDEXT_ASSIGN_OR_RETURN(spec.hot_cpu_percent,
                            Bounded(reader, "hotCpuPercent", 0, false, 100, true));
  SCHEDEXT_ASSIGN_OR_RETURN(spec.hot_memory_percent,
                            Bounded(reader, "hotMemoryPercent", 0, false, 100, true));

  if (risk) {
    for (std::string_view key :
         {"targetUtilization", "defaultCpuRequest", "defaultRequestsMultiplier"}) {
      SCHEDEXT_RETURN_IF_ERROR(OnlyInMode(reader, key, kTargetLoadPacking));
    }
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<double> margin,
                              Bounded(reader, "safeVarianceMargin", 0, true, 100, true));
    spec.safe_variance_margin = margin.value_or(kDefaultSafeVarianceMargin);
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<double> sensitivity,
                              Bounded(reader, "safeVarianceSensitivity", 0, true, 100, true));
    spec.safe_variance_sensitivity = sensitivity.value_or(kDefaultSafeVarianceSensitivity);
  } else {
    for (std::string_view key : {"safeVarianceMargin", "safeVarianceSensitivity"}) {
      SCHEDEXT_RETURN_IF_ERROR(OnlyInMode(reader, key, kRiskBalancing));
    }
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<double> target,
                              Bounded(reader, "targetUtilization", 0, false, 100, false));
    spec.target_utilization = target.value_or(kDefaultTargetUtilization);
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string> cpu,
                              reader.String("defaultCpuRequest"));
    if (cpu.has_value()) {
      StatusOr<int64_t> millis = model::ParseResourceAmount(model::kResourceCpu, *cpu);
      if (!millis.ok()) {
        return reader.FieldError("defaultCpuRequest", millis.status().message());
      }
      if (*millis < 0) {
        return reader.FieldError("defaultCpuRequest", "must not be negative");
      }
      spec.default_cpu_request_millis = *millis;
    }
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<double> multiplier,
                              Bounded(reader, "defaultRequestsMultiplier", 1, true, 1000, true));
    spec.requests_multiplier = multiplier.value_or(kDefaultRequestsMultiplier);
  }
  return spec;
}

std::unique_ptr<Policy> MakeNodeLoad(NodeLoadSpec spec, LoadSources sources,
                                     std::shared_ptr<BindLedger> ledger,
                                     std::shared_ptr<void> keep_alive) {
  return std::make_unique<NodeLoad>(std::move(spec), std::move(sources), std::move(ledger),
                                    std::move(keep_alive));
}


PollerTask::PollerTask(std::shared_ptr<LoadPoller> poller) : poller_(std::move(poller)) {}

Status PollerTask::Start() {
  poller_->Start();
  return OkStatus();
}

void PollerTask::Stop() { poller_->Stop(); }

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

}  // namespace nodeload

StatusOr<std::unique_ptr<Policy>> NewNodeLoad(const nlohmann::json& args,
                                              const PolicyContext& context) {
  using nodeload::LoadPoller;
  SCHEDEXT_ASSIGN_OR_RETURN(nodeload::NodeLoadSpec spec,
                            nodeload::ParseNodeLoadArgs(args, context));
  StatusOr<std::unique_ptr<nodeload::PrometheusClient>> client =
      nodeload::PrometheusClient::Make(spec.prometheus);
  if (!client.ok()) {
    return InvalidArgumentError(context.args_path + ".prometheus: " +
                                std::string(client.status().message()));
  }
  auto poller = std::make_shared<LoadPoller>(std::move(client).value(), spec.queries,
                                             spec.node_label, spec.trim_port, spec.poll_interval);
  // Long enough for any bind that can still count: settle plus the oldest
  // sample that is not stale.
  auto ledger = std::make_shared<nodeload::BindLedger>(spec.bind_settle + spec.max_age +
                                                       spec.poll_interval);
  if (context.handle != nullptr) {
    PolicyHandle& handle = *context.handle;
    handle.AddBackgroundTask(std::make_unique<nodeload::PollerTask>(poller));
    SCHEDEXT_ASSIGN_OR_RETURN(
        std::shared_ptr<nodeload::NodeLoadMetrics> metrics,
        handle.Shared<nodeload::NodeLoadMetrics>(
            "NodeLoad.metrics", [&handle]() -> StatusOr<std::shared_ptr<nodeload::NodeLoadMetrics>> {
              auto made = std::make_shared<nodeload::NodeLoadMetrics>();
              handle.AddMetrics([m = made.get()](std::string& out) { m->Write(out); });
              return made;
            }));
    metrics->Add(nodeload::InstanceName(context.args_path), poller, ledger);
    handle.OnPodBound([ledger, spec](const model::PodInfo& pod, std::string_view node) {
      int64_t cpu = 0;
      int64_t memory = 0;
      nodeload::PodEstimate(spec, pod, cpu, memory);
      ledger->Add(node, pod.uid, cpu, memory, nodeload::Clock::now());
    });
    // No readiness condition: metrics never hold back scheduling.
  } else {
    // Without a handle (a bare factory call) nobody else would start the
    // poller: it runs while the policy lives; no metrics, no bound pods.
    poller->Start();
  }
  nodeload::LoadSources sources;
  sources.snapshot = [p = poller.get()] { return p->Current(); };
  return nodeload::MakeNodeLoad(std::move(spec), std::move(sources), std::move(ledger),
                                std::move(poller));
}

}  // namespace schedext::policy
