#include "common/file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text.h"

namespace schedext {

StatusOr<std::string> ReadFile(const std::string& path, std::string_view what) {
  const std::string where = std::string(what) + " " + Quote(path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return FailedPreconditionError(where + ": is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFoundError(where + ": cannot open the file");
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return FailedPreconditionError(where + ": read error");
  }
  return contents.str();
}

}  // namespace schedext
