// `schedext --check-config FILE` (commands.h).
#include <ostream>
#include <string>

#include "schedext/cli/commands.h"
#include "schedext/pipeline/profile_set.h"

namespace schedext::cli {

int CheckConfigCommand(const std::string& path, std::ostream& out, std::ostream& err) {
  auto config = config::LoadConfigFile(path);
  if (!config.ok()) {
    err << config.status().message() << "\n";
    return 1;
  }
  policy::Registry registry;
  if (const Status s = policy::RegisterBuiltinPolicies(registry); !s.ok()) {
    err << s.message() << "\n";
    return 1;
  }
  policy::PolicyHost host;
  auto built = pipeline::BuildProfileSet(*config, registry, &host, /*intern=*/true);
  if (!built.ok()) {
    err << path << ": " << built.status().message() << "\n";
    return 1;
  }
  if (config->cluster.mode == "disabled" && !host.cluster_requirements().empty()) {
    err << path << ": cluster.mode: \"disabled\", but " << host.cluster_requirements().front()
        << "\n";
    return 1;
  }
  out << path << ": ok (" << config->profiles.size() << " profile(s))\n";
  return 0;
}

}  // namespace schedext::cli
