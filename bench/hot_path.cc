// schedext-hot-bench: the names-mode request path of production, in one
// process and without HTTP, for quick before/after comparisons of the cache
// layout and the policies (issue 15).
//
// The cluster cache is filled the way the informers fill it: the bench/prod
// generator's nodes and bound pods (bench/gen/prod_objects.h: realistic
// ~11 KB nodes with 4 shared GPUs, two pods per node) as LIST pages of 500,
// decoded by ObjectDecoder into OwnedNode / OwnedPod and handed to
// ClusterCache::OnReplace, with every profile of the configuration built as
// main builds them (one PolicyHost, the interned names frozen and shared with
// the cache). Each request then goes through ExtenderService::Handle —
// decode, resolve by name, the profile's policies, encode — on one thread,
// as one keep-alive connection's requests do; the kernel's socket copies
// and the listener are not included (bench/prod measures those).
//
//   schedext-hot-bench [--config bench/prod-profiles.yaml] [--nodes 5000]
//     [--pods-per-node 2] [--requests 300] [--rounds 3] [--profiles a,b]
//     [--gpu-profiles gpushare] [--hami-profiles hami] [--seed 1]
//
// Prints, per round, profile and verb, the median and p99 of the thread's
// CPU time per request (CLOCK_THREAD_CPUTIME_ID) and the median wall time;
// rounds visit the profiles in turn, so a slow phase of the machine shows as
// one slow round, not as one slow profile. Compare two builds by running
// them alternately. Speed is never asserted (CTest runs it small).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/stats.h"
#include "gen/payload_gen.h"
#include "gen/prod_objects.h"
#include "schedext/cluster/cache.h"
#include "schedext/config/config.h"
#include "schedext/model/name_table.h"
#include "schedext/model/owned.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::bench {
namespace {

struct Options {
  std::string config = std::string(SCHEDEXT_SOURCE_DIR) + "/bench/prod-profiles.yaml";
  size_t nodes = 5000;
  size_t pods_per_node = 2;
  int requests = 300;
  int rounds = 3;
  std::vector<std::string> profiles;  // empty: every profile of the configuration
  std::vector<std::string> gpu_profiles = {"gpushare"};
  std::vector<std::string> hami_profiles = {"hami"};
  uint64_t seed = 1;
};

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return out;
}

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "schedext-hot-bench: " << flag << " needs a value\n";
      return false;
    }
    const std::string value = argv[++i];
    if (flag == "--config") {
      o.config = value;
    } else if (flag == "--nodes") {
      o.nodes = std::stoul(value);
    } else if (flag == "--pods-per-node") {
      o.pods_per_node = std::stoul(value);
    } else if (flag == "--requests") {
      o.requests = std::stoi(value);
    } else if (flag == "--rounds") {
      o.rounds = std::stoi(value);
    } else if (flag == "--profiles") {
      o.profiles = SplitList(value);
    } else if (flag == "--gpu-profiles") {
      o.gpu_profiles = SplitList(value);
    } else if (flag == "--hami-profiles") {
      o.hami_profiles = SplitList(value);
    } else if (flag == "--seed") {
      o.seed = std::stoull(value);
    } else {
      std::cerr << "schedext-hot-bench: unknown flag " << flag << "\n";
      return false;
    }
  }
  return o.nodes > 0 && o.requests > 0 && o.rounds > 0;
}

std::string ListPage(const std::vector<std::string>& items, size_t begin, size_t end) {
  std::string out = R"({"metadata":{"resourceVersion":"1"},"items":[)";
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) out += ',';
    out += items[i];
  }
  return out + "]}";
}

