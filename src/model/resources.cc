#include "schedext/model/resources.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/text.h"
#include "schedext/model/quantity.h"

namespace schedext::model {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return sum;
}

// The field that holds a well-known resource, or nullptr for a scalar. A
// template so the const and mutable lookups share one list of names.
template <typename List>
auto* WellKnownField(List& list, std::string_view name) {
  using Field = std::conditional_t<std::is_const_v<List>, const int64_t, int64_t>;
  Field* field = nullptr;
  if (name == kResourceCpu) {
    field = &list.milli_cpu;
  } else if (name == kResourceMemory) {
    field = &list.memory;
  } else if (name == kResourceEphemeralStorage) {
    field = &list.ephemeral_storage;
  } else if (name == kResourcePods) {
    field = &list.pods;
  }
  return field;
}

// `"text"`, cut like Quantity::Parse's messages cut it (40 bytes, whole UTF-8
// sequences) so both errors read alike.


}  // namespace

StatusOr<int64_t> ParseResourceAmount(std::string_view name, std::string_view text) {
  StatusOr<Quantity> quantity = Quantity::Parse(text);
  if (!quantity.ok()) {
    return quantity.status().WithContext(name);
  }
  StatusOr<int64_t> amount = name == kResourceCpu ? quantity->Milli() : quantity->Value();
  if (!amount.ok()) {
    // Quantity's own message cannot quote the input; this one can.
    return InvalidArgumentError(std::string(name) + ": quantity " + QuoteShort(text) +
                                " is out of range");
  }
  return amount;
}

int64_t ResourceList::Get(std::string_view name) const {
  if (const int64_t* field = WellKnownField(*this, name)) {
    return *field;
  }
  const ScalarResource* scalar = FindScalar(name);
  return scalar == nullptr ? 0 : scalar->amount;
}

void ResourceList::Set(std::string_view name, int64_t amount) {
  if (int64_t* field = WellKnownField(*this, name)) {
    *field = amount;
  } else if (ScalarResource* scalar = FindScalar(name)) {
    scalar->amount = amount;
  } else {
    Append(name, amount);
  }
}

void ResourceList::Add(std::string_view name, int64_t amount) {
  if (int64_t* field = WellKnownField(*this, name)) {
    *field = SaturatingAdd(*field, amount);
  } else if (ScalarResource* scalar = FindScalar(name)) {
    scalar->amount = SaturatingAdd(scalar->amount, amount);
  } else if (amount != 0) {
    // Adding zero to an absent name changes nothing; an entry would only cost
    // an allocation and make equal lists compare unequal.
    Append(name, amount);
  }
}

void ResourceList::AddAll(const ResourceList& other) {
  milli_cpu = SaturatingAdd(milli_cpu, other.milli_cpu);
  memory = SaturatingAdd(memory, other.memory);
  ephemeral_storage = SaturatingAdd(ephemeral_storage, other.ephemeral_storage);
  pods = SaturatingAdd(pods, other.pods);
  // By index: `other` may be *this, and Add may grow our vector.
  for (size_t i = 0; i < other.scalars.size(); ++i) {
    Add(other.scalars[i].name, other.scalars[i].amount);
  }
}

void ResourceList::MaxWith(const ResourceList& other) {
  milli_cpu = std::max(milli_cpu, other.milli_cpu);
  memory = std::max(memory, other.memory);
  ephemeral_storage = std::max(ephemeral_storage, other.ephemeral_storage);
  pods = std::max(pods, other.pods);
  for (size_t i = 0; i < other.scalars.size(); ++i) {
    const ScalarResource theirs = other.scalars[i];
    if (ScalarResource* mine = FindScalar(theirs.name)) {
      mine->amount = std::max(mine->amount, theirs.amount);
    } else if (theirs.amount > 0) {
      // An absent name counts as 0, so only a positive amount changes it.
      Append(theirs.name, theirs.amount);
    }
  }
}

int64_t ResourceList::Get(const InternedName& name) const {
  if (!name.ComparableIn(ids_from_)) {
    return Get(name.text);
  }
  switch (name.id) {
    case kCpuNameId:
      return milli_cpu;
    case kMemoryNameId:
      return memory;
    case kEphemeralStorageNameId:
      return ephemeral_storage;
    case kPodsNameId:
      return pods;
    default:
      break;
  }
  if (!index_.empty()) {
    const ScalarResource* scalar = FindScalar(name.text);
    return scalar == nullptr ? 0 : scalar->amount;
  }
  for (const ScalarResource& s : scalars) {
    if (s.id == name.id) {
      return s.amount;
    }
  }
  return 0;
}

void ResourceList::AssignIds(const NameTable& table) {
  ids_from_ = &table;
  for (ScalarResource& s : scalars) {
    s.id = table.Find(s.name);
  }
}

void ResourceList::Append(std::string_view name, int64_t amount) {
  scalars.push_back(
      ScalarResource{name, amount, ids_from_ != nullptr ? ids_from_->Find(name) : kNoNameId});
  if (!index_.empty()) {
    index_.Insert(name, static_cast<uint32_t>(scalars.size() - 1));
  } else if (scalars.size() > kScanLimit) {
    index_.Rebuild(scalars.size(), [this](uint32_t p) { return scalars[p].name; });
  }
}

const ScalarResource* ResourceList::FindScalar(std::string_view name) const {
  if (!index_.empty()) {
    const uint32_t p = index_.Find(name, [this](uint32_t i) { return scalars[i].name; });
    return p == KeyIndex::kNotFound ? nullptr : &scalars[p];
  }
  for (size_t i = 0; i < scalars.size(); ++i) {
    if (scalars[i].name == name) {
      CountKeyProbes(i + 1);
      return &scalars[i];
    }
  }
  CountKeyProbes(scalars.size());
  return nullptr;
}

ScalarResource* ResourceList::FindScalar(std::string_view name) {
  return const_cast<ScalarResource*>(std::as_const(*this).FindScalar(name));
}

void ResourceList::RemoveZeroScalars() {
  std::erase_if(scalars, [](const ScalarResource& s) { return s.amount == 0; });
  if (scalars.size() > kScanLimit) {
    index_.Rebuild(scalars.size(), [this](uint32_t p) { return scalars[p].name; });
  } else {
    index_.Reset();
  }
}

void ResourceList::Clear() {
  milli_cpu = 0;
  memory = 0;
  ephemeral_storage = 0;
  pods = 0;
  scalars.clear();  // keeps the capacity for the next request
  index_.Reset();
  ids_from_ = nullptr;
}

}  // namespace schedext::model
