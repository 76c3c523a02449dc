#include "policy/builtin/node_label/node_label.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "policy/args.h"
#include "schedext/policy/handle.h"
#include "schedext/model/selectors.h"

namespace schedext::policy {
namespace {

constexpr std::string_view kName = "NodeLabel";
constexpr std::string_view kReasonRequired = "node(s) didn't match required labels";
constexpr std::string_view kReasonForbidden = "node(s) had forbidden labels";

// Configuration with owned strings; the policy keeps views into it.
struct RequirementSpec {
  std::string key;
  model::SelectorOperator op = model::SelectorOperator::kIn;
  std::vector<std::string> values;
};
using SelectorSpec = std::vector<RequirementSpec>;
struct PreferredSpec {
  int64_t weight = 0;
  SelectorSpec selector;
};
struct NodeLabelSpec {
  std::vector<SelectorSpec> required;
  std::vector<SelectorSpec> forbidden;
  std::vector<PreferredSpec> preferred;
};

bool IsInt64(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

Status ParseRequirement(const ArgsReader& reader, RequirementSpec& out) {
  SCHEDEXT_ASSIGN_OR_RETURN(out.key, reader.RequiredString("key"));
  if (std::optional<std::string> error = QualifiedNameError(out.key)) {
    return reader.FieldError("key", "invalid label key \"" + out.key + "\": " + *error);
  }
  SCHEDEXT_ASSIGN_OR_RETURN(
      std::optional<std::string_view> op_name,
      reader.Enum("operator", {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}));
  if (!op_name.has_value()) {
    return reader.FieldError("operator", "required");
  }
  std::optional<model::SelectorOperator> op = model::ParseSelectorOperator(*op_name);
  if (!op.has_value()) {
    return reader.FieldError("operator", "unsupported operator \"" + std::string(*op_name) + "\"");
  }
  out.op = *op;
  SCHEDEXT_ASSIGN_OR_RETURN(out.values, reader.StringList("values"));
  switch (out.op) {
    case model::SelectorOperator::kIn:
    case model::SelectorOperator::kNotIn:
      if (out.values.empty()) {
        return reader.FieldError("values", "must be non-empty when operator is In or NotIn");
      }
      for (size_t i = 0; i < out.values.size(); ++i) {
        if (std::optional<std::string> error = LabelValueError(out.values[i])) {
          return reader.FieldError("values[" + std::to_string(i) + "]",
                                   "invalid label value \"" + out.values[i] + "\": " + *error);
        }
      }
      break;
    case model::SelectorOperator::kExists:
    case model::SelectorOperator::kDoesNotExist:
      if (!out.values.empty()) {
        return reader.FieldError("values", "must be empty when operator is Exists or DoesNotExist");
      }
      break;
    case model::SelectorOperator::kGt:
    case model::SelectorOperator::kLt:
      if (out.values.size() != 1) {
        return reader.FieldError("values", "must have exactly one value when operator is Gt or Lt");
      }
      if (!IsInt64(out.values[0])) {
        return reader.FieldError(
            "values[0]",
            "must be an integer when operator is Gt or Lt, got \"" + out.values[0] + "\"");
      }
      break;
  }
  return OkStatus();
}

// matchLabels and matchExpressions of `reader`, ANDed; empty is an error.
StatusOr<SelectorSpec> ParseSelector(const ArgsReader& reader) {
  SelectorSpec selector;
  SCHEDEXT_ASSIGN_OR_RETURN(auto match_labels, reader.StringMap("matchLabels"));
  for (auto& [key, value] : match_labels) {
    std::string field = "matchLabels[" + key + "]";
    if (std::optional<std::string> error = QualifiedNameError(key)) {
      return reader.FieldError(field, "invalid label key \"" + key + "\": " + *error);
    }
    if (std::optional<std::string> error = LabelValueError(value)) {
      return reader.FieldError(field, "invalid label value \"" + value + "\": " + *error);
    }
    RequirementSpec requirement;
    requirement.key = std::move(key);
    requirement.op = model::SelectorOperator::kIn;
    requirement.values.push_back(std::move(value));
    selector.push_back(std::move(requirement));
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::vector<ArgsReader> expressions,
                            reader.ObjectList("matchExpressions", {"key", "operator", "values"}));
  for (const ArgsReader& expression : expressions) {
    RequirementSpec requirement;
    SCHEDEXT_RETURN_IF_ERROR(ParseRequirement(expression, requirement));
    selector.push_back(std::move(requirement));
  }
  if (selector.empty()) {
    return reader.Error("empty selector (set matchLabels or matchExpressions)");
  }
  return selector;
}

StatusOr<std::vector<SelectorSpec>> ParseSelectorList(const ArgsReader& reader,
                                                      std::string_view key) {
  SCHEDEXT_ASSIGN_OR_RETURN(std::vector<ArgsReader> items,
                            reader.ObjectList(key, {"matchLabels", "matchExpressions"}));
  std::vector<SelectorSpec> out;
  out.reserve(items.size());
  for (const ArgsReader& item : items) {
    SCHEDEXT_ASSIGN_OR_RETURN(SelectorSpec selector, ParseSelector(item));
    out.push_back(std::move(selector));
  }
  return out;
}

StatusOr<NodeLabelSpec> ParseArgs(const nlohmann::json& args, const PolicyContext& context) {
  SCHEDEXT_ASSIGN_OR_RETURN(
      ArgsReader reader,
      ArgsReader::Make(args, context.args_path, {"required", "forbidden", "preferred"}));
  NodeLabelSpec spec;
  SCHEDEXT_ASSIGN_OR_RETURN(spec.required, ParseSelectorList(reader, "required"));
  SCHEDEXT_ASSIGN_OR_RETURN(spec.forbidden, ParseSelectorList(reader, "forbidden"));
  SCHEDEXT_ASSIGN_OR_RETURN(
      std::vector<ArgsReader> preferred,
      reader.ObjectList("preferred", {"weight", "matchLabels", "matchExpressions"}));
  for (const ArgsReader& item : preferred) {
    PreferredSpec term;
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> weight, item.Int("weight", 1, 100));
    if (!weight.has_value()) {
      return item.FieldError("weight", "required");
    }
    term.weight = *weight;
    SCHEDEXT_ASSIGN_OR_RETURN(term.selector, ParseSelector(item));
    spec.preferred.push_back(std::move(term));
  }
  if (spec.required.empty() && spec.forbidden.empty() && spec.preferred.empty()) {
    return reader.Error("at least one of required, forbidden, preferred");
  }
  return spec;
}

// A selector as the hot loop reads it: requirements viewing the spec's strings.
using Selector = std::vector<model::SelectorRequirement>;

// Keys are interned in `names` (may be null), so that matching a node reads
// ids, not the node's label text.
Selector ViewSelector(const SelectorSpec& spec, model::NameTable* names) {
  Selector selector;
  selector.reserve(spec.size());
  for (const RequirementSpec& requirement : spec) {
    model::SelectorRequirement view;
    view.key = requirement.key;
    const model::InternedName key = model::InternedName::Of(requirement.key, names);
    view.key_id = key.id;
    view.key_table = key.table;
    // In / NotIn values interned too, so matching compares value ids; all or
    // none (a frozen table may lack some: then the values are compared as text).
    if (names != nullptr && (requirement.op == model::SelectorOperator::kIn ||
                             requirement.op == model::SelectorOperator::kNotIn)) {
      for (const std::string& value : requirement.values) {
        view.value_ids.push_back(names->Intern(value));
      }
      if (std::find(view.value_ids.begin(), view.value_ids.end(), model::kNoNameId) !=
          view.value_ids.end()) {
        view.value_ids.clear();
      }
    }
    view.op = requirement.op;
    view.values.assign(requirement.values.begin(), requirement.values.end());
    selector.push_back(std::move(view));
  }
  return selector;
}

std::vector<Selector> ViewSelectors(const std::vector<SelectorSpec>& specs,
                                    model::NameTable* names) {
  std::vector<Selector> out;
  out.reserve(specs.size());
  for (const SelectorSpec& spec : specs) {
    out.push_back(ViewSelector(spec, names));
  }
  return out;
}

bool SelectorMatches(const Selector& selector, const model::StringMap& labels) {
  for (const model::SelectorRequirement& requirement : selector) {
    if (!model::Matches(requirement, labels)) {
      return false;
    }
  }
  return true;
}

// What NodeLabel answers for a node, from its labels alone: the cache keeps
// it as the node's summary.
enum : uint8_t { kMatches = 0, kRequiredMissing = 1, kForbiddenFound = 2 };
struct LabelSummary {
  int64_t preferred = 0;  // the weights of the preferred terms the node matches
  uint8_t verdict = kMatches;
};

// The selectors, shared by the policy and its summarizer (which the cache
// may hold longer than the policy).
struct LabelRules {
  struct WeightedSelector {
    int64_t weight;
    Selector selector;
  };

