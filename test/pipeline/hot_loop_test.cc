// The per-node loops' invariants (architecture.md §11): no allocation and no
// lock per node, and the policies' lookups by interned id, for every built-in
// profile of bench/prod-profiles.yaml on nodes and pods that went the
// production way — JSON decoded by ObjectDecoder, owned and stored by the
// ClusterCache with the profiles' NameTable, resolved by name, the pod decoded
// by RequestDecoder.
//
// The counting hooks replace the global operator new and interpose
// pthread_mutex_lock (this test is its own executable for that reason); they
// count only on the thread that armed them. A request's allocations and locks
// must not depend on how many nodes it has: the same request over 100 and over
// 1,000 nodes must make exactly as many. Any allocation or lock in a per-node
// hook or in the profile's loops makes the 1,000-node count larger.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/cluster/cache.h"
#include "schedext/config/config.h"
#include "schedext/model/name_table.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "schedext/policy/request_state.h"
#include "schedext/wire/decoder.h"
#include "schedext/wire/object_decoder.h"
#include "schedext/wire/request_buffer.h"
#include "testing/counting_hooks.h"

namespace schedext {
namespace {

using Counts = testing::AllocationAndLockCounts;

template <typename Fn>
Counts Count(Fn&& fn) {
  return testing::CountAllocationsAndLocks(fn);
}

constexpr size_t kNodes = 1000;
constexpr size_t kFewNodes = 100;

std::string NodeName(size_t i) {
  return "ip-10-0-" + std::to_string(i / 250) + "-" + std::to_string(i % 250) +
         ".us-west-2.compute.internal";
}

// A node as the API server lists it, with the labels, taints, conditions and
// GPU resources the benchmark's generator gives (bench/gen), varied by index
// so every profile both accepts and rejects some nodes.
std::string NodeJson(size_t i) {
  const std::string name = NodeName(i);
  const char* zones[] = {"us-west-2a", "us-west-2b", "us-west-2c"};
  std::string labels = R"("beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/os":"linux",)";
  labels +=
      R"("eks.amazonaws.com/capacityType":")" + std::string(i % 5 == 0 ? "SPOT" : "ON_DEMAND");
  labels += R"(","eks.amazonaws.com/nodegroup":"ng-)" + std::to_string(i % 4);
  labels += R"(","eks.amazonaws.com/sourceLaunchTemplateVersion":")" + std::to_string(i % 12 + 1);
  labels += R"(","kubernetes.io/arch":"amd64","kubernetes.io/hostname":")" + name;
  labels += R"(","kubernetes.io/os":")" + std::string(i % 50 == 7 ? "windows" : "linux");
  labels += R"(","topology.kubernetes.io/region":"us-west-2","topology.kubernetes.io/zone":")";
  labels += zones[i % 3];
  labels += R"(")";
  std::vector<std::string> spec_fields;
  if (i % 7 == 3) {
    spec_fields.push_back(
        R"("taints":[{"key":"dedicated","value":"batch","effect":"NoSchedule"}])");
  }
  if (i % 30 == 11) {
    spec_fields.push_back(R"("unschedulable":true)");
  }
  std::string spec = "{";
  for (size_t f = 0; f < spec_fields.size(); ++f) {
    spec += (f == 0 ? "" : ",") + spec_fields[f];
  }
  spec += "}";
  const std::string ready = i % 40 == 13 ? "False" : "True";
  // GPUs: mostly 4 × 16 GiB; some nodes none, devices too small for the
  // request, or one device that a bound pod fills.
  std::string gpus = R"(,"aliyun.com/gpu-count":"4","aliyun.com/gpu-mem":"64")";
  if (i % 13 == 6) {
    gpus.clear();
  } else if (i % 9 == 5) {
    gpus = R"(,"aliyun.com/gpu-count":"4","aliyun.com/gpu-mem":"8")";
  } else if (i % 17 == 8) {
    gpus = R"(,"aliyun.com/gpu-count":"1","aliyun.com/gpu-mem":"4")";
  }
  // HAMi vGPUs: two 40,000 MiB devices split 4 ways; some nodes none, some
  // too small for the request's 20,000 MiB.
  std::string hami;
  if (i % 11 != 4) {
    const std::string memory = i % 8 == 2 ? "10000" : "40000";
    for (int d = 0; d < 2; ++d) {
      hami += "GPU-" + name + "-" + std::to_string(d) + ",4," + memory + ",100,NVIDIA-A100,0,true," +
              std::to_string(d) + ",hami-core:";
    }
    hami = R"(,"hami.io/node-nvidia-register":")" + hami + R"(")";
  }
  const std::string resources =
      R"({"cpu":"8","memory":"32Gi","pods":"110","ephemeral-storage":"100Gi",)"
      R"("hugepages-1Gi":"0","hugepages-2Mi":"0","attachable-volumes-aws-ebs":"25")" +
      gpus + "}";
  return R"({"metadata":{"name":")" + name + R"(","uid":"uid-)" + std::to_string(i) +
         R"(","resourceVersion":"1","labels":{)" + labels +
         R"(},"annotations":{"node.alpha.kubernetes.io/ttl":"0")" + hami + R"(}},"spec":)" + spec +
         R"(,"status":{"capacity":)" + resources + R"(,"allocatable":)" + resources +
         R"(,"conditions":[{"type":"MemoryPressure","status":"False"},)"
         R"({"type":"DiskPressure","status":"False"},{"type":"PIDPressure","status":"False"},)"
         R"({"type":"Ready","status":")" +
         ready + R"("}]}})";
}

