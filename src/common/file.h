// Reading a whole (small) file: kubeconfigs, PEM files, tokens, configs.
#pragma once

#include <string>
#include <string_view>

#include "schedext/status.h"

namespace schedext {

// The file's bytes, or an error that starts with `what` (e.g. "CA file")
// and names the path: not found, a directory, or a read error.
StatusOr<std::string> ReadFile(const std::string& path, std::string_view what = "read");

}  // namespace schedext
