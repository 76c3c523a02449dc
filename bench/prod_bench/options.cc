#include "prod_bench/options.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace schedext::bench::prod {
namespace {

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty() && item != "none") out.push_back(item);
  }
  return out;
}

}  // namespace

FullRequests FullRequestsFor(const Options& o, size_t nodes) {
  if (o.smoke) return {3, 2};
  if (nodes > 5000) return {std::max(3, o.full_requests / 4), 1};
  return {o.full_requests, 3};
}

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--smoke") {
      o.smoke = true;
      continue;
    }
    if (arg == "--cpu-split") {
      o.cpu_split = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "schedext-prod-bench: " << arg << " needs a value\n";
      return false;
    }
    const std::string v = argv[++i];
    if (arg == "--schedext") {
      o.schedext = v;
    } else if (arg == "--go-baseline") {
      o.go_baseline = v;
    } else if (arg == "--config") {
      o.config = v;
    } else if (arg == "--out") {
      o.out = v;
    } else if (arg == "--nodes") {
      o.nodes = std::strtoull(v.c_str(), nullptr, 10);
    } else if (arg == "--pods-per-node") {
      o.pods_per_node = std::strtoull(v.c_str(), nullptr, 10);
    } else if (arg == "--rounds") {
      o.rounds = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--requests") {
      o.requests = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--go-requests") {
      o.go_requests = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--churn-rate") {
      o.churn_rate = std::atof(v.c_str());
    } else if (arg == "--full") {
      o.full.clear();
      for (const std::string& n : SplitList(v))
        o.full.push_back(std::strtoull(n.c_str(), nullptr, 10));
    } else if (arg == "--full-requests") {
      o.full_requests = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--profiles") {
      o.profiles = SplitList(v);
    } else if (arg == "--gpu-profiles") {
      o.gpu_profiles = SplitList(v);
    } else if (arg == "--hami-profiles") {
      o.hami_profiles = SplitList(v);
    } else if (arg == "--trace-seconds") {
      o.trace_seconds = std::atof(v.c_str());
    } else if (arg == "--trace-profiles") {
      o.trace_profiles = SplitList(v);
    } else if (arg == "--create-threads") {
      o.create_threads = std::max(1, std::atoi(v.c_str()));
    } else if (arg == "--variants") {
      for (const std::string& item : SplitList(v)) {
        const size_t eq = item.find('=');
        if (eq == std::string::npos) return false;
        o.variants.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      }
    } else if (arg == "--seed") {
      o.seed = std::strtoull(v.c_str(), nullptr, 10);
    } else {
      std::cerr << "schedext-prod-bench: unknown flag " << arg << "\n";
      return false;
    }
  }
  if (o.smoke) {
    o.nodes = std::min<size_t>(o.nodes, 60);
    o.pods_per_node = std::min<size_t>(o.pods_per_node, 1);
    o.rounds = 1;
    o.requests = std::min(o.requests, 10);
    o.go_requests = std::min(o.go_requests, 5);
    o.churn_rate = std::min(o.churn_rate, 20.0);
    o.full = {o.nodes};
    o.trace_seconds = 0;
  }
  return !o.schedext.empty() && !o.config.empty() && !o.out.empty() && o.nodes > 0;
}

}  // namespace schedext::bench::prod
