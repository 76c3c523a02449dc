// NameTable: resource names and label/annotation keys interned to small
// integer ids, so that a per-node lookup compares integers instead of text.
//
// Who fills it and when. Policies intern the names they read on every node
// (GpuShare's gpu-mem / gpu-count, NodeLabel's and NodeNumeric's keys) while
// their profiles are built, at configuration time; then the table is frozen
// and shared with the cluster cache, which tags what every cached node and
// usage carries (ResourceList / StringMap AssignIds) when it stores it. A name
// no policy asked for has no id (kNoNameId) and is only found by text.
//
// A policy keeps an InternedName per configured name. Lookups by an
// InternedName (ResourceList::Get, StringMap::Find) compare ids when the
// container's ids come from the same table, and fall back to comparing text
// otherwise (objects decoded from a request body, hand-built test objects):
// the answer is the same either way, only the cost differs.
//
// Thread-safety: Intern only before Freeze() and before the table is shared
// (start-up, one thread). After Freeze() the table is immutable: Find and
// every read are safe from any number of threads without a lock.
#ifndef SCHEDEXT_MODEL_NAME_TABLE_H_
#define SCHEDEXT_MODEL_NAME_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace schedext::model {

using NameId = uint32_t;
// Not interned (in no table, or a table that does not hold the name).
inline constexpr NameId kNoNameId = 0;
// The well-known resources have fixed ids in every table, so ResourceList can
// map them to its fields without looking at the text.
inline constexpr NameId kCpuNameId = 1;
inline constexpr NameId kMemoryNameId = 2;
inline constexpr NameId kEphemeralStorageNameId = 3;
inline constexpr NameId kPodsNameId = 4;

class NameTable {
 public:
  NameTable();
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  // The id of `name`, adding it when new. After Freeze(): the id if present,
  // else kNoNameId (callers then look up by text, which is slower but exact).
  NameId Intern(std::string_view name);
  // The id of `name`, or kNoNameId.
  NameId Find(std::string_view name) const;
  // No more Intern from now on; call before sharing the table.
  void Freeze() { frozen_ = true; }
  bool frozen() const { return frozen_; }
  size_t size() const { return ids_.size(); }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, NameId, StringHash, std::equal_to<>> ids_;
  bool frozen_ = false;
};

// A name as a policy configured it, with its id in `table` (kNoNameId and
// null when it was not interned anywhere). The text is owned by the policy.
struct InternedName {
  std::string_view text;
  NameId id = kNoNameId;
  const NameTable* table = nullptr;

  // `text` interned in `table` (which may be null: text only).
  static InternedName Of(std::string_view text, NameTable* table) {
    return table == nullptr ? InternedName{text, kNoNameId, nullptr}
                            : InternedName{text, table->Intern(text), table};
  }
  // Whether a container whose ids come from `ids_from` can be searched by id.
  bool ComparableIn(const NameTable* ids_from) const {
    return id != kNoNameId && ids_from != nullptr && ids_from == table;
  }
};

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_NAME_TABLE_H_
