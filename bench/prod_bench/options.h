// schedext-prod-bench's command line (prod_bench.cc has the usage and what
// each run does).
#ifndef SCHEDEXT_BENCH_PROD_BENCH_OPTIONS_H_
#define SCHEDEXT_BENCH_PROD_BENCH_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace schedext::bench::prod {

struct Options {
  std::string schedext;
  std::string go_baseline;
  std::string config;
  std::string out;
  size_t nodes = 5000;
  size_t pods_per_node = 2;
  int rounds = 3;
  int requests = 300;
  int go_requests = 60;
  double churn_rate = 60;  // writes per second through the API server
  std::vector<size_t> full = {5000, 15000};
  int full_requests = 20;  // FullRequestsFor
  std::vector<std::string> profiles = {"default", "resources", "gpushare", "hami", "labels"};
  std::vector<std::string> gpu_profiles = {"gpushare"};
  std::vector<std::string> hami_profiles = {"hami"};
  double trace_seconds = 0;
  std::vector<std::string> trace_profiles = {"default", "gpushare"};
  double trace_window_s = 0.5;
  int create_threads = 4;
  // Other schedext configurations measured against the main one on the same
  // control plane (NAME=FILE, or NAME=FILE@BINARY to run another schedext
  // binary, e.g. the previous commit's: before/after in the same load),
  // filter and prioritize of --trace-profiles.
  std::vector<std::pair<std::string, std::string>> variants;
  bool smoke = false;
  bool cpu_split = false;
  uint64_t seed = 1;
};

// Requests per full-mode run of `nodes` nodes: --full-requests for schedext
// up to 5,000 nodes and a quarter of it (at least 3) above; the Go floor
// takes ~1 s per request at 5,000 nodes and gets 3 (1 above).
struct FullRequests {
  int schedext;
  int go;
};
FullRequests FullRequestsFor(const Options& o, size_t nodes);

inline constexpr std::string_view kUsage =
    "usage: schedext-prod-bench --schedext BIN --config FILE --out DIR [--go-baseline BIN]\n"
    "  [--nodes N] [--pods-per-node K] [--rounds R] [--requests Q] [--go-requests Q]\n"
    "  [--churn-rate WRITES_PER_S] [--full N,N|none] [--full-requests Q]\n"
    "  [--profiles a,b] [--gpu-profiles a,b] [--hami-profiles a,b]\n"
    "  [--trace-seconds S] [--trace-profiles a,b] [--create-threads T] [--seed S] [--smoke]\n"
    "  [--cpu-split]\n"
    "  [--variants NAME=CONFIG[@SCHEDEXT_BIN],...]\n";

// Reads the flags into `o` (--smoke shrinks every size); false on an unknown
// flag, a missing value or a missing required flag.
bool ParseOptions(int argc, char** argv, Options& o);

}  // namespace schedext::bench::prod

#endif  // SCHEDEXT_BENCH_PROD_BENCH_OPTIONS_H_
