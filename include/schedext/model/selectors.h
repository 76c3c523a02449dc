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

#include "schedext/model/name_table.h"

namespace schedext::model {

// A string→string map (labels, annotations, nodeSelector) as a small vector of
// pairs: lookups are linear scans, faster than hashing at the 5–30 entries real
// objects have. Keys are unique; when a body repeats a key the last value wins.
//
// Once AssignIds(table) ran, each key and each value also carries its id in
// that table (name_table.h; kNoNameId when the table lacks it), in a compact
// array of its own: Find(InternedName) then scans ids and reads no key text,
// where scanning keys would load a cache line of the owner's text for every
// key of the same length, and a selector whose values are interned compares
// value ids without reading the value either (Matches below).
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
  bool Contains(std::string_view key) const { return Find(key).has_value(); }
  // Inserts or replaces.
  void Set(std::string_view key, std::string_view value);
  // Tags every key with its id in `table`; keys set later are tagged too.
  void AssignIds(const NameTable& table);
  const NameTable* ids_from() const { return ids_from_; }
  // Removes every entry and the ids' table, keeping capacity for reuse.
  void Clear() {
    entries_.clear();
    ids_.clear();
    ids_from_ = nullptr;
  }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::span<const Entry> entries() const { return entries_; }

 private:
  struct EntryIds {
    NameId key = kNoNameId;
    NameId value = kNoNameId;
  };
  std::vector<Entry> entries_;
  std::vector<EntryIds> ids_;  // ids_[i]: entries_[i]'s; empty while ids_from_ is null
  const NameTable* ids_from_ = nullptr;
};

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
