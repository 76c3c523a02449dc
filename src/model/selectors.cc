#include "schedext/model/selectors.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

namespace schedext::model {
namespace {

// The metadata.name field, the only one a node field selector can name.
constexpr std::string_view kNodeNameField = "metadata.name";

// strconv.ParseInt(text, 10, 64): optional sign, at least one digit, no
// spaces, in range.
std::optional<int64_t> ParseInt64(std::string_view text) {
  size_t pos = 0;
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    pos = 1;
  }
  if (pos == text.size()) {
    return std::nullopt;
  }
  // Accumulate negatively so that INT64_MIN parses without overflow.
  int64_t value = 0;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    if (value < (std::numeric_limits<int64_t>::min() + (c - '0')) / 10) {
      return std::nullopt;
    }
    value = value * 10 - (c - '0');
  }
  if (!negative) {
    if (value == std::numeric_limits<int64_t>::min()) {
      return std::nullopt;
    }
    value = -value;
  }
  return value;
}

// The Gt/Lt operand as kube-scheduler accepts it. labels.NewRequirement wants
// it to parse as an int64 *and* to be a valid label value, which must start
// with an alphanumeric character: "-5" and "+5" parse but are rejected, so a
// requirement with them never matches. What remains is digits only.
std::optional<int64_t> ParseRequirementInteger(std::string_view text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') {
    return std::nullopt;
  }
  return ParseInt64(text);
}

bool Contains(const std::vector<std::string_view>& values, std::string_view value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// kube-scheduler turns matchFields into field selectors and fails the term on
// anything but In/NotIn with exactly one value; the API server also rejects
// every key but metadata.name. We treat all of these as "does not match".
bool IsWellFormedField(const SelectorRequirement& req) {
  return req.key == kNodeNameField && req.values.size() == 1 &&
         (req.op == SelectorOperator::kIn || req.op == SelectorOperator::kNotIn);
}

}  // namespace

std::optional<std::string_view> StringMap::Find(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.first == key) {
      return entry.second;
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> StringMap::Find(const InternedName& key) const {
  if (!key.ComparableIn(ids_from_)) {
    return Find(key.text);
  }
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (ids_[i].key == key.id) {
      return entries_[i].second;
    }
  }
  return std::nullopt;
}

std::optional<NameId> StringMap::FindValueId(const InternedName& key) const {
  for (const EntryIds& ids : ids_) {
    if (ids.key == key.id) {
      return ids.value;
    }
  }
  return std::nullopt;
}

void StringMap::Set(std::string_view key, std::string_view value) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].first == key) {
      entries_[i].second = value;
      if (ids_from_ != nullptr) {
        ids_[i].value = ids_from_->Find(value);
      }
      return;
    }
  }
  entries_.emplace_back(key, value);
  if (ids_from_ != nullptr) {
    ids_.push_back({ids_from_->Find(key), ids_from_->Find(value)});
  }
}

void StringMap::AssignIds(const NameTable& table) {
  ids_from_ = &table;
  ids_.resize(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    ids_[i] = {table.Find(entries_[i].first), table.Find(entries_[i].second)};
  }
}

std::optional<SelectorOperator> ParseSelectorOperator(std::string_view text) {
  if (text == "In") {
    return SelectorOperator::kIn;
  }
  if (text == "NotIn") {
    return SelectorOperator::kNotIn;
  }
  if (text == "Exists") {
    return SelectorOperator::kExists;
  }
  if (text == "DoesNotExist") {
    return SelectorOperator::kDoesNotExist;
  }
  if (text == "Gt") {
    return SelectorOperator::kGt;
  }
  if (text == "Lt") {
    return SelectorOperator::kLt;
  }
  return std::nullopt;
}

