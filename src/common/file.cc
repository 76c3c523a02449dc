#include "common/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/text.h"

namespace schedext {
namespace {

Status SystemError(const std::string& where, int err) {
  std::string message = where + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) {
    return NotFoundError(std::move(message));
  }
  return FailedPreconditionError(std::move(message));
}

}  // namespace

StatusOr<std::string> ReadFile(const std::string& path, std::string_view what, size_t max_bytes) {
  const std::string where = std::string(what) + " " + Quote(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return SystemError(where, errno);
  }
  std::string data;
  char chunk[16384];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      // A directory opens read-only and fails here, with EISDIR.
      const int err = errno;
      ::close(fd);
      return SystemError(where, err);
    }
    if (n == 0) {
      break;
    }
    data.append(chunk, static_cast<size_t>(n));
    if (data.size() > max_bytes) {
      ::close(fd);
      return InvalidArgumentError(where + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  return data;
}

}  // namespace schedext