// A bound pod; every other one holds 4 GiB on GPU 0 or 1 (device-plugin
// annotations) and 20,000 MiB of HAMi device 0 or 1.
std::string PodJson(size_t i, size_t node) {
  std::string annotations;
  std::string gpu;
  if (i % 2 == 0) {
    annotations = R"(,"annotations":{"ALIYUN_COM_GPU_MEM_IDX":")" + std::to_string(i % 4 / 2) +
                  R"(","ALIYUN_COM_GPU_MEM_POD":"4","hami.io/vgpu-devices-allocated":"GPU-)" +
                  NodeName(node) + "-" + std::to_string(i % 4 / 2) + R"(,NVIDIA,20000,0:;"})";
    gpu = R"(,"limits":{"aliyun.com/gpu-mem":"4"})";
  }
  return R"({"metadata":{"name":"pod-)" + std::to_string(i) +
         R"(","namespace":"default","uid":"pod-uid-)" + std::to_string(i) +
         R"(","resourceVersion":"1")" + annotations + R"(},"spec":{"nodeName":")" + NodeName(node) +
         R"(","containers":[{"name":"app","resources":{"requests":{"cpu":"250m","memory":"512Mi"})" +
         gpu + R"(}}]},"status":{"phase":"Running"}})";
}

std::string List(const std::vector<std::string>& items) {
  std::string out = R"({"metadata":{"resourceVersion":"1"},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : ",") + items[i];
  }
  return out + "]}";
}

// The filter request of a pod asking for 4 GiB of GPU memory and one HAMi
// vGPU of 20,000 MiB (the benchmark's GPU pods; the other profiles ignore
// GPU limits).
std::string RequestJson() {
  std::string names;
  for (size_t i = 0; i < kNodes; ++i) {
    names += (i == 0 ? "\"" : ",\"") + NodeName(i) + "\"";
  }
  return R"({"Pod":{"metadata":{"name":"p","namespace":"default","uid":"req-uid"},)"
         R"("spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m",)"
         R"("memory":"1Gi"},"limits":{"aliyun.com/gpu-mem":"4","nvidia.com/gpu":"1",)"
         R"("nvidia.com/gpumem":"20000"}}}],)"
         R"("tolerations":[{"key":"dedicated","operator":"Equal","value":"other"}]}},)"
         R"("NodeNames":[)" +
         names + "]}";
}

class HotLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config =
        config::LoadConfigFile(std::string(SCHEDEXT_SOURCE_DIR) + "/bench/prod-profiles.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    ASSERT_TRUE(policy::RegisterBuiltinPolicies(registry_).ok());
    names_ = std::make_shared<model::NameTable>();
    for (size_t i = 0; i < config->profiles.size(); ++i) {
      auto profile = pipeline::Profile::Build(
          config->profiles[i], registry_, "profiles[" + std::to_string(i) + "]", &host_, names_);
      ASSERT_TRUE(profile.ok()) << profile.status().message();
      profiles_.push_back(*profile);
    }
    names_->Freeze();
    ASSERT_EQ(profiles_.size(), 5U);  // default, resources, gpushare, hami, labels

    with_ids_ = MakeCache(names_);
    without_ids_ = MakeCache(nullptr);

    request_ = std::make_unique<wire::RequestBuffer>(wire::RequestBuffer::CopyOf(request_json_));
    ASSERT_TRUE(decoder_.DecodeExtenderArgs(*request_, args_).ok());
    ASSERT_EQ(args_.node_names.size(), kNodes);
  }

  std::unique_ptr<cluster::ClusterCache> MakeCache(std::shared_ptr<const model::NameTable> names) {
    cluster::CacheOptions options;
    options.accountings = host_.accountings();
    options.summaries = host_.summaries();
    for (const policy::PolicyHost::WatchEntry& watch : host_.watches()) {
      options.watches.push_back(watch.handler);
    }
    options.names = std::move(names);
    auto cache = std::make_unique<cluster::ClusterCache>(options);
    wire::ObjectDecoder decoder;
    std::vector<std::string> node_items;
    std::vector<std::string> pod_items;
    for (size_t i = 0; i < kNodes; ++i) {
      node_items.push_back(NodeJson(i));
      pod_items.push_back(PodJson(2 * i, i));
      pod_items.push_back(PodJson(2 * i + 1, i));
    }
    std::vector<cluster::InformerObject> nodes;
    const wire::RequestBuffer node_page = wire::RequestBuffer::CopyOf(List(node_items));
    wire::ListMeta meta;
    EXPECT_TRUE(decoder
                    .DecodeNodeList(node_page, meta,
                                    [&](const wire::NodeObject& object) {
                                      nodes.push_back({std::make_shared<const model::OwnedNode>(
                                                           object.info, object.resource_version),
                                                       nullptr, nullptr});
                                      return true;
                                    })
                    .ok());
    std::vector<cluster::InformerObject> pods;
    const wire::RequestBuffer pod_page = wire::RequestBuffer::CopyOf(List(pod_items));
    EXPECT_TRUE(decoder
                    .DecodePodList(pod_page, meta,
                                   [&](const wire::PodObject& object) {
                                     pods.push_back({nullptr,
                                                     std::make_shared<const model::OwnedPod>(
                                                         object.info, object.resource_version),
                                                     nullptr});
                                     return true;
                                   })
                    .ok());
    EXPECT_EQ(nodes.size(), kNodes);
    EXPECT_EQ(pods.size(), 2 * kNodes);
    cache->OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
    cache->OnReplace(cluster::ResourceKind::kPods, std::move(pods));
    for (size_t w = 0; w < options.watches.size(); ++w) {
      cache->WatchFeed(w).OnReplace(cluster::ResourceKind::kObjects, {});
    }
    EXPECT_TRUE(cache->Synced());
    return cache;
  }

  // The request's nodes resolved in `cache`.
  std::vector<const model::NodeInfo*> Resolve(const cluster::ClusterCache& cache,
                                              std::shared_ptr<const cluster::Snapshot>& snap) {
    std::vector<const model::NodeInfo*> nodes;
    EXPECT_TRUE(cache.Resolve(args_.node_names, nodes, snap).ok());
    for (const model::NodeInfo* node : nodes) {
      EXPECT_NE(node, nullptr);
    }
    return nodes;
  }

  policy::Registry registry_;
  policy::PolicyHost host_;
  std::shared_ptr<model::NameTable> names_;
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles_;
  std::unique_ptr<cluster::ClusterCache> with_ids_;
  std::unique_ptr<cluster::ClusterCache> without_ids_;
  const std::string request_json_ = RequestJson();
  std::unique_ptr<wire::RequestBuffer> request_;
  wire::RequestDecoder decoder_;
  wire::ExtenderArgsView args_;
};

