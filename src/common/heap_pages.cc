#include "common/heap_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

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
