#include "policy/builtin/node_numeric/node_numeric.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/text.h"
#include "policy/args.h"
#include "schedext/policy/handle.h"
#include "schedext/model/selectors.h"

namespace schedext::policy {
namespace {

constexpr std::string_view kName = "NodeNumeric";

// Raw scores are values in fixed point with six decimals, clamped to ±1e18
// (values beyond ±1e12 compare equal to the bound). kMissing marks a node with
// no valid value; it lies outside that range, so it never collides with one.
constexpr double kFixedPointScale = 1e6;
constexpr double kFixedPointLimit = 1e18;
constexpr int64_t kMissing = std::numeric_limits<int64_t>::min();

struct NodeNumericSpec {
  std::string key;
  bool from_annotation = false;
  bool prefer_lower = false;
  std::optional<double> missing_value;
  std::optional<double> min;
  std::optional<double> max;
};

StatusOr<NodeNumericSpec> ParseArgs(const nlohmann::json& args, const PolicyContext& context) {
  SCHEDEXT_ASSIGN_OR_RETURN(ArgsReader reader, ArgsReader::Make(args, context.args_path,
                                                                {"key", "source", "prefer",
                                                                 "missingValue", "min", "max"}));
  NodeNumericSpec spec;
  SCHEDEXT_ASSIGN_OR_RETURN(spec.key, reader.RequiredString("key"));
  if (std::optional<std::string> error = QualifiedNameError(spec.key)) {
    return reader.FieldError("key", "invalid key \"" + spec.key + "\": " + *error);
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string_view> source,
                            reader.Enum("source", {"label", "annotation"}));
  spec.from_annotation = source.has_value() && *source == "annotation";
  SCHEDEXT_ASSIGN_OR_RETURN(std::optional<std::string_view> prefer,
                            reader.Enum("prefer", {"higher", "lower"}));
  spec.prefer_lower = prefer.has_value() && *prefer == "lower";
  SCHEDEXT_ASSIGN_OR_RETURN(spec.missing_value, reader.Number("missingValue"));
  SCHEDEXT_ASSIGN_OR_RETURN(spec.min, reader.Number("min"));
  SCHEDEXT_ASSIGN_OR_RETURN(spec.max, reader.Number("max"));
  if (spec.min.has_value() && spec.max.has_value() && *spec.min > *spec.max) {
    return reader.FieldError("min", "must not be greater than max (" + FormatNumber(*spec.min) +
                                        " > " + FormatNumber(*spec.max) + ")");
  }
  return spec;
}

// A node's value as NodeNumeric reads it; the cache keeps it as the node's
// summary.
struct ValueSummary {
  double value = 0;
  bool present = false;  // else the node has no valid value and no missingValue applies
};

struct ValueSource {
  ValueSource(const NodeNumericSpec& spec, model::NameTable* names)
      : key_text(spec.key),
        from_annotation(spec.from_annotation),
        missing_value(spec.missing_value),
        key(model::InternedName::Of(key_text, names)) {}

  // The value of the label (or annotation), else missingValue. A cached
  // node's value was parsed when the cache stored it (StringMap tags).
  ValueSummary Summarize(const model::NodeInfo& node) const {
    const model::StringMap& source = from_annotation ? node.annotations : node.labels;
    std::optional<double> value = source.FindNumber(key);
    if (!value.has_value()) {
      value = missing_value;
    }
    return value.has_value() ? ValueSummary{*value, true} : ValueSummary{};
  }

  const std::string key_text;
  const bool from_annotation;
  const std::optional<double> missing_value;
  const model::InternedName key;  // views key_text
};

// Scores nodes by a numeric label or annotation, min-max scaled across the
// request's nodes; optionally rejects nodes outside [min, max].
class NodeNumeric final : public Policy, public FilterHook, public ScoreHook {
 public:
  NodeNumeric(NodeNumericSpec spec, const PolicyContext& context)
      : spec_(std::move(spec)),
        source_(std::make_shared<const ValueSource>(spec_, context.names)),
        reason_above_("node(s) had " + spec_.key + " above " +
                      (spec_.max.has_value() ? FormatNumber(*spec_.max) : "")),
        reason_below_("node(s) had " + spec_.key + " below " +
                      (spec_.min.has_value() ? FormatNumber(*spec_.min) : "")),
        reason_invalid_("node(s) lacked a valid " + spec_.key) {
    if (context.handle != nullptr) {
      summary_ = context.handle->AddNodeSummary<ValueSummary>(
          [source = source_](const model::NodeInfo& node) { return source->Summarize(node); });
    }
  }

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override {
    return model::NodeFields::kLabels | model::NodeFields::kAnnotations;
  }
  const FilterHook* AsFilter() const override {
    return spec_.min.has_value() || spec_.max.has_value() ? this : nullptr;
  }
  const ScoreHook* AsScorer() const override { return this; }

