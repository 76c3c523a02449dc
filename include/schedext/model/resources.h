// Resource amounts as the scheduler counts them: CPU in milli-cores, everything
// else (memory, ephemeral-storage, pods, hugepages-*, extended resources) in
// whole units, each an int64.
//
// Names are std::string_view: they point into the request body or into storage
// the owner of the ResourceList keeps alive (see pod_info.h / node_info.h).
// Thread-safety: plain value type.
#ifndef SCHEDEXT_MODEL_RESOURCES_H_
#define SCHEDEXT_MODEL_RESOURCES_H_

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/key_index.h"
#include "schedext/model/name_table.h"
#include "schedext/status.h"

namespace schedext::model {

inline constexpr std::string_view kResourceCpu = "cpu";
inline constexpr std::string_view kResourceMemory = "memory";
inline constexpr std::string_view kResourceEphemeralStorage = "ephemeral-storage";
inline constexpr std::string_view kResourcePods = "pods";

// Parses `text` as the amount of resource `name`: Milli() for "cpu", Value() for
// every other resource. Errors name the resource: `cpu: invalid quantity "5x"`.
StatusOr<int64_t> ParseResourceAmount(std::string_view name, std::string_view text);

// A named amount that is not one of the four well-known resources. `id` is
// the name's id in the list's NameTable (ResourceList::ids_from), kNoNameId
// when the list has none or the table lacks the name; it is derived from
// `name` and not part of equality.
struct ScalarResource {
  std::string_view name;
  int64_t amount = 0;
  NameId id = kNoNameId;
  friend bool operator==(const ScalarResource& a, const ScalarResource& b) {
    return a.name == b.name && a.amount == b.amount;
  }
};

class ResourceList {
 public:
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t pods = 0;
  // hugepages-*, extended resources, ...; at most one entry per name, in
  // insertion order. Read freely; change only through the methods below,
  // which keep the index of a long list in step.
  std::vector<ScalarResource> scalars;

  // Amount of `name` (0 when absent). "cpu" answers milli-cores.
  int64_t Get(std::string_view name) const;
  // The same answer, by id when this list's ids come from name.table (no
  // text is read), else by text.
  int64_t Get(const InternedName& name) const;
  // Tags every scalar with its id in `table` (the cache does this when it
  // stores a node or a usage); scalars added later are tagged as they come.
  void AssignIds(const NameTable& table);
  // The table the scalars' ids come from; null: ids unset.
  const NameTable* ids_from() const { return ids_from_; }
  // Sets `name` to `amount`, replacing any previous amount.
  void Set(std::string_view name, int64_t amount);
  // Adds `amount` to `name` (saturating at the int64 limits).
  void Add(std::string_view name, int64_t amount);
  // this[r] += other[r] for every resource r of `other`.
  void AddAll(const ResourceList& other);
  // this[r] = max(this[r], other[r]) for every resource r of `other`.
  void MaxWith(const ResourceList& other);
  // Calls fn(name, amount) for every resource with a non-zero amount, the four
  // well-known ones first.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (milli_cpu != 0) fn(kResourceCpu, milli_cpu);
    if (memory != 0) fn(kResourceMemory, memory);
    if (ephemeral_storage != 0) fn(kResourceEphemeralStorage, ephemeral_storage);
    if (pods != 0) fn(kResourcePods, pods);
    for (const ScalarResource& s : scalars) {
      if (s.amount != 0) fn(s.name, s.amount);
    }
  }
  // Removes the scalars whose amount is 0.
  void RemoveZeroScalars();
  // Resets every amount and the ids' table, keeping capacity for reuse.
  void Clear();

  // Amounts only: the ids' table is derived data.
  friend bool operator==(const ResourceList& a, const ResourceList& b) {
    return a.milli_cpu == b.milli_cpu && a.memory == b.memory &&
           a.ephemeral_storage == b.ephemeral_storage && a.pods == b.pods &&
           a.scalars == b.scalars;
  }

 private:
  // A new scalar, tagged when the list has a table.
  void Append(std::string_view name, int64_t amount);
  // The scalar named `name`, or nullptr: a scan up to kScanLimit scalars,
  // the index beyond.
  ScalarResource* FindScalar(std::string_view name);
  const ScalarResource* FindScalar(std::string_view name) const;

  const NameTable* ids_from_ = nullptr;
  // Of scalars' names; empty up to kScanLimit scalars, so that a client's
  // 60,000 extended resources cost linear time, not quadratic.
  KeyIndex index_;
};

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_RESOURCES_H_