  LabelRules(NodeLabelSpec from, model::NameTable* names)
      : spec(std::move(from)),
        required(ViewSelectors(spec.required, names)),
        forbidden(ViewSelectors(spec.forbidden, names)) {
    preferred.reserve(spec.preferred.size());
    for (const PreferredSpec& term : spec.preferred) {
      preferred.push_back({term.weight, ViewSelector(term.selector, names)});
    }
  }

  LabelSummary Summarize(const model::NodeInfo& node) const {
    LabelSummary summary;
    for (const Selector& selector : required) {
      if (!SelectorMatches(selector, node.labels)) {
        summary.verdict = kRequiredMissing;
        break;
      }
    }
    if (summary.verdict == kMatches) {
      for (const Selector& selector : forbidden) {
        if (SelectorMatches(selector, node.labels)) {
          summary.verdict = kForbiddenFound;
          break;
        }
      }
    }
    for (const WeightedSelector& term : preferred) {
      if (SelectorMatches(term.selector, node.labels)) {
        summary.preferred += term.weight;
      }
    }
    return summary;
  }

  const NodeLabelSpec spec;  // owns every string the selectors view
  const std::vector<Selector> required;
  const std::vector<Selector> forbidden;
  std::vector<WeightedSelector> preferred;  // filled by the constructor only
};

// Filters on required/forbidden label selectors and scores preferred ones.
class NodeLabel final : public Policy, public FilterHook, public ScoreHook {
 public:
  NodeLabel(NodeLabelSpec spec, const PolicyContext& context)
      : rules_(std::make_shared<const LabelRules>(std::move(spec), context.names)) {
    if (context.handle != nullptr) {
      summary_ = context.handle->AddNodeSummary<LabelSummary>(
          [rules = rules_](const model::NodeInfo& node) { return rules->Summarize(node); });
    }
  }

