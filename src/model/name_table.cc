#include "schedext/model/name_table.h"

#include <string>

#include "schedext/model/resources.h"

namespace schedext::model {

NameTable::NameTable() {
  // Fixed ids for the resources ResourceList keeps in fields (name_table.h).
  ids_.emplace(std::string(kResourceCpu), kCpuNameId);
  ids_.emplace(std::string(kResourceMemory), kMemoryNameId);
  ids_.emplace(std::string(kResourceEphemeralStorage), kEphemeralStorageNameId);
  ids_.emplace(std::string(kResourcePods), kPodsNameId);
}

NameId NameTable::Intern(std::string_view name) {
  if (auto it = ids_.find(name); it != ids_.end()) {
    return it->second;
  }
  if (frozen_) {
    return kNoNameId;
  }
  const NameId id = static_cast<NameId>(ids_.size() + 1);
  ids_.emplace(std::string(name), id);
  return id;
}

NameId NameTable::Find(std::string_view name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? kNoNameId : it->second;
}

}  // namespace schedext::model
