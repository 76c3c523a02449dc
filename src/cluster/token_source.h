// The API client's bearer token: fixed, or read from a file that rotates
// (a projected ServiceAccount token is replaced by the kubelet about hourly).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>

namespace schedext::cluster {

class TokenSource {
 public:
  TokenSource(std::string token, std::string file, std::chrono::milliseconds interval)
      : token_(std::move(token)), file_(std::move(file)), interval_(interval) {}

  bool file_backed() const { return !file_.empty(); }

  // The token to send now; re-reads the file when `interval` has passed and
  // its mtime or size changed.
  std::string Get();

  // Re-reads the file now (after a 401). True when the token changed.
  bool Reload();

 private:
  using Clock = std::chrono::steady_clock;

  // Keeps the old token when the file is missing or empty for a moment (the
  // kubelet swaps it atomically, but be lenient).
  bool ReloadLocked();

  std::mutex mu_;
  std::string token_;
  const std::string file_;
  const std::chrono::milliseconds interval_;
  bool checked_ = false;
  Clock::time_point last_check_;
  bool stat_known_ = false;
  std::filesystem::file_time_type mtime_;
  std::uintmax_t size_ = 0;
};

}  // namespace schedext::cluster
