// schedext's offline subcommands (`schedext explain`, `schedext replay`):
// they run requests through a configuration's profiles without a listener or
// a cluster. main.cc dispatches to them on the first argument.
//
// Each takes the arguments after the subcommand's name and returns the exit
// status: 0 success, 1 failure (bad config, unreadable input), 2 bad usage;
// replay --fail-on-change also answers 3 when decisions changed.
#ifndef SCHEDEXT_CLI_COMMANDS_H_
#define SCHEDEXT_CLI_COMMANDS_H_

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/cluster/cache.h"
#include "schedext/config/config.h"
#include "schedext/pipeline/profile.h"
#include "schedext/status.h"

namespace schedext::cli {

int ExplainCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int ReplayCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// `schedext why NAMESPACE/POD`: the one subcommand that talks to a running
// schedext (GET /explain/pod/..., explain/explain.h) instead of running the
// profiles itself; 1 also when the server cannot be reached or refuses.
int WhyCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `schedext --check-config FILE`: loads FILE and builds its profiles as the
// server would; 0 with "FILE: ok (N profile(s))" on `out`, or 1 with a message
// naming the field on `err` (also when a policy needs the cluster that
// cluster.mode "disabled" denies it).
int CheckConfigCommand(const std::string& path, std::ostream& out, std::ostream& err);

// ---- shared by the subcommands ----

struct LoadedConfig {
  config::Config config;
  // What the profiles' policies registered (GpuShare's accounting, ...);
  // first, so it outlives the profiles.
  std::unique_ptr<policy::PolicyHost> host;
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles;
  size_t default_profile = 0;
};

// Loads and builds a configuration file (as the server does at start-up).
StatusOr<LoadedConfig> LoadProfiles(const std::string& path);

// A synced cluster cache holding the nodes of `nodes_json` and the pods of
// `pods_json` (each a v1 List, as `kubectl get nodes -o json` prints it, or a
// JSON array of objects; empty text: none), fed through the informers'
// decoder, so node usage is counted exactly as the live cache counts it —
// with the accountings `host`'s policies registered (may be null: none; its
// watches are synced empty).
StatusOr<std::unique_ptr<cluster::ClusterCache>> OfflineCache(
    std::string_view nodes_json, std::string_view pods_json, const config::Config& config,
    const policy::PolicyHost* host = nullptr);

}  // namespace schedext::cli

#endif  // SCHEDEXT_CLI_COMMANDS_H_
