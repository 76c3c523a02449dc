// Reading a whole (small) file: kubeconfigs, PEM files, tokens, configs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "schedext/status.h"

namespace schedext {

// What a key pointing at the wrong file (a log, /dev/zero) can make schedext
// hold: far above any kubeconfig, token, PEM bundle or config.
inline constexpr size_t kMaxSmallFileBytes = size_t{16} << 20;

// The file's bytes, or an error `WHAT "PATH": REASON`, REASON being the
// system's ("No such file or directory", "Is a directory", ...; NotFound for a
// missing path, FailedPrecondition otherwise) or "larger than N bytes"
// (InvalidArgument) once more than `max_bytes` were read.
StatusOr<std::string> ReadFile(const std::string& path, std::string_view what = "read",
                               size_t max_bytes = kMaxSmallFileBytes);

}  // namespace schedext
