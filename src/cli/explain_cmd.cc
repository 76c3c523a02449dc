// `schedext explain`: POST /<profile>/explain, offline.
//
// The request runs through the same ExtenderService and profile code as the
// server's explain endpoint, with an offline cluster cache standing in for
// the informers: its nodes come from --nodes and its pods (hence every
// node's usage) from --pods, both as `kubectl get ... -o json` prints them.
// A node-cache request (NodeNames) can only be explained with --nodes: the
// names mean nothing without the objects.
#include <spdlog/spdlog.h>

#include <cctype>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/file.h"
#include "schedext/cli/commands.h"
#include "schedext/explain/explain.h"
#include "schedext/server/service.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::cli {
namespace {

// The listener's default body limit: a request it would take, and a node or
// pod list of the same order (15,000 full nodes are ~180 MB).
constexpr size_t kMaxInputBytes = size_t{512} << 20;

constexpr std::string_view kExplainUsage =
    R"(Usage: schedext explain --config FILE [--profile NAME] [--nodes NODES.json]
                        [--pods PODS.json] [--output text|json] REQUEST.json

Explains a filter or prioritize request body (either node mode) as the profile
would decide it: every policy's verdict and score on every node, the 0-10 score
kube-scheduler would get, and the ranking. A preempt request body is explained
as the preempt verb decides it: which candidate nodes are kept or dropped, by
which policy, and which victims are evicted or spared.

  --config FILE     schedext configuration (YAML)
  --profile NAME    profile to explain with (default: the config's default profile)
  --nodes FILE      the cluster's nodes (kubectl get nodes -o json, or a JSON array);
                    required for a node-cache request (NodeNames)
  --pods FILE       the cluster's pods (kubectl get pods -A -o json): their requests
                    count against their nodes, as schedext's cache counts them;
                    without it every node is empty
  --output FORMAT   text (a table, the default) or json (the POST /<profile>/explain reply)
)";

struct ExplainFlags {
  std::string config;
  std::string profile;
  std::string nodes;
  std::string pods;
  std::string output = "text";
  std::string request;
};

// "--flag value" and "--flag=value"; one positional argument.
bool ParseExplainFlags(const std::vector<std::string>& args, ExplainFlags& flags,
                       std::string& error) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    std::string* target = nullptr;
    if (arg == "--config") {
      target = &flags.config;
    } else if (arg == "--profile") {
      target = &flags.profile;
    } else if (arg == "--nodes") {
      target = &flags.nodes;
    } else if (arg == "--pods") {
      target = &flags.pods;
    } else if (arg == "--output" || arg == "-o") {
      target = &flags.output;
    } else if (arg.rfind("-", 0) == 0 && arg != "-") {
      error = "unknown flag " + arg;
      return false;
    } else {
      if (!flags.request.empty()) {
        error = "one REQUEST.json only (got " + flags.request + " and " + arg + ")";
        return false;
      }
      flags.request = arg;
      continue;
    }
    if (inline_value) {
      *target = *inline_value;
    } else if (i + 1 < args.size()) {
      *target = args[++i];
    } else {
      error = arg + " needs a value";
      return false;
    }
  }
  if (flags.config.empty()) {
    error = "--config is required";
  } else if (flags.request.empty()) {
    error = "REQUEST.json is required";
  } else if (flags.output != "text" && flags.output != "json") {
    error = "--output must be text or json";
  }
  return error.empty();
}

}  // namespace

int ExplainCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // The cache's and the policies' info lines are for servers, not for a report.
  spdlog::set_level(spdlog::level::warn);
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      out << kExplainUsage;
      return 0;
    }
  }
  ExplainFlags flags;
  std::string error;
  if (!ParseExplainFlags(args, flags, error)) {
    err << "schedext explain: " << error << "\n\n" << kExplainUsage;
    return 2;
  }
  auto loaded = LoadProfiles(flags.config);
  if (!loaded.ok()) {
    err << "schedext explain: " << loaded.status().message() << "\n";
    return 1;
  }
  auto request = ReadFile(flags.request, "read request", kMaxInputBytes);
  if (!request.ok()) {
    err << "schedext explain: " << request.status().message() << "\n";
    return 1;
  }
  std::string nodes;
  std::string pods;
  for (auto [path, text] : {std::pair{&flags.nodes, &nodes}, std::pair{&flags.pods, &pods}}) {
    if (path->empty()) {
      continue;
    }
    auto read = ReadFile(*path, "read", kMaxInputBytes);
    if (!read.ok()) {
      err << "schedext explain: " << read.status().message() << "\n";
      return 1;
    }
    *text = std::move(read).value();
  }
  {
    // A cheap look at the mode, for a message better than "every node unknown".
    const nlohmann::json body = nlohmann::json::parse(*request, nullptr, false);
    if (flags.nodes.empty() && body.is_object()) {
      for (const auto& [key, value] : body.items()) {
        std::string lower = key;
        for (char& c : lower) {
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        if (lower == "nodenames" && value.is_array() && !value.empty()) {
          err << "schedext explain: " << flags.request
              << " names its nodes (NodeNames, node-cache mode): give the node objects with "
                 "--nodes (kubectl get nodes -o json)\n";
          return 2;
        }
      }
    }
  }
  auto cache = OfflineCache(nodes, pods, loaded->config, loaded->host.get());
  if (!cache.ok()) {
    err << "schedext explain: " << cache.status().message() << "\n";
    return 1;
  }
  server::ExtenderService service(loaded->profiles, loaded->default_profile, cache->get(), nullptr,
                                  nullptr);
  const explain::ExplainVerb explain_verb;
  service.SetExplain(&explain_verb);
  const int profile = service.FindProfile(flags.profile);
  if (profile < 0) {
    err << "schedext explain: no profile \"" << flags.profile << "\" in " << flags.config << "\n";
    return 1;
  }
  const wire::RequestBuffer body = wire::RequestBuffer::CopyOf(*request);
  server::Scratch scratch;
  std::string reply;
  server::RequestSummary summary;
  const int status = service.Handle(server::Verb::kExplain, static_cast<size_t>(profile), body,
                                    scratch, reply, summary);
  if (status != 200) {
    err << "schedext explain: " << flags.request << ": " << summary.error << "\n";
    return 1;
  }
  if (flags.output == "json") {
    out << nlohmann::ordered_json::parse(reply).dump(2) << "\n";
    return 0;
  }
  auto text = explain::FormatExplanationText(reply);
  if (!text.ok()) {
    err << "schedext explain: " << text.status().message() << "\n";
    return 1;
  }
  out << *text;
  return 0;
}

}  // namespace schedext::cli
