// The server's command line (`schedext [flags]`, no subcommand): the flags,
// their usage text, and the configuration they select. main.cc parses them
// with ParseServerFlags and runs the server on LoadServerConfig's result.
#ifndef SCHEDEXT_CLI_SERVER_FLAGS_H_
#define SCHEDEXT_CLI_SERVER_FLAGS_H_

#include <optional>
#include <string>
#include <string_view>

#include "schedext/config/config.h"
#include "schedext/status.h"

namespace schedext::cli {

struct ServerFlags {
  std::optional<std::string> config;
  std::optional<std::string> listen;
  std::optional<std::string> log_level;
  std::optional<std::string> kubeconfig;
  std::optional<std::string> context;
  std::optional<std::string> check_config;
  bool print_default_config = false;
  bool version = false;
  bool help = false;
};

// The help text (--help, and after a usage error).
std::string_view ServerUsage();

// Parses argv[1..argc); accepts "--flag value" and "--flag=value". False with
// `error` ("unknown flag --x", "--config needs a value", ...) on a bad line.
bool ParseServerFlags(int argc, char** argv, ServerFlags& flags, std::string& error);

// The configuration to serve: --config's file, else the embedded default,
// with --listen, --log-level, --kubeconfig (which turns cluster.mode
// "disabled" into "required") and --context applied. Errors: the loader's,
// or "--listen: ..." for a bad address.
StatusOr<config::Config> LoadServerConfig(const ServerFlags& flags);

}  // namespace schedext::cli

#endif  // SCHEDEXT_CLI_SERVER_FLAGS_H_
