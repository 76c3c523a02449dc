// The recorded kube-scheduler v1.26.7 request bodies (protocol doc §6.1, §7
// item 37) decode with the right message type and the right content, and the
// full-mode node spans echo back byte for byte. nlohmann/json serves as an
// independent reference parser.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/wire/decoder.h"
#include "schedext/wire/encoder.h"
#include "wire/recorded_bodies.h"

namespace schedext::wire {
namespace {

namespace fs = std::filesystem;
using recorded::Bodies;
using recorded::CheckCompactItemsTail;
using recorded::CheckFullModeEcho;
using recorded::ReadFile;
using recorded::VerbAndNumber;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

const fs::path kFixtureRoot = fs::path(SCHEDEXT_TESTDATA_DIR) / "kube-scheduler-1.26";
const fs::path kFullDir = kFixtureRoot / "nodecache-false";
const fs::path kNamesDir = kFixtureRoot / "nodecache-true";
constexpr int64_t kMi = 1024 * 1024;

// What §6.1 says about request n of filter / prioritize / bind.
struct Step {
  std::string pod;
  std::vector<std::string> nodes;  // filter / prioritize, any order
};
const std::map<int, Step>& Sequence() {
  static const std::map<int, Step> steps = {
      {1, {"web-1", {"lab-cpu-1", "lab-cpu-2"}}},
      {2, {"gpu-infer-1", {"lab-gpu-1", "lab-gpu-2"}}},
      {3, {"node-agent-1", {"lab-cp-1", "lab-cpu-1", "lab-cpu-2", "lab-gpu-1", "lab-gpu-2"}}},
      {4, {"api-zone-a", {"lab-cpu-1", "lab-cpu-2", "lab-gpu-1", "lab-gpu-2"}}},
      {5, {"batch-low-1", {"lab-gpu-1", "lab-gpu-2"}}},
      {6, {"batch-low-2", {"lab-gpu-1", "lab-gpu-2"}}},
      {7, {"batch-low-3", {"lab-gpu-1", "lab-gpu-2"}}},
      {8, {"batch-low-4", {"lab-gpu-1"}}},
      {9, {"batch-low-5", {"lab-gpu-1"}}},
      {10, {"batch-low-6", {"lab-gpu-1"}}},
      {11, {"train-high", {"lab-gpu-2"}}},
  };
  return steps;
}

class FixturesTest : public recorded::BodyDecodingTest {};

TEST_F(FixturesTest, EveryBodyDecodesWithItsMessageType) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    const bool full = dir == kFullDir;
    const std::vector<fs::path> bodies = Bodies(dir);
    ASSERT_EQ(bodies.size(), 30u) << dir;
    int filters = 0;
    int prioritizes = 0;
    int binds = 0;
    int preempts = 0;
    for (const fs::path& path : bodies) {
      SCOPED_TRACE(path.string());
      const auto [verb, number] = VerbAndNumber(path);
      body_ = ReadFile(path);
      const nlohmann::json reference = nlohmann::json::parse(body_);
      buffer_ = RequestBuffer::CopyOf(body_);
      if (verb == "filter" || verb == "prioritize") {
        (verb == "filter" ? filters : prioritizes)++;
        const Status status = decoder_.DecodeExtenderArgs(buffer_, args_);
        ASSERT_TRUE(status.ok()) << status.message();
        ASSERT_TRUE(args_.has_pod);
        EXPECT_EQ(args_.pod.name, Sequence().at(number).pod);
        EXPECT_EQ(args_.pod.name, reference["Pod"]["metadata"]["name"].get<std::string>());
        EXPECT_EQ(args_.pod.uid, reference["Pod"]["metadata"]["uid"].get<std::string>());
        EXPECT_THAT(args_.node_names, UnorderedElementsAreArray(Sequence().at(number).nodes));
        std::vector<std::string> reference_names;
        if (full) {
          ASSERT_EQ(args_.mode, NodeMode::kFullNodes);
          EXPECT_TRUE(reference["NodeNames"].is_null());
          for (const nlohmann::json& item : reference["Nodes"]["items"]) {
            reference_names.push_back(item["metadata"]["name"].get<std::string>());
          }
          ASSERT_EQ(args_.nodes.size(), args_.node_names.size());
          for (size_t i = 0; i < args_.nodes.size(); ++i) {
            EXPECT_EQ(args_.nodes[i].name, args_.node_names[i]);
            EXPECT_FALSE(args_.nodes[i].raw_json.empty());
          }
        } else {
          ASSERT_EQ(args_.mode, NodeMode::kNodeNames);
          EXPECT_TRUE(reference["Nodes"].is_null());
          EXPECT_TRUE(args_.nodes.empty());
          reference_names = reference["NodeNames"].get<std::vector<std::string>>();
        }
        ASSERT_EQ(args_.node_names.size(), reference_names.size());
        for (size_t i = 0; i < reference_names.size(); ++i) {
          EXPECT_EQ(args_.node_names[i], reference_names[i]);  // request order
        }
      } else if (verb == "bind") {
        ++binds;
        const Status status = decoder_.DecodeBindingArgs(buffer_, binding_);
        ASSERT_TRUE(status.ok()) << status.message();
        EXPECT_EQ(binding_.pod_name, Sequence().at(number).pod);
        EXPECT_EQ(binding_.pod_namespace, "default");
        EXPECT_EQ(binding_.pod_uid, reference["PodUID"].get<std::string>());
        EXPECT_EQ(binding_.node, reference["Node"].get<std::string>());
      } else if (verb == "preempt") {
        ++preempts;
        const Status status = decoder_.DecodePreemptionArgs(buffer_, preemption_);
        ASSERT_TRUE(status.ok()) << status.message();
        EXPECT_TRUE(preemption_.has_pod);
        EXPECT_EQ(preemption_.pod.name, "train-high");
        EXPECT_EQ(preemption_.full_pods, full);
        EXPECT_EQ(preemption_.node_count, 2u);
      } else {
        ADD_FAILURE() << "unexpected fixture " << path;
      }
    }
    EXPECT_EQ(filters, 11);
    EXPECT_EQ(prioritizes, 7);
    EXPECT_EQ(binds, 11);
    EXPECT_EQ(preempts, 1);
  }
}