TEST_F(HotLoopTest, CachedNodesCarryTheProfilesIds) {
  std::shared_ptr<const cluster::Snapshot> snap;
  const std::vector<const model::NodeInfo*> nodes = Resolve(*with_ids_, snap);
  // What the built-in policies intern: GpuShare's two resources, NodeLabel's
  // and NodeNumeric's keys.
  for (std::string_view name : {"aliyun.com/gpu-mem", "aliyun.com/gpu-count", "kubernetes.io/os",
                                "eks.amazonaws.com/capacityType", "topology.kubernetes.io/zone",
                                "eks.amazonaws.com/sourceLaunchTemplateVersion"}) {
    EXPECT_NE(names_->Find(name), model::kNoNameId) << name;
  }
  for (const model::NodeInfo* node : nodes) {
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(node->labels.ids_from(), names_.get());
    EXPECT_EQ(node->capacity.ids_from(), names_.get());
    EXPECT_EQ(node->allocatable.ids_from(), names_.get());
    ASSERT_NE(node->usage, nullptr);
    EXPECT_EQ(node->usage->requested.ids_from(), names_.get());
  }
  std::shared_ptr<const cluster::Snapshot> plain;
  for (const model::NodeInfo* node : Resolve(*without_ids_, plain)) {
    EXPECT_EQ(node->labels.ids_from(), nullptr);
  }
}