// The informers' first LIST of nodes and of pods, in pages of 500, into `cache`.
Status FillCache(const PayloadSet& set, const Options& o, size_t watches,
                 cluster::ClusterCache& cache) {
  constexpr size_t kPage = 500;
  std::vector<std::string> node_items;
  std::vector<std::string> pod_items;
  for (size_t i = 0; i < o.nodes; ++i) {
    node_items.push_back(
        WithServerMetadata(NodeObject(set.node_json(i)), "node-uid-" + std::to_string(i)));
  }
  for (size_t i = 0; i < o.nodes * o.pods_per_node; ++i) {
    pod_items.push_back(WithServerMetadata(
        PodObject("bench-" + std::to_string(i), std::string(set.node_name(i % o.nodes)), i),
        "pod-uid-" + std::to_string(i)));
  }
  wire::ObjectDecoder decoder;
  wire::ListMeta meta;
  std::vector<cluster::InformerObject> nodes;
  for (size_t begin = 0; begin < node_items.size(); begin += kPage) {
    const wire::RequestBuffer page = wire::RequestBuffer::CopyOf(
        ListPage(node_items, begin, std::min(node_items.size(), begin + kPage)));
    SCHEDEXT_RETURN_IF_ERROR(decoder.DecodeNodeList(page, meta, [&](const wire::NodeObject& n) {
      nodes.push_back(
          {std::make_shared<const model::OwnedNode>(n.info, n.resource_version), nullptr, nullptr});
      return true;
    }));
  }
  std::vector<cluster::InformerObject> pods;
  for (size_t begin = 0; begin < pod_items.size(); begin += kPage) {
    const wire::RequestBuffer page = wire::RequestBuffer::CopyOf(
        ListPage(pod_items, begin, std::min(pod_items.size(), begin + kPage)));
    SCHEDEXT_RETURN_IF_ERROR(decoder.DecodePodList(page, meta, [&](const wire::PodObject& p) {
      pods.push_back(
          {nullptr, std::make_shared<const model::OwnedPod>(p.info, p.resource_version), nullptr});
      return true;
    }));
  }
  if (nodes.size() != o.nodes || pods.size() != pod_items.size()) {
    return InternalError("decoded " + std::to_string(nodes.size()) + " nodes and " +
                         std::to_string(pods.size()) + " pods");
  }
  cache.OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
  cache.OnReplace(cluster::ResourceKind::kPods, std::move(pods));
  for (size_t w = 0; w < watches; ++w) {
    cache.WatchFeed(w).OnReplace(cluster::ResourceKind::kObjects, {});
  }
  return cache.Synced() ? OkStatus() : InternalError("cache not synced after the first lists");
}

double ThreadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// The p-th quantile of `v` (common/stats.h), which need not be sorted.
double Quantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return Percentile(v, p);
}

