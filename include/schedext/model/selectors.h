// Label maps, node selector terms, taints and tolerations, and the matching
// rules Kubernetes applies to them (component-helpers nodeaffinity, v1 helpers
// ToleratesTaint).
//
// Every string is a std::string_view into storage the owner keeps alive: the
// request body for decoded objects, the policy's own copy for configured ones.
// Thread-safety: plain value types and pure functions.
#ifndef SCHEDEXT_MODEL_SELECTORS_H_
#define SCHEDEXT_MODEL_SELECTORS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/key_index.h"
#include "schedext/model/name_table.h"

namespace schedext::model {

// A string→string map (labels, annotations, nodeSelector) as a small vector of
// pairs: lookups are linear scans, faster than hashing at the 5–30 entries real
// objects have. Beyond kScanLimit entries the map also keeps a KeyIndex, so
// that a client's pod with 32,000 annotations costs linear time to build and
// constant time per lookup. Keys are unique; when a body repeats a key the
// last value wins, at the first one's position.
//
// Once AssignIds(table) ran, every entry whose key the table holds also has a
// tag, in a compact array of its own: the key's and the value's ids (kNoNameId
// for a value the table lacks), the entry's position, and the value parsed
// once as a number (ParseLabelNumber) and as an integer (ParseLabelInteger).
// A lookup by an interned key (Find, FindValueId, FindNumber, FindInteger,
// Matches) then scans only those few tags and reads no key text, no value
// text and parses nothing: a cached node's labels are tagged when the cache
// stores them, and a per-node policy reads one small block per map instead of
// the entries, their text and a parse. An entry whose key the table lacks has
// no tag; no interned key can equal it. Untagged maps (pods, objects decoded
// from a request) carry no tag array at all and are searched by text.
class StringMap {
 public:
  using Entry = std::pair<std::string_view, std::string_view>;

  std::optional<std::string_view> Find(std::string_view key) const;
  // The same answer, by id when this map's ids come from key.table.
  std::optional<std::string_view> Find(const InternedName& key) const;
  // By id only (requires key.ComparableIn(ids_from())): the id of the value
  // of `key` (kNoNameId when the table lacks that value), nullopt when the
  // key is absent.
  std::optional<NameId> FindValueId(const InternedName& key) const;
  // ParseLabelNumber of the value of `key`: nullopt when the key is absent or
  // its value is not a number. Pre-parsed when the map's ids come from
  // key.table.
  std::optional<double> FindNumber(const InternedName& key) const;
  // ParseLabelInteger of the value of `key` (the label side of Gt / Lt):
  // nullopt when absent or not an int64. Pre-parsed as FindNumber.
  std::optional<int64_t> FindInteger(const InternedName& key) const;
  bool Contains(std::string_view key) const { return Find(key).has_value(); }
  // Inserts or replaces.
  void Set(std::string_view key, std::string_view value);
  // Tags every entry whose key `table` holds; keys set later are tagged too.
  void AssignIds(const NameTable& table);
  const NameTable* ids_from() const { return ids_from_; }
  // Removes every entry and the ids' table, keeping capacity for reuse.
  void Clear() {
    entries_.clear();
    tags_.clear();
    index_.Reset();
    ids_from_ = nullptr;
  }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::span<const Entry> entries() const { return entries_; }

 private:
  // What the value of a tagged entry parsed as (Tag::parsed bits).
  enum : uint8_t {
    kParsedNumber = 1U << 0,   // ParseLabelNumber succeeded: Tag::number is it
    kParsedInteger = 1U << 1,  // ParseLabelInteger succeeded with |v| <= 2^53:
                               // Tag::number holds v exactly
    kParsedWideInteger = 1U << 2,  // ParseLabelInteger succeeded beyond 2^53:
                                   // FindInteger parses the text again
  };
  struct Tag {
    NameId key = kNoNameId;
    NameId value = kNoNameId;
    uint32_t index = 0;  // of the entry in entries_
    uint8_t parsed = 0;
    double number = 0;
  };
  Tag MakeTag(NameId key, uint32_t index) const;
  const Tag* FindTag(NameId key) const;
  // The position of `key` in entries_, or KeyIndex::kNotFound.
  uint32_t PositionOf(std::string_view key) const;

