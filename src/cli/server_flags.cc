// The server's flags (server_flags.h).
#include "schedext/cli/server_flags.h"

#include <utility>

namespace schedext::cli {
namespace {

constexpr std::string_view kUsage =
    R"(schedext: a Kubernetes scheduler extender (filter, prioritize, preempt, bind).

Usage: schedext [flags]
       schedext explain --config FILE [flags] REQUEST.json  (see schedext explain --help)
       schedext replay --config FILE [flags] DIR            (see schedext replay --help)
       schedext why [--server URL] NAMESPACE/POD            (see schedext why --help)

Flags:
  --config FILE         configuration file (YAML); without it the embedded default
                        configuration is used (print it with --print-default-config)
  --listen ADDR         listen address, overrides server.listen: HOST:PORT, [V6]:PORT or :PORT
  --log-level LEVEL     trace, debug, info, warn, error, critical or off (overrides log.level)
  --kubeconfig FILE     kubeconfig for the Kubernetes API (overrides cluster.kubeconfig);
                        without it: $KUBECONFIG, then the in-cluster service account
  --context NAME        kubeconfig context (overrides cluster.context)
  --check-config FILE   validate FILE (syntax, fields, policies and their args) and exit:
                        0 when valid, 1 with a message naming the field otherwise
  --print-default-config
                        print the embedded default configuration and exit
  --version             print the version and exit
  --help                print this help and exit
)";

}  // namespace

std::string_view ServerUsage() { return kUsage; }

bool ParseServerFlags(int argc, char** argv, ServerFlags& flags, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto value = [&](std::optional<std::string>& out) {
      if (inline_value) {
        out = *inline_value;
        return true;
      }
      if (i + 1 >= argc) {
        error = arg + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    auto no_value = [&](bool& out) {
      if (inline_value) {
        error = arg + " takes no value";
        return false;
      }
      out = true;
      return true;
    };
    bool ok = true;
    if (arg == "--config") {
      ok = value(flags.config);
    } else if (arg == "--listen") {
      ok = value(flags.listen);
    } else if (arg == "--log-level") {
      ok = value(flags.log_level);
    } else if (arg == "--kubeconfig") {
      ok = value(flags.kubeconfig);
    } else if (arg == "--context") {
      ok = value(flags.context);
    } else if (arg == "--check-config") {
      ok = value(flags.check_config);
    } else if (arg == "--print-default-config") {
      ok = no_value(flags.print_default_config);
    } else if (arg == "--version") {
      ok = no_value(flags.version);
    } else if (arg == "--help" || arg == "-h") {
      ok = no_value(flags.help);
    } else {
      error = "unknown flag " + arg;
      ok = false;
    }
    if (!ok) {
      return false;
    }
  }
  return true;
}

StatusOr<config::Config> LoadServerConfig(const ServerFlags& flags) {
  SCHEDEXT_ASSIGN_OR_RETURN(
      config::Config config,
      flags.config ? config::LoadConfigFile(*flags.config)
                   : config::LoadConfigText(config::EmbeddedDefaultConfig(),
                                            "embedded default config"));
  if (flags.listen) {
    SCHEDEXT_RETURN_IF_ERROR(
        config::ApplyListenAddress(*flags.listen, config.server).WithContext("--listen"));
  }
  if (flags.log_level) {
    config.log.level = *flags.log_level;
  }
  if (flags.kubeconfig) {
    config.cluster.kubeconfig = *flags.kubeconfig;
    if (config.cluster.mode == "disabled") {
      config.cluster.mode = "required";
    }
  }
  if (flags.context) {
    config.cluster.context = *flags.context;
  }
  return config;
}

}  // namespace schedext::cli