  // FilterHook
  Verdict Filter(const RequestState& /*state*/, const model::PodInfo& /*pod*/,
                 const model::NodeInfo& node) const override {
    std::optional<double> value = Value(node);
    if (!value.has_value()) {
      return Verdict::Unresolvable(reason_invalid_);
    }
    if (spec_.min.has_value() && *value < *spec_.min) {
      return Verdict::Unresolvable(reason_below_);
    }
    if (spec_.max.has_value() && *value > *spec_.max) {
      return Verdict::Unresolvable(reason_above_);
    }
    return Verdict::Success();
  }

  // The node's value: the reasons name only the bound.
  std::string Detail(const RequestState& /*state*/, const model::PodInfo& /*pod*/,
                     const model::NodeInfo& node) const override {
    const std::optional<double> value = Value(node);
    return value.has_value() ? spec_.key + " is " + FormatNumber(*value) : std::string();
  }

  // ScoreHook
  // The value in fixed point (value × 1e6, rounded), or kMissing.
  int64_t Score(const RequestState& /*state*/, const model::PodInfo& /*pod*/,
                const model::NodeInfo& node) const override {
    std::optional<double> value = Value(node);
    if (!value.has_value()) {
      return kMissing;
    }
    double scaled = std::clamp(*value * kFixedPointScale, -kFixedPointLimit, kFixedPointLimit);
    return static_cast<int64_t>(std::llround(scaled));
  }
  // Min-max scaling onto [0, 100], best value 100; kMissing becomes 0 in
  // either direction; all valid values equal ⇒ those nodes 100.
  void Normalize(const RequestState& /*state*/, std::span<int64_t> scores) const override {
    bool any_valid = false;
    bool any_missing = false;
    int64_t lo = std::numeric_limits<int64_t>::max();
    int64_t hi = std::numeric_limits<int64_t>::min();
    for (int64_t score : scores) {
      if (score == kMissing) {
        any_missing = true;
      } else {
        any_valid = true;
        lo = std::min(lo, score);
        hi = std::max(hi, score);
      }
    }
    if (!any_valid || lo == hi) {
      for (int64_t& score : scores) {
        score = score == kMissing ? 0 : kMaxNodeScore;
      }
      return;
    }
    if (any_missing) {
      // The worst valid value maps to 0 when the values differ; standing in
      // for the missing ones, it gives them 0 without moving the range.
      const int64_t worst = spec_.prefer_lower ? hi : lo;
      std::replace(scores.begin(), scores.end(), kMissing, worst);
    }
    NormalizeMinMax(scores, /*reverse=*/spec_.prefer_lower);
  }

 private:
  // The node's value, else missingValue when configured, else nullopt: from
  // the node's summary when the cache wrote one.
  std::optional<double> Value(const model::NodeInfo& node) const {
    ValueSummary summary;
    if (!summary_.Get(node, summary)) {
      summary = source_->Summarize(node);
    }
    return summary.present ? std::optional<double>(summary.value) : std::nullopt;
  }

  const NodeNumericSpec spec_;
  // What Value reads, shared with the summarizer (which the cache may hold
  // longer than the policy).
  const std::shared_ptr<const ValueSource> source_;
  // Verdict reasons, built once; Filter returns views of them.
  const std::string reason_above_;
  const std::string reason_below_;
  const std::string reason_invalid_;
  NodeSummarySlot<ValueSummary> summary_;  // set by the constructor only
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> NewNodeNumeric(const nlohmann::json& args,
                                                 const PolicyContext& context) {
  SCHEDEXT_ASSIGN_OR_RETURN(NodeNumericSpec spec, ParseArgs(args, context));
  return std::unique_ptr<Policy>(std::make_unique<NodeNumeric>(std::move(spec), context));
}

}  // namespace schedext::policy