  std::string_view Name() const override { return kName; }
  model::NodeFields NodeFieldsRead() const override { return model::NodeFields::kLabels; }
  const FilterHook* AsFilter() const override {
    return rules_->required.empty() && rules_->forbidden.empty() ? nullptr : this;
  }
  const ScoreHook* AsScorer() const override {
    return rules_->preferred.empty() ? nullptr : this;
  }

  // FilterHook
  Verdict Filter(const RequestState& /*state*/, const model::PodInfo& /*pod*/,
                 const model::NodeInfo& node) const override {
    switch (Of(node).verdict) {
      case kRequiredMissing:
        return Verdict::Unresolvable(kReasonRequired);
      case kForbiddenFound:
        return Verdict::Unresolvable(kReasonForbidden);
      default:
        return Verdict::Success();
    }
  }

  // ScoreHook
  int64_t Score(const RequestState& /*state*/, const model::PodInfo& /*pod*/,
                const model::NodeInfo& node) const override {
    return Of(node).preferred;
  }
  void Normalize(const RequestState& /*state*/, std::span<int64_t> scores) const override {
    NormalizeToMax(scores, /*reverse=*/false);
  }

 private:
  LabelSummary Of(const model::NodeInfo& node) const {
    LabelSummary summary;
    return summary_.Get(node, summary) ? summary : rules_->Summarize(node);
  }

  const std::shared_ptr<const LabelRules> rules_;
  NodeSummarySlot<LabelSummary> summary_;  // set by the constructor only
};

}  // namespace

StatusOr<std::unique_ptr<Policy>> NewNodeLabel(const nlohmann::json& args,
                                               const PolicyContext& context) {
  SCHEDEXT_ASSIGN_OR_RETURN(NodeLabelSpec spec, ParseArgs(args, context));
  return std::unique_ptr<Policy>(std::make_unique<NodeLabel>(std::move(spec), context));
}

}  // namespace schedext::policy
