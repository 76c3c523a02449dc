// schedext-cache-load: the cluster cache at production size under watch load
// (issue 4: 15,000 nodes and 150,000 pods in ≤ 600 MB, ≥ 20,000 watch events
// per second applied while filter requests are being served).
//
// What runs, in one process, without network:
//   1. N generated nodes (bench/gen, the same objects as the HTTP scenarios)
//      and P pods (the generator's ~5 KB pod, renamed, spread round-robin over
//      the nodes) are decoded from JSON with the informers' ObjectDecoder,
//      copied into OwnedNode / OwnedPod and handed to ClusterCache::OnReplace,
//      as an initial LIST would. RSS is read before and after.
//   2. One thread plays the pod informer: it decodes watch-event lines
//      (MODIFIED: a pod moves to another node, so usage changes on two nodes)
//      and applies them with OnUpsert, as fast as it can, for E events.
//   3. Meanwhile F threads send node-cache filter requests for the first
//      5,000 node names through ExtenderService (the default profile plus
//      NodeResourcesFit, so usage is read), each loading its own snapshot.
// Reported: load time, RSS after the load, events/s while filtering, filter
// p50/p99 while the events apply, peak RSS (VmHWM).
//
// The event lines are a ring of R pre-built lines reused in order (building
// E distinct 5 KB lines would measure the generator); every application is
// still a full decode + copy + cache update, since each line moves its pod to
// a node other than the one the previous line of that pod chose.
//
//   schedext-cache-load [--nodes 15000] [--pods 150000] [--events 200000]
//                       [--filter-threads 1] [--seed 1]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "gen/payload_gen.h"
#include "schedext/cluster/cache.h"
#include "schedext/config/config.h"
#include "schedext/model/owned.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/registry.h"
#include "schedext/server/service.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::bench {
namespace {

using Clock = std::chrono::steady_clock;

// kB → MiB of a /proc/self/status field ("VmRSS", "VmHWM").
double StatusMiB(std::string_view field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':') {
      return std::strtod(line.c_str() + field.size() + 1, nullptr) / 1024.0;
    }
  }
  return -1;
}

void Replace(std::string& text, std::string_view from, std::string_view to) {
  const size_t at = text.find(from);
  if (at != std::string::npos) {
    text.replace(at, from.size(), to);
  }
}

// The generator's pod as a template with placeholders for what varies.
std::string PodTemplate(const PayloadSet& set) {
  nlohmann::json pod = nlohmann::json::parse(set.pod());
  pod["metadata"]["name"] = "@NAME@";
  pod["metadata"]["uid"] = "@UID@";
  pod["metadata"]["resourceVersion"] = "@RV@";
  pod["spec"]["nodeName"] = "@NODE@";
  pod["status"]["phase"] = "Running";
  return pod.dump();
}

std::string PodJson(const std::string& tmpl, size_t pod, std::string_view node, uint64_t rv) {
  std::string text = tmpl;
  char uid[40];
  std::snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012zu", pod);
  Replace(text, "@NAME@", "load-" + std::to_string(pod));
  Replace(text, "@UID@", uid);
  Replace(text, "@RV@", std::to_string(rv));
  Replace(text, "@NODE@", node);
  return text;
}

struct Options {
  size_t nodes = 15000;
  size_t pods = 150000;
  size_t events = 200000;
  size_t filter_threads = 1;
  uint64_t seed = 1;
};

bool ParseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const uint64_t value = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--nodes") {
      o.nodes = value;
    } else if (flag == "--pods") {
      o.pods = value;
    } else if (flag == "--events") {
      o.events = value;
    } else if (flag == "--filter-threads") {
      o.filter_threads = value;
    } else if (flag == "--seed") {
      o.seed = value;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && o.nodes > 0 && o.pods > 0;
}

const char* kConfig = R"(
profiles:
- name: default
  policies:
  - name: NodeHealth
  - name: TaintToleration
  - name: NodeResourcesFit
)";

