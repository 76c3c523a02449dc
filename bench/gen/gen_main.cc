// schedext-gen: writes benchmark request bodies (see payload_gen.h).
//
//   schedext-gen --nodes N --mode full|names --verb filter|prioritize|preempt [--seed S] > body.json
//   schedext-gen --all DIR [--seed S]     every size and mode at once, from one node list,
//                                         with a size table checked against performance.md §1
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "gen/payload_gen.h"

namespace {

using schedext::bench::Mode;
using schedext::bench::PayloadSet;
using schedext::bench::Verb;

constexpr std::string_view kUsage =
    "usage: schedext-gen --nodes N --mode full|names --verb filter|prioritize|preempt "
    "[--seed S] > body.json\n"
    "       schedext-gen --all DIR [--seed S]\n";

// The body sizes of performance.md §1 (bytes), for the check printed by --all.
struct Expected {
  size_t nodes;
  double full_mb;
  double names_kb;
};
constexpr Expected kExpected[] = {
    {100, 1.18, 9.6}, {1000, 11.6, 48.9}, {5000, 58.0, 226}, {15000, 173.9, 671}};

bool WriteFile(const std::string& path, const std::string& body) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(body.data(), static_cast<std::streamsize>(body.size()));
  return static_cast<bool>(out);
}

int All(const std::string& dir, uint64_t seed) {
  const size_t max_nodes = 15000;
  const PayloadSet set(seed, max_nodes);
  const auto stats = set.Stats(max_nodes);
  std::printf("pod %zu B; nodes: min %zu / median %zu / max %zu B, %.1f images on average, "
              "names %zu-%zu chars, tainted %.1f %%, unschedulable %.1f %%, GPU %.1f %%\n",
              set.pod().size(), stats.min_bytes, stats.median_bytes, stats.max_bytes,
              stats.mean_images, stats.min_name, stats.max_name,
              100.0 * static_cast<double>(stats.tainted) / static_cast<double>(max_nodes),
              100.0 * static_cast<double>(stats.unschedulable) / static_cast<double>(max_nodes),
              100.0 * static_cast<double>(stats.gpu) / static_cast<double>(max_nodes));
  std::printf("%8s %14s %14s %12s %12s\n", "nodes", "full (MB)", "§1 full (MB)", "names (KB)",
              "§1 names (KB)");
  for (const Expected& e : kExpected) {
    const std::string full = set.Body(e.nodes, Mode::kFull, Verb::kFilter);
    const std::string names = set.Body(e.nodes, Mode::kNames, Verb::kFilter);
    std::printf("%8zu %14.2f %14.2f %12.1f %12.1f\n", e.nodes,
                static_cast<double>(full.size()) / 1e6, e.full_mb,
                static_cast<double>(names.size()) / 1e3, e.names_kb);
    if (!WriteFile(dir + "/full-" + std::to_string(e.nodes) + ".json", full) ||
        !WriteFile(dir + "/names-" + std::to_string(e.nodes) + ".json", names)) {
      std::fprintf(stderr, "schedext-gen: cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  // The "small request" of the throughput target: ~1 KB, three tiny nodes, one
  // of them cordoned; the reply is a few hundred bytes.
  const std::string small =
      R"({"Pod":{"metadata":{"name":"web-7d4b9c-x2x9q","namespace":"default","uid":)"
      R"("5c4ea313-088c-4463-be34-d31406a65a25"},"spec":{"containers":[{"name":"web","image":)"
      R"("nginx:1.25","resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}],)"
      R"("tolerations":[{"key":"dedicated","operator":"Equal","value":"platform","effect":)"
      R"("NoSchedule"}]},"status":{"phase":"Pending"}},"Nodes":{"metadata":{},"items":[)"
      R"({"metadata":{"name":"ip-10-16-3-7.us-west-2.compute.internal","labels":)"
      R"({"kubernetes.io/os":"linux"}},"status":{"conditions":[{"type":"Ready","status":"True"}]}},)"
      R"({"metadata":{"name":"ip-10-16-3-8.us-west-2.compute.internal","labels":)"
      R"({"kubernetes.io/os":"linux"}},"spec":{"unschedulable":true},"status":{"conditions":)"
      R"([{"type":"Ready","status":"True"}]}},{"metadata":{"name":)"
      R"("ip-10-16-3-9.us-west-2.compute.internal","labels":{"kubernetes.io/os":"linux"}},)"
      R"("spec":{"taints":[{"key":"dedicated","value":"platform","effect":"NoSchedule"}]},)"
      R"("status":{"conditions":[{"type":"Ready","status":"True"}]}}]},"NodeNames":null})";
  if (!WriteFile(dir + "/small.json", small)) {
    std::fprintf(stderr, "schedext-gen: cannot write into %s\n", dir.c_str());
    return 1;
  }
  for (size_t n : {size_t{100}, size_t{1000}}) {
    for (Mode m : {Mode::kFull, Mode::kNames}) {
      const std::string body = set.Body(n, m, Verb::kPreempt);
      const std::string path = dir + "/preempt-" + (m == Mode::kFull ? "full-" : "names-") +
                               std::to_string(n) + ".json";
      if (!WriteFile(path, body)) {
        std::fprintf(stderr, "schedext-gen: cannot write %s\n", path.c_str());
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  size_t nodes = 0;
  bool have_nodes = false;
  Mode mode = Mode::kFull;
  Verb verb = Verb::kFilter;
  uint64_t seed = 1;
  std::string all_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "schedext-gen: " << arg << " needs a value\n" << kUsage;
      return 2;
    }
    const std::string_view value = argv[++i];
    if (arg == "--nodes") {
      nodes = std::strtoull(std::string(value).c_str(), nullptr, 10);
      have_nodes = true;
    } else if (arg == "--mode") {
      if (!schedext::bench::ParseMode(value, mode)) {
        std::cerr << "schedext-gen: --mode full|names\n";
        return 2;
      }
    } else if (arg == "--verb") {
      if (!schedext::bench::ParseVerb(value, verb)) {
        std::cerr << "schedext-gen: --verb filter|prioritize|preempt\n";
        return 2;
      }
    } else if (arg == "--seed") {
      seed = std::strtoull(std::string(value).c_str(), nullptr, 10);
    } else if (arg == "--all") {
      all_dir = value;
    } else {
      std::cerr << "schedext-gen: unknown flag " << arg << "\n" << kUsage;
      return 2;
    }
  }
  if (!all_dir.empty()) {
    return All(all_dir, seed);
  }
  if (!have_nodes) {
    std::cerr << kUsage;
    return 2;
  }
  // Node i depends only on (seed, i): these N nodes are the first N of any
  // larger set with the same seed.
  const PayloadSet set(seed, nodes);
  const std::string body = set.Body(nodes, mode, verb);
  std::fwrite(body.data(), 1, body.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
