#include "schedext/policy/registry.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace schedext::policy {

Status Registry::Register(std::string name, PolicyFactory factory) {
  if (name.empty()) {
    return InvalidArgumentError("register policy: empty name");
  }
  if (!factory) {
    return InvalidArgumentError("register policy \"" + name + "\": null factory");
  }
  if (factories_.contains(name)) {
    return InvalidArgumentError("register policy \"" + name + "\": already registered");
  }
  factories_.emplace(std::move(name), std::move(factory));
  return OkStatus();
}

StatusOr<std::unique_ptr<Policy>> Registry::Create(std::string_view name,
                                                   const nlohmann::json& args,
                                                   const PolicyContext& context) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& entry : factories_) {
      if (!known.empty()) {
        known.append(", ");
      }
      known.append(entry.first);
    }
    if (known.empty()) {
      known = "none";
    }
    std::string message = "unknown policy \"";
    message.append(name).append("\" (known: ").append(known).append(")");
    return NotFoundError(std::move(message));
  }
  StatusOr<std::unique_ptr<Policy>> policy = it->second(args, context);
  if (policy.ok() && *policy == nullptr) {
    return InternalError("policy \"" + it->first + "\": factory returned null");
  }
  return policy;
}

bool Registry::Contains(std::string_view name) const { return factories_.contains(name); }

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> names;
  names.reserve(factories_.size());
  for (const auto& entry : factories_) {
    names.push_back(entry.first);
  }
  return names;
}

}  // namespace schedext::policy