// Every profile gives the same verdicts, reasons and scores on `a` as on `b`
// (the same request's nodes, two ways).
void ExpectSameAnswers(const std::vector<std::shared_ptr<const pipeline::Profile>>& profiles,
                       const model::PodInfo& pod, const std::vector<const model::NodeInfo*>& a,
                       const std::vector<const model::NodeInfo*>& b) {
  for (const auto& profile : profiles) {
    SCOPED_TRACE(profile->name());
    policy::RequestState state_a;
    policy::RequestState state_b;
    pipeline::FilterOutcome out_a;
    pipeline::FilterOutcome out_b;
    ASSERT_TRUE(profile->RunFilters(pod, a, state_a, out_a).ok());
    ASSERT_TRUE(profile->RunFilters(pod, b, state_b, out_b).ok());
    EXPECT_EQ(out_a.passed, out_b.passed);
    ASSERT_EQ(out_a.failed.size(), out_b.failed.size());
    for (size_t i = 0; i < out_a.failed.size(); ++i) {
      EXPECT_EQ(out_a.failed[i].node, out_b.failed[i].node);
      EXPECT_EQ(out_a.failed[i].reason, out_b.failed[i].reason);
    }
    ASSERT_EQ(out_a.unresolvable.size(), out_b.unresolvable.size());
    for (size_t i = 0; i < out_a.unresolvable.size(); ++i) {
      EXPECT_EQ(out_a.unresolvable[i].node, out_b.unresolvable[i].node);
      EXPECT_EQ(out_a.unresolvable[i].reason, out_b.unresolvable[i].reason);
    }
    EXPECT_EQ(out_a.passed.size() + out_a.failed.size() + out_a.unresolvable.size(), a.size());
    // Not a comparison of two empty answers: every profile passes some of
    // these nodes and, but for resources (the pod fits everywhere), rejects
    // some.
    EXPECT_FALSE(out_a.passed.empty());
    if (profile->name() != "resources") {
      EXPECT_LT(out_a.passed.size(), a.size());
    }
    pipeline::ScoreScratch scratch_a;
    pipeline::ScoreScratch scratch_b;
    std::vector<int64_t> scores_a;
    std::vector<int64_t> scores_b;
    ASSERT_TRUE(profile->RunScorers(pod, a, scratch_a, scores_a).ok());
    ASSERT_TRUE(profile->RunScorers(pod, b, scratch_b, scores_b).ok());
    EXPECT_EQ(scores_a, scores_b);
  }
}

// Lookups by id and by text give the same verdicts and scores everywhere.
TEST_F(HotLoopTest, IdsAndTextGiveTheSameAnswers) {
  std::shared_ptr<const cluster::Snapshot> a;
  std::shared_ptr<const cluster::Snapshot> b;
  ExpectSameAnswers(profiles_, args_.pod, Resolve(*with_ids_, a), Resolve(*without_ids_, b));
}

