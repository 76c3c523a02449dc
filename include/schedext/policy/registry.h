// Registry: policy name → factory. Filled explicitly by RegisterBuiltinPolicies
// (the one list of built-ins); extensions register theirs the same way before
// the profiles are built. Thread-safety: fill it, then only read it.
#ifndef SCHEDEXT_POLICY_REGISTRY_H_
#define SCHEDEXT_POLICY_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schedext/model/name_table.h"
#include "schedext/policy/handle.h"
#include "schedext/policy/policy.h"
#include "schedext/status.h"

namespace schedext::policy {

// What a factory may need besides its arguments (grows with the cluster layer).
struct PolicyContext {
  // Prefix for error messages about the arguments, e.g.
  // "profiles[0].policies[1].args".
  std::string args_path = "args";
  // The handle a stateful policy registers its cluster state, routes,
  // metrics, readiness and background work through (handle.h); lent for the
  // factory call, the object outlives the policy. Never null when built by
  // Profile::Build, which gives a private PolicyHost when its caller gives
  // none (tests): registrations then reach no cache or server.
  PolicyHandle* handle = nullptr;
  // Where a policy interns the resource names and label keys it looks up on
  // every node (model/name_table.h), so those lookups compare ids; lent for
  // the factory call, outlives the policy. Never null when built by
  // Profile::Build; null elsewhere (the policy then looks up by text).
  model::NameTable* names = nullptr;
};

// Builds a policy from its `args` (a JSON object; {} when none were given).
// Unknown or ill-typed arguments are kInvalidArgument naming the field:
// `profiles[0].policies[1].args.direction: must be "higher" or "lower"`.
using PolicyFactory = std::function<StatusOr<std::unique_ptr<Policy>>(
    const nlohmann::json& args, const PolicyContext& context)>;

class Registry {
 public:
  // kInvalidArgument on a duplicate name.
  Status Register(std::string name, PolicyFactory factory);
  // kNotFound naming the policy and listing the known ones.
  StatusOr<std::unique_ptr<Policy>> Create(std::string_view name, const nlohmann::json& args,
                                           const PolicyContext& context) const;
  bool Contains(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PolicyFactory, std::less<>> factories_;
};

// Registers every built-in policy. The only place that names them.
Status RegisterBuiltinPolicies(Registry& registry);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_REGISTRY_H_
