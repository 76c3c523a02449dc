#include "common/heap_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace schedext::common {
namespace {

constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
constexpr const char* kThpEnabled = "/sys/kernel/mm/transparent_hugepage/enabled";

// The value `tunables` ("a=1:b=2") gives `name`, or nullopt.
std::optional<std::string_view> TunableValue(std::string_view tunables, std::string_view name) {
  while (!tunables.empty()) {
    const size_t colon = tunables.find(':');
    const std::string_view item = tunables.substr(0, colon);
    if (item.size() > name.size() && item.substr(0, name.size()) == name &&
        item[name.size()] == '=') {
      return item.substr(name.size() + 1);
    }
    tunables = colon == std::string_view::npos ? std::string_view() : tunables.substr(colon + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> TunablesForHeapHugePages(const char* tunables,
                                                    std::string_view thp_enabled) {
  if (thp_enabled.find("[madvise]") == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view current = tunables != nullptr ? tunables : "";
  if (TunableValue(current, kTunable).has_value()) {
    return std::nullopt;
  }
  std::string out(current);
  if (!out.empty()) {
    out += ':';
  }
  out += kTunable;
  out += "=1";
  return out;
}

void ReexecWithHeapHugePages(char** argv) {
  std::ifstream file(kThpEnabled);
  const std::string mode((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const char* before = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> original =
      before != nullptr ? std::optional<std::string>(before) : std::nullopt;
  const std::optional<std::string> tunables = TunablesForHeapHugePages(before, mode);
  if (!tunables.has_value() || setenv("GLIBC_TUNABLES", tunables->c_str(), 1) != 0) {
    return;
  }
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc, say): carry on with 4 KiB pages, and do not
  // claim the tunable for this process.
  if (original.has_value()) {
    setenv("GLIBC_TUNABLES", original->c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

bool HeapHugePagesRequested() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && TunableValue(tunables, kTunable) == "1";
}

}  // namespace schedext::common

namespace schedext::common {

size_t AdviseArenaHugePages() {
  constexpr uintptr_t kArenaSize = uintptr_t{64} << 20;  // glibc's HEAP_MAX_SIZE on 64-bit
  struct Mapping {
    uintptr_t start = 0;
    uintptr_t end = 0;
    std::string perms;
    bool anonymous = false;
  };
  std::vector<Mapping> mappings;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    Mapping m;
    char perms[5] = {};
    unsigned long inode = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %4s %*s %*s %lu %n", &m.start, &m.end, perms, &inode,
                    &path_at) < 4) {
      continue;
    }
    m.perms = perms;
    m.anonymous = inode == 0 && (path_at <= 0 || static_cast<size_t>(path_at) >= line.size());
    mappings.push_back(std::move(m));
  }
  size_t advised = 0;
  for (size_t i = 0; i < mappings.size(); ++i) {
    const Mapping& m = mappings[i];
    if (m.perms != "rw-p" || !m.anonymous || m.start % kArenaSize != 0) {
      continue;
    }
    // An arena's heap is one 64 MiB reservation: the part in use, then the
    // rest inaccessible until glibc grows into it. Advising all of it marks
    // the rest too, so what glibc opens later joins the advised part (one
    // mapping, which khugepaged can fill with 2 MiB pages).
    uintptr_t end = m.end;
    if (end - m.start < kArenaSize && i + 1 < mappings.size()) {
      const Mapping& rest = mappings[i + 1];
      if (rest.start == m.end && rest.end == m.start + kArenaSize && rest.perms == "---p" &&
          rest.anonymous) {
        end = rest.end;
      }
    }
    if (end - m.start != kArenaSize) {
      continue;  // not an arena's reservation: leave it as it is
    }
    if (madvise(reinterpret_cast<void*>(m.start), end - m.start, MADV_HUGEPAGE) == 0) {
      ++advised;
    }
  }
  return advised;
}

}  // namespace schedext::common
