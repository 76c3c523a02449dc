// SetUpLogging: the process's log sink, as the log: section says. One logger,
// "schedext", on stderr, made spdlog's default: every layer logs through
// spdlog's free functions. Formats:
//   text: 2026-12-06T14:19:48.123456+0000 info <message>
//   json: {"time":"2026-12-06T14:19:48.123456Z","level":"info","msg":"<message>"}
//         (UTC; the message escaped as a JSON string), one object per line.
// The logger flushes from level info up.
//
// Called once by the composition root (main.cc), before any thread logs.
#ifndef SCHEDEXT_SRC_SERVER_LOGGING_H_
#define SCHEDEXT_SRC_SERVER_LOGGING_H_

#include "schedext/config/config.h"
#include "schedext/status.h"

namespace schedext::server {

// kInvalidArgument naming the valid levels when `log.level` is not one.
Status SetUpLogging(const config::LogConfig& log);

}  // namespace schedext::server

#endif  // SCHEDEXT_SRC_SERVER_LOGGING_H_
