// `schedext replay`: recorded traffic (server.record) through a new
// configuration, and what would change (record/replay.h).
#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <vector>

#include "schedext/cli/commands.h"
#include "schedext/record/replay.h"

namespace schedext::cli {
namespace {

constexpr std::string_view kReplayUsage =
    R"(Usage: schedext replay --config FILE [--diff] [--fail-on-change] [--output text|json] DIR

Runs every filter, prioritize and preempt request recorded in DIR
(server.record.dir) through the profiles of FILE, with the stateful policies'
recorded state, and reports what changes against the recorded replies:
requests, node decisions (newly rejected by which policy, newly accepted),
top-node changes, score shifts, preempt victims per node and latency. bind
records are not replayed (bind has side effects).

  --config FILE       the new schedext configuration (YAML)
  --diff              also print each changed request's differences
  --fail-on-change    exit 3 when any replayed request changed (for CI)
  --output FORMAT     text (default) or json
)";

}  // namespace

int ReplayCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // The cache's and the policies' info lines are for servers, not for a report.
  spdlog::set_level(spdlog::level::warn);
  std::string config;
  std::string dir;
  std::string output = "text";
  bool diff = false;
  bool fail_on_change = false;
  std::string error;
  for (size_t i = 0; i < args.size() && error.empty(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "--help" || arg == "-h") {
      out << kReplayUsage;
      return 0;
    }
    if (arg == "--diff" || arg == "--fail-on-change") {
      (arg == "--diff" ? diff : fail_on_change) = true;
      if (inline_value) {
        error = arg + " takes no value";
      }
      continue;
    }
    if (arg == "--config" || arg == "--output" || arg == "-o") {
      std::string& target = arg == "--config" ? config : output;
      if (inline_value) {
        target = *inline_value;
      } else if (i + 1 < args.size()) {
        target = args[++i];
      } else {
        error = arg + " needs a value";
      }
      continue;
    }
    if (arg.rfind("-", 0) == 0) {
      error = "unknown flag " + arg;
    } else if (!dir.empty()) {
      error = "one DIR only";
    } else {
      dir = arg;
    }
  }
  if (error.empty() && config.empty()) {
    error = "--config is required";
  }
  if (error.empty() && dir.empty()) {
    error = "DIR is required";
  }
  if (error.empty() && output != "text" && output != "json") {
    error = "--output must be text or json";
  }
  if (!error.empty()) {
    err << "schedext replay: " << error << "\n\n" << kReplayUsage;
    return 2;
  }
  auto loaded = LoadProfiles(config);
  if (!loaded.ok()) {
    err << "schedext replay: " << loaded.status().message() << "\n";
    return 1;
  }
  auto report = record::ReplayDirectory(dir, loaded->profiles, loaded->host->accountings());
  if (!report.ok()) {
    err << "schedext replay: " << report.status().message() << "\n";
    return 1;
  }
  out << (output == "json" ? record::FormatReplayJson(*report)
                           : record::FormatReplayText(*report, diff));
  if (report->records == 0) {
    err << "schedext replay: no records in " << dir << "\n";
  }
  return fail_on_change && report->changed > 0 ? 3 : 0;
}

}  // namespace schedext::cli