// The policies' node summaries (written by the cache) and the nodes they
// summarize give the same verdicts and scores everywhere: each policy
// computes a summary from the node itself when it has none, as a full-mode
// node from a request body has none.
TEST_F(HotLoopTest, SummariesAndNodesGiveTheSameAnswers) {
  // NodeLabel and NodeNumeric register one at least.
  EXPECT_GE(host_.summaries().size(), 2U);
  for (auto* cache : {with_ids_.get(), without_ids_.get()}) {
    std::shared_ptr<const cluster::Snapshot> snap;
    const std::vector<const model::NodeInfo*> summarized = Resolve(*cache, snap);
    std::vector<model::NodeInfo> copies;
    copies.reserve(summarized.size());
    std::vector<const model::NodeInfo*> unsummarized;
    for (const model::NodeInfo* node : summarized) {
      ASSERT_TRUE(node->has_summary());
      copies.push_back(*node);
      EXPECT_TRUE(copies.back().has_summary());  // a copy keeps it with the same usage
      copies.back().summarized_usage = nullptr;
      ASSERT_FALSE(copies.back().has_summary());
      unsummarized.push_back(&copies.back());
    }
    ExpectSameAnswers(profiles_, args_.pod, summarized, unsummarized);
  }
}

TEST_F(HotLoopTest, NoAllocationOrLockPerNode) {
#if !defined(SCHEDEXT_COUNTING_HOOKS)
  GTEST_SKIP() << "the sanitizer owns operator new; counted in the plain build";
#else
  std::shared_ptr<const cluster::Snapshot> snap;
  const std::vector<const model::NodeInfo*> all = Resolve(*with_ids_, snap);
  const std::span<const model::NodeInfo* const> many(all);
  const std::span<const model::NodeInfo* const> few = many.first(kFewNodes);
  // The hooks count: an allocation made on purpose is seen.
  const Counts probe = Count([] {
    int* p = new int(1);
    asm volatile("" : : "g"(p) : "memory");  // keeps the pair from being elided
    delete p;
  });
  ASSERT_EQ(probe.allocations, 1U);
  for (const auto& profile : profiles_) {
    SCOPED_TRACE(profile->name());
    policy::RequestState state;
    pipeline::FilterOutcome out;
    pipeline::ScoreScratch scratch;
    std::vector<int64_t> scores;
    // Warm: output vectors and scratch reach their size for 1,000 nodes, as
    // they do after a server thread's first request.
    ASSERT_TRUE(profile->RunFilters(args_.pod, many, state, out).ok());
    ASSERT_TRUE(profile->RunScorers(args_.pod, many, scratch, scores).ok());
    size_t rejected = out.failed.size() + out.unresolvable.size();
    const auto filter = [&](std::span<const model::NodeInfo* const> nodes) {
      state.Clear();
      return Count([&] { ASSERT_TRUE(profile->RunFilters(args_.pod, nodes, state, out).ok()); });
    };
    const auto score = [&](std::span<const model::NodeInfo* const> nodes) {
      return Count(
          [&] { ASSERT_TRUE(profile->RunScorers(args_.pod, nodes, scratch, scores).ok()); });
    };
    const Counts filter_few = filter(few);
    const Counts filter_many = filter(many);
    EXPECT_EQ(out.passed.size() + out.failed.size() + out.unresolvable.size(), kNodes);
    EXPECT_EQ(filter_many.allocations, filter_few.allocations);
    EXPECT_EQ(filter_many.locks, filter_few.locks);
    const Counts score_few = score(few);
    const Counts score_many = score(many);
    EXPECT_EQ(scores.size(), kNodes);
    EXPECT_EQ(score_many.allocations, score_few.allocations);
    EXPECT_EQ(score_many.locks, score_few.locks);
    // Per request, not per node: a handful at most (PreFilter / PreScore state).
    EXPECT_LE(filter_many.allocations, 8U);
    EXPECT_LE(score_many.allocations, 8U);
    EXPECT_EQ(filter_many.locks, 0U);
    EXPECT_EQ(score_many.locks, 0U);
    if (profile->name() != "resources") {
      EXPECT_GT(rejected, 0U) << "the nodes should exercise the rejection paths";
    }
    if (profile->name() == "gpushare" || profile->name() == "hami") {
      // Both kinds: no GPU at all / too small (unresolvable), full (failed).
      EXPECT_GT(out.failed.size(), 0U);
      EXPECT_GT(out.unresolvable.size(), 0U);
    }
  }
#endif
}

}  // namespace
}  // namespace schedext
