#include "policy/builtin/nodeload/args.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "common/text.h"
#include "policy/args.h"
#include "policy/builtin/nodeload/formulas.h"
#include "schedext/model/resources.h"

namespace schedext::policy::nodeload {
namespace {

constexpr std::string_view kTargetLoadPacking = "TargetLoadPacking";
constexpr std::string_view kRiskBalancing = "LoadVariationRiskBalancing";

using std::chrono::milliseconds;

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
}  // namespace schedext::policy::nodeload