  // The members the by-id lookups read first, together.
  const NameTable* ids_from_ = nullptr;
  std::vector<Tag> tags_;  // in entry order; empty while ids_from_ is null
  std::vector<Entry> entries_;
  KeyIndex index_;  // of entries_' keys; empty up to kScanLimit entries
};

// A label or annotation value as NodeNumeric reads it: the whole text as a
// finite double (std::from_chars, general format: no leading '+' or space, no
// hex; "inf", "nan" and out-of-range values are not numbers).
std::optional<double> ParseLabelNumber(std::string_view text);
// A label value as Gt / Lt read it (strconv.ParseInt(text, 10, 64)): an
// optional sign, at least one digit, nothing else, within int64.
std::optional<int64_t> ParseLabelInteger(std::string_view text);

enum class SelectorOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

// Parses "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt" (exact spelling).
std::optional<SelectorOperator> ParseSelectorOperator(std::string_view text);

struct SelectorRequirement {
  std::string_view key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string_view> values;
  // `key`'s id when a policy interned it (configured selectors); kNoNameId
  // and null for selectors decoded from a request.
  NameId key_id = kNoNameId;
  const NameTable* key_table = nullptr;
  // The ids of `values` in key_table, in order, when the policy interned them
  // all (In / NotIn); empty otherwise (values are then compared as text).
  std::vector<NameId> value_ids = {};

  InternedName interned_key() const { return InternedName{key, key_id, key_table}; }
};

// True when `labels` satisfy `req`, with Kubernetes semantics: In/NotIn compare
// strings (NotIn and DoesNotExist match an absent key); Gt/Lt parse both the
// label value and the single requirement value as int64 and fail on anything
// else (absent key, unparsable value, values.size() != 1). When the labels'
// ids come from req.key_table, the key is found by id, and In/NotIn with
// value_ids compare value ids (equal text ⇔ equal id in one table, and a
// value the table lacks equals none of the interned ones): no text is read.
bool Matches(const SelectorRequirement& req, const StringMap& labels);

// matchExpressions (against labels) AND matchFields (only "metadata.name" is
// supported, against `node_name`). An empty term matches nothing.
struct NodeSelectorTerm {
  std::vector<SelectorRequirement> match_expressions;
  std::vector<SelectorRequirement> match_fields;
};
bool Matches(const NodeSelectorTerm& term, const StringMap& labels, std::string_view node_name);

// Terms are ORed. An empty list of terms matches nothing (as in Kubernetes).
bool MatchesAny(std::span<const NodeSelectorTerm> terms, const StringMap& labels,
                std::string_view node_name);

struct PreferredSchedulingTerm {
  int32_t weight = 0;  // 1..100
  NodeSelectorTerm preference;
};

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };
std::optional<TaintEffect> ParseTaintEffect(std::string_view text);

struct Taint {
  std::string_view key;
  std::string_view value;
  TaintEffect effect = TaintEffect::kNoSchedule;
};

enum class TolerationOperator { kEqual, kExists };

struct Toleration {
  std::string_view key;  // empty with kExists: tolerates every key
  TolerationOperator op = TolerationOperator::kEqual;
  std::string_view value;
  std::optional<TaintEffect> effect;  // nullopt: every effect
};

// Kubernetes Toleration.ToleratesTaint.
bool Tolerates(const Toleration& toleration, const Taint& taint);
// True when some toleration tolerates `taint`.
bool TolerationsTolerate(std::span<const Toleration> tolerations, const Taint& taint);

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_SELECTORS_H_
