// Building a configuration's profiles. See profile_set.h.
#include "schedext/pipeline/profile_set.h"

#include <string>
#include <utility>

namespace schedext::pipeline {

StatusOr<ProfileSet> BuildProfileSet(const config::Config& config,
                                     const policy::Registry& registry, policy::PolicyHost* host,
                                     bool intern) {
  ProfileSet set;
  if (intern) {
    set.names = std::make_shared<model::NameTable>();
  }
  for (size_t i = 0; i < config.profiles.size(); ++i) {
    auto profile = Profile::Build(config.profiles[i], registry,
                                  "profiles[" + std::to_string(i) + "]", host, set.names);
    if (!profile.ok()) {
      return profile.status();
    }
    if (config.profiles[i].name == config.default_profile) {
      set.default_profile = i;
    }
    set.profiles.push_back(std::move(profile).value());
  }
  if (set.names != nullptr) {
    set.names->Freeze();
  }
  return set;
}

}  // namespace schedext::pipeline