TEST_F(FixturesTest, FilterOneCarriesWebOneAndItsRequests) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    ASSERT_TRUE(Args(dir / "filter-1.json").ok());
    const model::PodInfo& pod = args_.pod;
    EXPECT_EQ(pod.name, "web-1");
    EXPECT_EQ(pod.namespace_name, "default");
    EXPECT_EQ(pod.priority, 0);
    EXPECT_EQ(pod.phase, "Pending");
    EXPECT_EQ(args_.node_names.size(), 2u);
    ASSERT_EQ(pod.containers.size(), 1u);
    EXPECT_EQ(pod.containers[0].requests.milli_cpu, 500);
    EXPECT_EQ(pod.containers[0].requests.memory, 512 * kMi);
    EXPECT_TRUE(pod.containers[0].has_cpu_request);
    EXPECT_TRUE(pod.containers[0].has_memory_request);
    EXPECT_EQ(pod.requests.milli_cpu, 500);
    EXPECT_EQ(pod.requests.memory, 512 * kMi);
    // The admission-added NoExecute tolerations.
    bool not_ready = false;
    for (const model::Toleration& t : pod.tolerations) {
      if (t.key == "node.kubernetes.io/not-ready") {
        not_ready = t.op == model::TolerationOperator::kExists &&
                    t.effect == model::TaintEffect::kNoExecute;
      }
    }
    EXPECT_TRUE(not_ready);
  }
}

