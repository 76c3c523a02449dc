#include "schedext/model/selectors.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>

namespace schedext::model {
namespace {

// The largest magnitude up to which every int64 is exactly a double (2^53).
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;

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

// Gt / Lt with `label` the label's value as an integer (nullopt: absent or
// not an integer, which matches neither).
bool MatchesInteger(const SelectorRequirement& req, std::optional<int64_t> label) {
  if (!label.has_value() || req.values.size() != 1) {
    return false;
  }
  const std::optional<int64_t> bound = ParseRequirementInteger(req.values[0]);
  if (!bound.has_value()) {
    return false;
  }
  return req.op == SelectorOperator::kGt ? *label > *bound : *label < *bound;
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

std::optional<double> ParseLabelNumber(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> ParseLabelInteger(std::string_view text) { return ParseInt64(text); }

StringMap::Tag StringMap::MakeTag(NameId key, uint32_t index) const {
  const std::string_view value = entries_[index].second;
  Tag tag;
  tag.key = key;
  tag.value = ids_from_->Find(value);
  tag.index = index;
  const std::optional<double> number = ParseLabelNumber(value);
  if (number.has_value()) {
    tag.parsed |= kParsedNumber;
    tag.number = *number;
  }
  if (const std::optional<int64_t> integer = ParseInt64(value)) {
    // One double holds both parses when they agree: a decimal integer's
    // correctly rounded double is the integer itself up to 2^53 ("-0" gives
    // -0.0, which compares equal and converts back to 0). Anything else keeps
    // its text for FindInteger to parse.
    const bool exact = *integer >= -kMaxExactInteger && *integer <= kMaxExactInteger &&
                       (!number.has_value() || *number == static_cast<double>(*integer));
    if (exact) {
      tag.parsed |= kParsedInteger;
      if (!number.has_value()) {
        tag.number = static_cast<double>(*integer);
      }
    } else {
      tag.parsed |= kParsedWideInteger;
    }
  }
  return tag;
}

const StringMap::Tag* StringMap::FindTag(NameId key) const {
  for (const Tag& tag : tags_) {
    if (tag.key == key) {
      return &tag;
    }
  }
  return nullptr;
}

uint32_t StringMap::PositionOf(std::string_view key) const {
  if (!index_.empty()) {
    return index_.Find(key, [this](uint32_t p) { return entries_[p].first; });
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].first == key) {
      CountKeyProbes(i + 1);
      return static_cast<uint32_t>(i);
    }
  }
  CountKeyProbes(entries_.size());
  return KeyIndex::kNotFound;
}

std::optional<std::string_view> StringMap::Find(std::string_view key) const {
  const uint32_t position = PositionOf(key);
  if (position == KeyIndex::kNotFound) {
    return std::nullopt;
  }
  return entries_[position].second;
}

std::optional<std::string_view> StringMap::Find(const InternedName& key) const {
  if (!key.ComparableIn(ids_from_)) {
    return Find(key.text);
  }
  if (const Tag* tag = FindTag(key.id)) {
    return entries_[tag->index].second;
  }
  return std::nullopt;
}

std::optional<NameId> StringMap::FindValueId(const InternedName& key) const {
  if (const Tag* tag = FindTag(key.id)) {
    return tag->value;
  }
  return std::nullopt;
}

std::optional<double> StringMap::FindNumber(const InternedName& key) const {
  if (!key.ComparableIn(ids_from_)) {
    const std::optional<std::string_view> text = Find(key.text);
    return text.has_value() ? ParseLabelNumber(*text) : std::nullopt;
  }
  const Tag* tag = FindTag(key.id);
  if (tag == nullptr || (tag->parsed & kParsedNumber) == 0) {
    return std::nullopt;
  }
  return tag->number;
}

std::optional<int64_t> StringMap::FindInteger(const InternedName& key) const {
  if (!key.ComparableIn(ids_from_)) {
    const std::optional<std::string_view> text = Find(key.text);
    return text.has_value() ? ParseInt64(*text) : std::nullopt;
  }
  const Tag* tag = FindTag(key.id);
  if (tag == nullptr) {
    return std::nullopt;
  }
  if ((tag->parsed & kParsedInteger) != 0) {
    return static_cast<int64_t>(tag->number);
  }
  if ((tag->parsed & kParsedWideInteger) != 0) {
    return ParseInt64(entries_[tag->index].second);
  }
  return std::nullopt;
}

void StringMap::Set(std::string_view key, std::string_view value) {
  const auto key_at = [this](uint32_t p) { return entries_[p].first; };
  // An indexed map records a new key as it looks for it.
  const uint32_t i =
      index_.empty()
          ? PositionOf(key)
          : index_.FindOrInsert(key, static_cast<uint32_t>(entries_.size()), key_at);
  if (i != KeyIndex::kNotFound) {
    entries_[i].second = value;
    if (ids_from_ != nullptr) {
      for (Tag& tag : tags_) {
        if (tag.index == i) {
          tag = MakeTag(tag.key, tag.index);
          break;
        }
      }
    }
    return;
  }
  entries_.emplace_back(key, value);
  if (index_.empty() && entries_.size() > kScanLimit) {
    index_.Rebuild(entries_.size(), key_at);
  }
  if (ids_from_ != nullptr) {
    if (const NameId id = ids_from_->Find(key); id != kNoNameId) {
      tags_.push_back(MakeTag(id, static_cast<uint32_t>(entries_.size() - 1)));
    }
  }
}

void StringMap::AssignIds(const NameTable& table) {
  ids_from_ = &table;
  tags_.clear();
  // Counted first, so that the tags take one exact block: a cached node's
  // maps are copied with every new snapshot entry of the node.
  size_t tagged = 0;
  for (const Entry& entry : entries_) {
    tagged += table.Find(entry.first) != kNoNameId ? 1 : 0;
  }
  tags_.reserve(tagged);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (const NameId id = table.Find(entries_[i].first); id != kNoNameId) {
      tags_.push_back(MakeTag(id, static_cast<uint32_t>(i)));
    }
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
      return MatchesInteger(req, labels.FindInteger(key));
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
    case SelectorOperator::kLt:
      return MatchesInteger(req, value.has_value() ? ParseInt64(*value) : std::nullopt);
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