int Run(const Options& o) {
  const PayloadSet set(o.seed, o.nodes);
  cluster::ClusterCache cache(cluster::CacheOptions{std::chrono::seconds(30), nullptr, {}, {}});
  wire::ObjectDecoder decoder;
  const double rss_start = StatusMiB("VmRSS");

  // ---- initial LIST ----
  const auto load_start = Clock::now();
  std::vector<cluster::InformerObject> nodes;
  nodes.reserve(o.nodes);
  wire::WatchEvent event;
  for (size_t i = 0; i < o.nodes; ++i) {
    const auto line = wire::RequestBuffer::CopyOf(std::string(R"({"type":"ADDED","object":)") +
                                                  std::string(set.node_json(i)) + "}");
    wire::NodeObject node;
    if (Status s = decoder.DecodeNodeEvent(line, event, node); !s.ok()) {
      std::fprintf(stderr, "cache-load: node %zu: %s\n", i, s.message().c_str());
      return 1;
    }
    nodes.push_back({std::make_shared<const model::OwnedNode>(node.info, node.resource_version),
                     nullptr, nullptr});
  }
  cache.OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));

  const std::string tmpl = PodTemplate(set);
  std::vector<cluster::InformerObject> pods;
  pods.reserve(o.pods);
  for (size_t p = 0; p < o.pods; ++p) {
    const auto line = wire::RequestBuffer::CopyOf(
        R"({"type":"ADDED","object":)" + PodJson(tmpl, p, set.node_name(p % o.nodes), 1) + "}");
    wire::PodObject pod;
    if (Status s = decoder.DecodePodEvent(line, event, pod); !s.ok()) {
      std::fprintf(stderr, "cache-load: pod %zu: %s\n", p, s.message().c_str());
      return 1;
    }
    pods.push_back({nullptr,
                    std::make_shared<const model::OwnedPod>(pod.info, pod.resource_version),
                    nullptr});
  }
  cache.OnReplace(cluster::ResourceKind::kPods, std::move(pods));
  decoder.ShrinkTo(1 << 20);
  const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
  const double rss_loaded = StatusMiB("VmRSS");

  // ---- the event ring: pod k moves one node further each time it appears ----
  const size_t ring = std::min<size_t>(4096, o.pods);
  std::vector<wire::RequestBuffer> lines;
  lines.reserve(ring);
  for (size_t k = 0; k < ring; ++k) {
    const size_t pod = (k * 7919) % o.pods;
    lines.push_back(wire::RequestBuffer::CopyOf(
        R"({"type":"MODIFIED","object":)" +
        PodJson(tmpl, pod, set.node_name((pod + 1 + k % 3) % o.nodes), 2 + k) + "}"));
  }

  // ---- filter threads ----
  auto config = config::LoadConfigText(kConfig, "cache-load");
  policy::Registry registry;
  if (!config.ok() || !policy::RegisterBuiltinPolicies(registry).ok()) {
    std::fprintf(stderr, "cache-load: config\n");
    return 1;
  }
  auto profile = pipeline::Profile::Build(config->profiles[0], registry, "profiles[0]");
  if (!profile.ok()) {
    std::fprintf(stderr, "cache-load: %s\n", profile.status().message().c_str());
    return 1;
  }
  const server::ExtenderService service({*profile}, 0, &cache, nullptr, nullptr);
  const size_t filter_nodes = std::min<size_t>(5000, o.nodes);
  const wire::RequestBuffer body =
      wire::RequestBuffer::CopyOf(set.Body(filter_nodes, Mode::kNames, Verb::kFilter));

  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::vector<std::vector<double>> latencies(o.filter_threads);
  std::vector<std::thread> filters;
  for (size_t t = 0; t < o.filter_threads; ++t) {
    filters.emplace_back([&, t] {
      server::Scratch scratch;
      server::RequestSummary summary;
      std::string out;
      while (!done.load(std::memory_order_relaxed)) {
        const auto start = Clock::now();
        const int status =
            service.Handle(server::Verb::kFilter, 0, body, scratch, out, summary);
        latencies[t].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        if (status != 200 || !summary.error.empty()) {
          errors.fetch_add(1);
        }
      }
    });
  }

  // ---- the pod informer's thread: decode + copy + apply ----
  const auto events_start = Clock::now();
  wire::PodObject pod;  // reused, as the informer reuses its own
  for (size_t e = 0; e < o.events; ++e) {
    if (Status s = decoder.DecodePodEvent(lines[e % ring], event, pod); !s.ok()) {
      std::fprintf(stderr, "cache-load: event: %s\n", s.message().c_str());
      return 1;
    }
    cache.OnUpsert(cluster::ResourceKind::kPods,
                   {nullptr, std::make_shared<const model::OwnedPod>(pod.info, pod.resource_version),
                    nullptr});
  }
  const double event_seconds = std::chrono::duration<double>(Clock::now() - events_start).count();
  done = true;
  for (auto& thread : filters) {
    thread.join();
  }

  std::vector<double> all;
  for (const auto& l : latencies) {
    all.insert(all.end(), l.begin(), l.end());
  }
  std::sort(all.begin(), all.end());
  auto percentile = [&](double q) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(q * all.size()))];
  };
  const cluster::CacheStats stats = cache.Stats();
  std::printf("nodes %zu, pods %zu (cache: %zu nodes, %zu pods)\n", o.nodes, o.pods, stats.nodes,
              stats.pods);
  std::printf("initial load (decode + copy + OnReplace): %.2f s\n", load_seconds);
  std::printf("RSS: %.0f MiB at start, %.0f MiB after the load (%.0f MiB for the cache)\n",
              rss_start, rss_loaded, rss_loaded - rss_start);
  std::printf("events: %zu pod MODIFIED events in %.2f s = %.0f events/s (decode + copy + apply), "
              "%zu filter thread(s) running\n",
              o.events, event_seconds, static_cast<double>(o.events) / event_seconds,
              o.filter_threads);
  std::printf("filter %zu names during the events: %zu requests, p50 %.3f ms, p99 %.3f ms, "
              "max %.3f ms, %d errors\n",
              filter_nodes, all.size(), percentile(0.5), percentile(0.99),
              all.empty() ? 0.0 : all.back(), errors.load());
  std::printf("peak RSS (VmHWM): %.0f MiB\n", StatusMiB("VmHWM"));
  // One key=value line, for scripts that collect the figures.
  std::printf("result nodes=%zu pods=%zu cache_mib=%.0f events_per_s=%.0f filter_p50_ms=%.3f "
              "filter_p99_ms=%.3f hwm_mib=%.0f errors=%d\n",
              o.nodes, o.pods, rss_loaded - rss_start, static_cast<double>(o.events) / event_seconds,
              percentile(0.5), percentile(0.99), StatusMiB("VmHWM"), errors.load());
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace schedext::bench

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // the cache logs each LIST at info
  schedext::bench::Options options;
  if (!schedext::bench::ParseArgs(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: schedext-cache-load [--nodes N] [--pods N] [--events N] "
                 "[--filter-threads N] [--seed N]\n");
    return 2;
  }
  return schedext::bench::Run(options);
}