TEST_F(FixturesTest, FilterThreeCarriesFiveFullNodes) {
  ASSERT_TRUE(Args(kFullDir / "filter-3.json").ok());
  EXPECT_EQ(args_.pod.name, "node-agent-1");
  ASSERT_EQ(args_.nodes.size(), 5u);
  EXPECT_THAT(args_.node_names,
              ElementsAre("lab-cp-1", "lab-cpu-2", "lab-cpu-1", "lab-gpu-2", "lab-gpu-1"));

  const model::NodeInfo& cp = args_.nodes[0];
  EXPECT_EQ(cp.uid, "be581342-97ad-45f9-92c8-559cabbf2db7");
  EXPECT_EQ(cp.labels.size(), 9u);
  EXPECT_EQ(cp.labels.Find("kubernetes.io/hostname"), "lab-cp-1");
  ASSERT_EQ(cp.taints.size(), 1u);
  EXPECT_EQ(cp.taints[0].key, "node-role.kubernetes.io/control-plane");
  EXPECT_EQ(cp.taints[0].effect, model::TaintEffect::kNoSchedule);
  EXPECT_FALSE(cp.unschedulable);
  EXPECT_EQ(cp.allocatable.milli_cpu, 3900);
  EXPECT_EQ(cp.allocatable.memory, 15784 * kMi);
  EXPECT_EQ(cp.allocatable.ephemeral_storage, 96625420948);
  EXPECT_EQ(cp.allocatable.pods, 110);
  EXPECT_EQ(cp.allocatable.Get("hugepages-2Mi"), 0);
  EXPECT_EQ(cp.capacity.ephemeral_storage, int64_t{104845292} * 1024);
  EXPECT_EQ(cp.conditions.size(), 4u);
  EXPECT_EQ(cp.ConditionStatus("Ready"), "True");
  EXPECT_EQ(cp.ConditionStatus("DiskPressure"), "False");

  const model::NodeInfo& gpu1 = args_.nodes[4];
  EXPECT_EQ(gpu1.name, "lab-gpu-1");
  EXPECT_EQ(gpu1.labels.size(), 12u);
  EXPECT_EQ(gpu1.allocatable.milli_cpu, 15900);
  EXPECT_EQ(gpu1.allocatable.memory, 64936 * kMi);
  EXPECT_EQ(gpu1.allocatable.Get("example.com/gpu-mem"), 320);
  EXPECT_EQ(args_.nodes[3].allocatable.Get("example.com/gpu-mem"), 160);
  ASSERT_EQ(gpu1.taints.size(), 1u);
  EXPECT_EQ(gpu1.taints[0].key, "example.com/gpu");
  EXPECT_EQ(gpu1.taints[0].value, "present");

  // node-agent-1 tolerates everything.
  bool tolerates_all = false;
  for (const model::Toleration& t : args_.pod.tolerations) {
    tolerates_all |= t.key.empty() && t.op == model::TolerationOperator::kExists;
  }
  EXPECT_TRUE(tolerates_all);
}

TEST_F(FixturesTest, GpuInferOneHasTwoContainersAndAnInitContainer) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    ASSERT_TRUE(Args(dir / "filter-2.json").ok());
    const model::PodInfo& pod = args_.pod;
    EXPECT_EQ(pod.name, "gpu-infer-1");
    ASSERT_EQ(pod.containers.size(), 2u);
    EXPECT_EQ(pod.containers[0].requests.milli_cpu, 2000);
    EXPECT_EQ(pod.containers[0].requests.memory, 8192 * kMi);
    EXPECT_EQ(pod.containers[0].requests.Get("example.com/gpu-mem"), 40);
    EXPECT_EQ(pod.containers[1].requests.milli_cpu, 100);
    EXPECT_EQ(pod.containers[1].requests.memory, 128 * kMi);
    ASSERT_EQ(pod.init_containers.size(), 1u);
    EXPECT_FALSE(pod.init_containers[0].restartable);
    EXPECT_EQ(pod.init_containers[0].requests.milli_cpu, 100);
    EXPECT_EQ(pod.init_containers[0].requests.memory, 64 * kMi);
    EXPECT_EQ(pod.requests.milli_cpu, 2100);
    EXPECT_EQ(pod.requests.Get("example.com/gpu-mem"), 40);
  }
}

