#include "cluster/token_source.h"

#include <utility>

#include "common/file.h"
#include "common/text.h"

namespace schedext::cluster {

std::string TokenSource::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_.empty()) {
    const Clock::time_point now = Clock::now();
    if (!checked_ || now - last_check_ >= interval_) {
      last_check_ = now;
      checked_ = true;
      std::error_code ec;
      const auto mtime = std::filesystem::last_write_time(file_, ec);
      const auto size = ec ? 0 : std::filesystem::file_size(file_, ec);
      if (!ec && (!stat_known_ || mtime != mtime_ || size != size_) && ReloadLocked()) {
        mtime_ = mtime;
        size_ = size;
        stat_known_ = true;
      }
    }
  }
  return token_;
}

bool TokenSource::Reload() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_.empty()) {
    return false;
  }
  const std::string before = token_;
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(file_, ec);
  const auto size = ec ? 0 : std::filesystem::file_size(file_, ec);
  if (ReloadLocked() && !ec) {
    mtime_ = mtime;
    size_ = size;
    stat_known_ = true;
  }
  last_check_ = Clock::now();
  checked_ = true;
  return token_ != before;
}

bool TokenSource::ReloadLocked() {
  StatusOr<std::string> contents = ReadFile(file_, "token file");
  if (!contents.ok()) {
    return false;
  }
  const std::string_view token = TrimSpace(*contents);
  if (token.empty()) {
    return false;
  }
  token_ = std::string(token);
  return true;
}

}  // namespace schedext::cluster
