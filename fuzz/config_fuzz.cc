// Fuzz target: config::LoadConfigText on one input taken as the YAML text,
// then, for a configuration it accepts, the profiles built from it as main()
// builds them (each policy factory validates its `args`).
//
// Checks, beyond sanitizer reports: a rejected configuration is
// kInvalidArgument and names the source ("fuzz.yaml:<line>:<col>: ..." or
// "fuzz.yaml: ..."); an accepted one has at least one profile, a default
// profile that is one of them, and loading the same text again gives the same
// answer.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "schedext/config/config.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::fuzz {
namespace {

constexpr std::string_view kSource = "fuzz.yaml";

// What the factories say about the accepted configuration.
Status BuildProfiles(const config::Config& config) {
  policy::Registry registry;
  SCHEDEXT_RETURN_IF_ERROR(policy::RegisterBuiltinPolicies(registry));
  for (size_t i = 0; i < config.profiles.size(); ++i) {
    StatusOr<std::shared_ptr<const pipeline::Profile>> profile = pipeline::Profile::Build(
        config.profiles[i], registry, "profiles[" + std::to_string(i) + "]");
    if (!profile.ok()) {
      return profile.status();
    }
    SCHEDEXT_FUZZ_CHECK(*profile != nullptr && (*profile)->name() == config.profiles[i].name,
                        config.profiles[i].name);
  }
  return OkStatus();
}

}  // namespace
}  // namespace schedext::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedext;
  const std::string_view text = fuzz::AsText(data, size);
  const StatusOr<config::Config> loaded = config::LoadConfigText(text, fuzz::kSource);
  if (!loaded.ok()) {
    const Status status = loaded.status();
    const std::string& message = status.message();
    SCHEDEXT_FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument, message);
    SCHEDEXT_FUZZ_CHECK(message.compare(0, fuzz::kSource.size(), fuzz::kSource) == 0 &&
                            message.size() > fuzz::kSource.size() &&
                            message[fuzz::kSource.size()] == ':',
                        message);
    return 0;
  }
  const config::Config& config = *loaded;
  SCHEDEXT_FUZZ_CHECK(!config.profiles.empty(), "accepted without profiles");
  bool default_found = false;
  for (const config::ProfileConfig& profile : config.profiles) {
    default_found = default_found || profile.name == config.default_profile;
  }
  SCHEDEXT_FUZZ_CHECK(default_found, "default profile " + config.default_profile + " unknown");

  const Status built = fuzz::BuildProfiles(config);
  if (!built.ok()) {
    SCHEDEXT_FUZZ_CHECK(built.code() == StatusCode::kInvalidArgument, built.message());
  }

  const StatusOr<config::Config> again = config::LoadConfigText(text, fuzz::kSource);
  SCHEDEXT_FUZZ_CHECK(again.ok() && again->profiles.size() == config.profiles.size() &&
                          again->default_profile == config.default_profile,
                      "second load differs");
  return 0;
}