// Matches() by ids alone (see selectors.h): nullopt when `req` cannot be
// decided that way on `labels`.
std::optional<bool> MatchesById(const SelectorRequirement& req, const StringMap& labels) {
  const InternedName key = req.interned_key();
  if (!key.ComparableIn(labels.ids_from())) {
    return std::nullopt;
  }
  const bool by_value = !req.value_ids.empty() && req.value_ids.size() == req.values.size();
  switch (req.op) {
    case SelectorOperator::kIn:
    case SelectorOperator::kNotIn: {
      if (!by_value) {
        return std::nullopt;
      }
      const std::optional<NameId> value = labels.FindValueId(key);
      const bool contained =
          value.has_value() && *value != kNoNameId &&
          std::find(req.value_ids.begin(), req.value_ids.end(), *value) != req.value_ids.end();
      return req.op == SelectorOperator::kIn ? contained : !contained;
    }
    case SelectorOperator::kExists:
      return req.values.empty() && labels.FindValueId(key).has_value();
    case SelectorOperator::kDoesNotExist:
      return req.values.empty() && !labels.FindValueId(key).has_value();
    case SelectorOperator::kGt:
    case SelectorOperator::kLt:
      break;
  }
  return std::nullopt;
}

bool Matches(const SelectorRequirement& req, const StringMap& labels) {
  if (const std::optional<bool> by_id = MatchesById(req, labels)) {
    return *by_id;
  }
  const std::optional<std::string_view> value = labels.Find(req.interned_key());
  // The value-count checks mirror labels.NewRequirement: kube-scheduler fails
  // the whole term on a malformed requirement rather than guessing. Without
  // them an empty NotIn would match every node.
  switch (req.op) {
    case SelectorOperator::kIn:
      return value.has_value() && Contains(req.values, *value);
    case SelectorOperator::kNotIn:
      return !req.values.empty() && (!value.has_value() || !Contains(req.values, *value));
    case SelectorOperator::kExists:
      return req.values.empty() && value.has_value();
    case SelectorOperator::kDoesNotExist:
      return req.values.empty() && !value.has_value();
    case SelectorOperator::kGt:
    case SelectorOperator::kLt: {
      if (!value.has_value() || req.values.size() != 1) {
        return false;
      }
      const std::optional<int64_t> label = ParseInt64(*value);
      const std::optional<int64_t> bound = ParseRequirementInteger(req.values[0]);
      if (!label.has_value() || !bound.has_value()) {
        return false;
      }
      return req.op == SelectorOperator::kGt ? *label > *bound : *label < *bound;
    }
  }
  return false;
}

bool Matches(const NodeSelectorTerm& term, const StringMap& labels, std::string_view node_name) {
  if (term.match_expressions.empty() && term.match_fields.empty()) {
    return false;
  }
  for (const SelectorRequirement& req : term.match_expressions) {
    if (!Matches(req, labels)) {
      return false;
    }
  }
  for (const SelectorRequirement& req : term.match_fields) {
    if (!IsWellFormedField(req)) {
      return false;
    }
    // kube-scheduler knows no fields of a node without a name and then skips
    // the (well-formed) matchFields, see nodeSelectorTerm.match.
    if (node_name.empty()) {
      continue;
    }
    const bool equal = node_name == req.values[0];
    if (equal != (req.op == SelectorOperator::kIn)) {
      return false;
    }
  }
  return true;
}

bool MatchesAny(std::span<const NodeSelectorTerm> terms, const StringMap& labels,
                std::string_view node_name) {
  for (const NodeSelectorTerm& term : terms) {
    if (Matches(term, labels, node_name)) {
      return true;
    }
  }
  return false;
}

std::optional<TaintEffect> ParseTaintEffect(std::string_view text) {
  if (text == "NoSchedule") {
    return TaintEffect::kNoSchedule;
  }
  if (text == "PreferNoSchedule") {
    return TaintEffect::kPreferNoSchedule;
  }
  if (text == "NoExecute") {
    return TaintEffect::kNoExecute;
  }
  return std::nullopt;
}

bool Tolerates(const Toleration& toleration, const Taint& taint) {
  if (toleration.effect.has_value() && *toleration.effect != taint.effect) {
    return false;
  }
  // An empty key skips the key check for either operator, as ToleratesTaint
  // does. The API server only admits an empty key with Exists, but a
  // configured or hand-written Equal toleration with an empty key therefore
  // matches every key whose taint value equals its value.
  if (!toleration.key.empty() && toleration.key != taint.key) {
    return false;
  }
  switch (toleration.op) {
    case TolerationOperator::kExists:
      return true;
    case TolerationOperator::kEqual:
      return toleration.value == taint.value;
  }
  return false;
}

bool TolerationsTolerate(std::span<const Toleration> tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&taint](const Toleration& t) { return Tolerates(t, taint); });
}

}  // namespace schedext::model