TEST_F(FixturesTest, SingleNodeFiltersAndTheNominatedRetry) {
  for (const fs::path& dir : {kFullDir, kNamesDir}) {
    SCOPED_TRACE(dir.string());
    for (int n = 8; n <= 10; ++n) {
      ASSERT_TRUE(Args(dir / ("filter-" + std::to_string(n) + ".json")).ok());
      EXPECT_EQ(args_.pod.name, "batch-low-" + std::to_string(n - 4));
      EXPECT_THAT(args_.node_names, ElementsAre("lab-gpu-1"));
      EXPECT_EQ(args_.pod.priority, 1000);
    }
    ASSERT_TRUE(Args(dir / "filter-11.json").ok());
    const model::PodInfo& pod = args_.pod;
    EXPECT_EQ(pod.name, "train-high");
    EXPECT_EQ(pod.priority, 1000000);
    EXPECT_EQ(pod.priority_class_name, "lab-high");
    EXPECT_EQ(pod.preemption_policy, "PreemptLowerPriority");
    EXPECT_EQ(pod.nominated_node_name, "lab-gpu-2");
    EXPECT_THAT(args_.node_names, ElementsAre("lab-gpu-2"));
    EXPECT_EQ(pod.requests.milli_cpu, 2000);
    EXPECT_EQ(pod.requests.memory, 8192 * kMi);
    EXPECT_EQ(pod.requests.Get("example.com/gpu-mem"), 160);
  }
}

TEST_F(FixturesTest, PreemptionCarriesTwoCandidatesWithTwoVictimsEach) {
  ASSERT_TRUE(Preemption(kFullDir / "preempt-1.json").ok());
  EXPECT_EQ(preemption_.pod.name, "train-high");
  EXPECT_EQ(preemption_.pod.priority, 1000000);
  EXPECT_TRUE(preemption_.full_pods);
  ASSERT_EQ(preemption_.node_count, 2u);
  auto candidates = preemption_.candidates();
  EXPECT_EQ(candidates[0].node, "lab-gpu-1");
  EXPECT_EQ(candidates[1].node, "lab-gpu-2");
  ASSERT_EQ(candidates[0].pods.size(), 2u);
  ASSERT_EQ(candidates[1].pods.size(), 2u);
  EXPECT_EQ(candidates[0].pods[0].name, "batch-low-4");
  EXPECT_EQ(candidates[0].pods[0].uid, "059f94d6-5b7c-43af-b2d5-cb8dc63a4795");
  EXPECT_EQ(candidates[0].pods[0].priority, 1000);
  EXPECT_EQ(candidates[0].pods[0].node_name, "lab-gpu-1");
  EXPECT_EQ(candidates[0].pods[0].requests.Get("example.com/gpu-mem"), 80);
  EXPECT_EQ(candidates[0].pods[1].name, "batch-low-2");
  EXPECT_EQ(candidates[1].pods[0].name, "batch-low-3");
  EXPECT_EQ(candidates[1].pods[1].name, "batch-low-1");
  EXPECT_EQ(candidates[0].num_pdb_violations, 0);
  EXPECT_EQ(candidates[1].num_pdb_violations, 0);

  ASSERT_TRUE(Preemption(kNamesDir / "preempt-1.json").ok());
  EXPECT_EQ(preemption_.pod.priority, 1000000);
  EXPECT_FALSE(preemption_.full_pods);
  ASSERT_EQ(preemption_.node_count, 2u);
  candidates = preemption_.candidates();
  EXPECT_EQ(candidates[0].node, "lab-gpu-1");
  ASSERT_EQ(candidates[0].pods.size(), 2u);
  EXPECT_EQ(candidates[0].pods[0].uid, "3c7a2d30-8deb-436b-99ca-8482a81e1c88");
  EXPECT_EQ(candidates[0].pods[1].uid, "c8b1645f-3a0a-433a-9b56-4a73ed848520");
  EXPECT_EQ(candidates[0].pods[0].name, "");
  EXPECT_EQ(candidates[1].node, "lab-gpu-2");
  ASSERT_EQ(candidates[1].pods.size(), 2u);
  EXPECT_EQ(candidates[1].pods[0].uid, "015cd984-5d5f-47d3-85b0-3d2e449d5dc6");
  EXPECT_EQ(candidates[1].num_pdb_violations, 0);
}