int Run(const Options& o) {
  auto config = config::LoadConfigFile(o.config);
  if (!config.ok()) {
    std::cerr << "schedext-hot-bench: " << config.status().message() << "\n";
    return 1;
  }
  policy::Registry registry;
  if (Status s = policy::RegisterBuiltinPolicies(registry); !s.ok()) {
    std::cerr << "schedext-hot-bench: " << s.message() << "\n";
    return 1;
  }
  policy::PolicyHost host;
  auto names = std::make_shared<model::NameTable>();
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles;
  for (size_t i = 0; i < config->profiles.size(); ++i) {
    auto profile = pipeline::Profile::Build(config->profiles[i], registry,
                                            "profiles[" + std::to_string(i) + "]", &host, names);
    if (!profile.ok()) {
      std::cerr << "schedext-hot-bench: " << profile.status().message() << "\n";
      return 1;
    }
    profiles.push_back(std::move(profile).value());
  }
  names->Freeze();

  cluster::CacheOptions cache_options;
  cache_options.accountings = host.accountings();
  cache_options.summaries = host.summaries();
  for (const policy::PolicyHost::WatchEntry& watch : host.watches()) {
    cache_options.watches.push_back(watch.handler);
  }
  cache_options.names = names;
  cluster::ClusterCache cache(cache_options);
  const PayloadSet set(o.seed, o.nodes);
  const auto t_fill = std::chrono::steady_clock::now();
  if (Status s = FillCache(set, o, cache_options.watches.size(), cache); !s.ok()) {
    std::cerr << "schedext-hot-bench: filling the cache: " << s.message() << "\n";
    return 1;
  }
  std::printf("cache: %zu nodes, %zu pods through ObjectDecoder in %.2f s\n", o.nodes,
              o.nodes * o.pods_per_node,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t_fill).count());
  host.AttachCluster([&cache]() -> std::shared_ptr<const policy::ClusterView> {
    return cache.snapshot();
  });

  server::ExtenderService service(profiles, 0, &cache, nullptr, nullptr);
  const std::string names_text = set.Body(o.nodes, Mode::kNames, bench::Verb::kFilter);
  const std::string gpu_text = GpuNamesBody(names_text);
  if (gpu_text.empty()) {
    std::cerr << "schedext-hot-bench: the generator's pod changed shape; no GPU request\n";
    return 1;
  }
  const wire::RequestBuffer names_body = wire::RequestBuffer::CopyOf(names_text);
  const wire::RequestBuffer gpu_body = wire::RequestBuffer::CopyOf(gpu_text);
  const wire::RequestBuffer hami_body = wire::RequestBuffer::CopyOf(HamiNamesBody(names_text));

  std::vector<std::string> chosen = o.profiles;
  if (chosen.empty()) {
    for (const auto& p : profiles) chosen.push_back(p->name());
  }
  struct Job {
    std::string profile;
    size_t index;
    server::Verb verb;
    const wire::RequestBuffer* body;
  };
  std::vector<Job> jobs;
  for (const std::string& name : chosen) {
    const int index = service.FindProfile(name);
    if (index < 0) {
      std::cerr << "schedext-hot-bench: no profile \"" << name << "\" in " << o.config << "\n";
      return 1;
    }
    const auto in = [&](const std::vector<std::string>& list) {
      return std::find(list.begin(), list.end(), name) != list.end();
    };
    const wire::RequestBuffer* body =
        in(o.hami_profiles) ? &hami_body : in(o.gpu_profiles) ? &gpu_body : &names_body;
    for (server::Verb verb : {server::Verb::kFilter, server::Verb::kPrioritize}) {
      jobs.push_back({name, static_cast<size_t>(index), verb, body});
    }
  }

  server::Scratch scratch;
  std::string out;
  // Every job answers once without an error before anything is measured.
  for (const Job& job : jobs) {
    server::RequestSummary summary;
    const int status = service.Handle(job.verb, job.index, *job.body, scratch, out, summary);
    if (status != 200 || !summary.error.empty() || summary.nodes_in != o.nodes) {
      std::cerr << "schedext-hot-bench: /" << job.profile << "/" << server::VerbName(job.verb)
                << ": status " << status << " " << summary.error << "\n";
      return 1;
    }
    // A device body that no node passes would time the rejection path only.
    if (job.verb == server::Verb::kFilter && job.body != &names_body && summary.nodes_out == 0) {
      std::cerr << "schedext-hot-bench: /" << job.profile
                << "/filter: no node passes the device request\n";
      return 1;
    }
    std::printf("/%s/%s: %zu nodes in, %zu out, %zu failed, %zu unresolvable\n",
                job.profile.c_str(), std::string(server::VerbName(job.verb)).c_str(),
                summary.nodes_in, summary.nodes_out, summary.failed, summary.unresolvable);
  }
  std::printf("\n%-10s %-10s %5s %12s %12s %12s\n", "profile", "verb", "round", "cpu p50 us",
              "cpu p99 us", "wall p50 us");
  std::vector<std::vector<double>> medians(jobs.size());
  std::vector<double> cpu(static_cast<size_t>(o.requests));
  std::vector<double> wall(static_cast<size_t>(o.requests));
  for (int round = 1; round <= o.rounds; ++round) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      const Job& job = jobs[j];
      for (int i = 0; i < 10; ++i) {
        server::RequestSummary summary;
        service.Handle(job.verb, job.index, *job.body, scratch, out, summary);
      }
      for (int i = 0; i < o.requests; ++i) {
        server::RequestSummary summary;
        const auto w0 = std::chrono::steady_clock::now();
        const double c0 = ThreadCpuUs();
        service.Handle(job.verb, job.index, *job.body, scratch, out, summary);
        cpu[static_cast<size_t>(i)] = ThreadCpuUs() - c0;
        wall[static_cast<size_t>(i)] =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0)
                .count();
      }
      const double p50 = Quantile(cpu, 0.5);
      medians[j].push_back(p50);
      std::printf("%-10s %-10s %5d %12.1f %12.1f %12.1f\n", job.profile.c_str(),
                  std::string(server::VerbName(job.verb)).c_str(), round, p50,
                  Quantile(cpu, 0.99), Quantile(wall, 0.5));
    }
  }
  std::printf("\nsummary: CPU p50 per request, median of the rounds (us)\n");
  for (size_t j = 0; j < jobs.size(); ++j) {
    std::printf("%-10s %-10s %12.1f\n", jobs[j].profile.c_str(),
                std::string(server::VerbName(jobs[j].verb)).c_str(),
                Quantile(medians[j], 0.5));
  }
  return 0;
}

}  // namespace
}  // namespace schedext::bench

int main(int argc, char** argv) {
  schedext::bench::Options o;
  if (!schedext::bench::ParseOptions(argc, argv, o)) {
    std::cerr << "usage: schedext-hot-bench [--config FILE] [--nodes N] [--pods-per-node K]\n"
                 "  [--requests Q] [--rounds R] [--profiles a,b] [--gpu-profiles a,b]\n"
                 "  [--hami-profiles a,b] [--seed S]\n";
    return 2;
  }
  return schedext::bench::Run(o);
}
