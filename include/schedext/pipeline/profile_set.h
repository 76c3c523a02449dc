// BuildProfileSet: every profile of a configuration, built from a registry
// of policies (the built-in ones: policy::RegisterBuiltinPolicies, which the
// composition roots link), as the server builds them at start-up and the
// offline commands (explain, replay, --check-config) build them too.
#ifndef SCHEDEXT_PIPELINE_PROFILE_SET_H_
#define SCHEDEXT_PIPELINE_PROFILE_SET_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "schedext/config/config.h"
#include "schedext/model/name_table.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::pipeline {

struct ProfileSet {
  std::vector<std::shared_ptr<const Profile>> profiles;  // in configuration order
  size_t default_profile = 0;                            // index of config.default_profile
  // What the policies interned, frozen (null when built without names).
  std::shared_ptr<model::NameTable> names;
};

// `host` (may be null) receives what the policies register (accountings,
// watches, routes, metrics); it must outlive the profiles. With `intern`, the
// policies intern their names into a NameTable, frozen once all are built
// (for the cluster cache, CacheOptions::names). Errors name the profile:
// "profiles[1]: ...".
StatusOr<ProfileSet> BuildProfileSet(const config::Config& config,
                                     const policy::Registry& registry, policy::PolicyHost* host,
                                     bool intern);

}  // namespace schedext::pipeline

#endif  // SCHEDEXT_PIPELINE_PROFILE_SET_H_