TEST_F(FixturesTest, FullModeRawJsonEchoesByteForByte) {
  for (const fs::path& path : Bodies(kFullDir)) {
    const auto [verb, number] = VerbAndNumber(path);
    if (verb != "filter" && verb != "prioritize") {
      continue;
    }
    SCOPED_TRACE(path.string());
    ASSERT_TRUE(Args(path).ok());
    CheckFullModeEcho(body_, args_);
    CheckCompactItemsTail(body_, args_);
  }
}

TEST_F(FixturesTest, PrettyPrintedBodiesKeepExactSpans) {
  ASSERT_TRUE(Args(fs::path(SCHEDEXT_TESTDATA_DIR) / "wire" / "filter-3-pretty.json").ok());
  EXPECT_EQ(args_.pod.name, "node-agent-1");
  ASSERT_EQ(args_.nodes.size(), 5u);
  CheckFullModeEcho(body_, args_);
  // Each span runs from its '{' to its '}' inside the indented text: only
  // whitespace and ',' / ']' follow it.
  for (const model::NodeInfo& node : args_.nodes) {
    EXPECT_NE(node.raw_json.find('\n'), std::string_view::npos);
    const size_t end = static_cast<size_t>(node.raw_json.data() - buffer_.data()) + node.raw_json.size();
    const size_t next = body_.find_first_not_of(" \t\r\n", end);
    ASSERT_NE(next, std::string::npos);
    EXPECT_TRUE(body_[next] == ',' || body_[next] == ']') << body_[next];
  }

  ASSERT_TRUE(Preemption(fs::path(SCHEDEXT_TESTDATA_DIR) / "wire" / "preempt-1-pretty.json").ok());
  EXPECT_TRUE(preemption_.full_pods);
  ASSERT_EQ(preemption_.node_count, 2u);
  EXPECT_EQ(preemption_.candidates()[1].pods[1].name, "batch-low-1");
}

// Corrupting single bytes of real bodies never crashes the decoder: each
// variant either decodes (with well-formed spans) or is kInvalidArgument.
TEST_F(FixturesTest, SurvivesCorruptedBytes) {
  const std::string replacements("\"{}[]:,\\0 n\x00\xff", 14);
  for (const fs::path& path : {kFullDir / "filter-3.json", kFullDir / "preempt-1.json",
                               kNamesDir / "filter-11.json"}) {
    SCOPED_TRACE(path.string());
    const std::string original = ReadFile(path);
    const bool preempt = path.filename() == "preempt-1.json";
    int failures = 0;
    for (size_t position = 0; position < original.size(); position += 61) {
      for (char replacement : replacements) {
        std::string mutated = original;
        mutated[position] = replacement;
        buffer_ = RequestBuffer::CopyOf(mutated);
        const Status status = preempt ? decoder_.DecodePreemptionArgs(buffer_, preemption_)
                                      : decoder_.DecodeExtenderArgs(buffer_, args_);
        if (!status.ok()) {
          ASSERT_EQ(status.code(), StatusCode::kInvalidArgument) << position;
          ++failures;
          continue;
        }
        if (!preempt) {
          for (const model::NodeInfo& node : args_.nodes) {
            ASSERT_GE(node.raw_json.size(), 2u);
            ASSERT_EQ(node.raw_json.front(), '{');
            ASSERT_EQ(node.raw_json.back(), '}');
          }
        }
      }
    }
    EXPECT_GT(failures, 0);
  }
}

TEST_F(FixturesTest, NodeCacheBodiesAreNamesOnly) {
  for (const fs::path& path : Bodies(kNamesDir)) {
    const auto [verb, number] = VerbAndNumber(path);
    if (verb != "filter" && verb != "prioritize") {
      continue;
    }
    SCOPED_TRACE(path.string());
    ASSERT_TRUE(Args(path).ok());
    EXPECT_EQ(args_.mode, NodeMode::kNodeNames);
    EXPECT_TRUE(args_.nodes.empty());
    // Names point into the request or the parser: never empty.
    for (std::string_view name : args_.node_names) {
      EXPECT_THAT(std::string(name), ::testing::StartsWith("lab-"));
    }
  }
}

}  // namespace
}  // namespace schedext::wire
