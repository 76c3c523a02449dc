// End to end, GPU sharing: the real kube-scheduler with the shipped
// deploy/scheduler/kube-scheduler-config-gpushare.yaml (managedResources
// aliyun.com/gpu-mem, bindVerb, node-cache mode) and the real schedext with
// the shipped deploy/gpushare/schedext.yaml, as its ServiceAccount with
// deploy/gpushare's RBAC, against the real kube-apiserver. Nodes advertise
// aliyun.com/gpu-mem and aliyun.com/gpu-count as the device plugin would.
//
// Asserted: where each GPU pod lands and on which device; the five
// ALIYUN_COM_GPU_MEM_* annotations schedext writes before its Binding; that
// no device holds more than its memory; that a pod fitting the node's total
// but no single device stays Pending with schedext's FailedScheduling reason;
// that pods asking for no GPU memory never reach schedext.
#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/scheduler_e2e.h"

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;

constexpr std::string_view kGpuShareConfig = "deploy/scheduler/kube-scheduler-config-gpushare.yaml";
constexpr std::string_view kGpuMem = "aliyun.com/gpu-mem";
constexpr std::string_view kGpuCount = "aliyun.com/gpu-count";

// One bound GPU pod as the API server has it.
struct GpuPod {
  std::string name;
  std::string node;
  std::map<std::string, std::string> annotations;
};

class GpuShareE2eTest : public E2eSuite {
 protected:
  static void SetUpTestSuite() {
    StartE2e({}, [] { return ReadSourceFile("deploy/gpushare/schedext.yaml"); });
  }

  void SetUp() override {
    E2eSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // One scheduler for the suite: its configuration does not change.
    if (cp().scheduler().pid <= 0) {
      ASSERT_NO_FATAL_FAILURE(StartScheduler(kGpuShareConfig, {}, "/gpushare"));
    }
  }

  // A node with `devices` GPUs of `per_device` GiB (capacity = the total, as
  // the device plugin advertises it).
  void AddGpuNode(const std::string& suffix, int devices, int per_device) {
    ASSERT_NO_FATAL_FAILURE(
        AddNode(suffix, {{"cpu", "8"},
                         {"memory", "32Gi"},
                         {std::string(kGpuMem), std::to_string(devices * per_device)},
                         {std::string(kGpuCount), std::to_string(devices)}}));
    devices_[Node(suffix)] = {devices, per_device};
  }

  // A pod asking for `gib` GiB of GPU memory in its limits, as gpushare
  // users write it (the API server copies the limit into the request).
  void CreateGpuPod(const std::string& name, int gib) {
    PodSpec p = Pod(name, {{"cpu", "100m"}});
    p.limits = {{std::string(kGpuMem), std::to_string(gib)}};
    ASSERT_NO_FATAL_FAILURE(Create(p));
    requests_[name] = gib;
  }

  // Waits for `names` to be bound, then checks each one's annotations: the
  // device index is one of its node's, the pod and device memory are its
  // request and the node's memory per device, ASSIGNED is "false" (the device
  // plugin flips it), ASSUME_TIME a nanosecond time from this test.
  std::vector<GpuPod> ExpectBoundWithAnnotations(const std::vector<std::string>& names) {
    const auto bound = WaitForNodeNames(cp(), ns_, names, kScheduleTimeout);
    EXPECT_EQ(bound.size(), names.size()) << "bound: " << ::testing::PrintToString(bound);
    std::vector<GpuPod> out;
    for (const auto& [name, node] : bound) {
      const json pod = GetPod(cp(), ns_, name);
      GpuPod g{name, node, {}};
      const json annotations = pod["metadata"].value("annotations", json::object());
      for (const auto& [k, v] : annotations.items()) {
        if (k.rfind("ALIYUN_COM_GPU_MEM_", 0) == 0) g.annotations[k] = v.get<std::string>();
      }
      EXPECT_EQ(g.annotations.size(), 5u)
          << name << ": " << ::testing::PrintToString(g.annotations);
      const auto [count, per_device] = devices_.at(node);
      const int idx = std::stoi(g.annotations["ALIYUN_COM_GPU_MEM_IDX"]);
      EXPECT_GE(idx, 0) << name;
      EXPECT_LT(idx, count) << name;
      EXPECT_EQ(g.annotations["ALIYUN_COM_GPU_MEM_POD"], std::to_string(requests_.at(name)))
          << name;
      EXPECT_EQ(g.annotations["ALIYUN_COM_GPU_MEM_DEV"], std::to_string(per_device)) << name;
      EXPECT_EQ(g.annotations["ALIYUN_COM_GPU_MEM_ASSIGNED"], "false") << name;
      const std::string assume = g.annotations["ALIYUN_COM_GPU_MEM_ASSUME_TIME"];
      const int64_t assume_ns = assume.empty() ? 0 : std::stoll(assume);
      EXPECT_GE(assume_ns, started_ns_) << name << ": " << assume;
      EXPECT_LE(assume_ns, NowNs()) << name << ": " << assume;
      out.push_back(std::move(g));
    }
    return out;
  }

  // GPU memory taken per (node, device), from the annotations of every bound
  // pod of this test.
  std::map<std::pair<std::string, int>, int> DeviceUsage() const {
    std::map<std::pair<std::string, int>, int> used;
    for (const json& pod : ListPods(cp(), ns_)) {
      const std::string node = pod["spec"].value("nodeName", "");
      const json a = pod["metadata"].value("annotations", json::object());
      if (node.empty() || !a.contains("ALIYUN_COM_GPU_MEM_IDX")) continue;
      used[{node, std::stoi(a["ALIYUN_COM_GPU_MEM_IDX"].get<std::string>())}] +=
          std::stoi(a.value("ALIYUN_COM_GPU_MEM_POD", "0"));
    }
    return used;
  }

  void ExpectNoDeviceOverAllocated() {
    for (const auto& [device, gib] : DeviceUsage()) {
      EXPECT_LE(gib, devices_.at(device.first).second)
          << device.first << " GPU " << device.second << " holds " << gib << " GiB";
    }
    ExpectNothingOverAllocated();  // and the node totals kube-scheduler checks
  }

  void ExpectSchedextBound(const std::vector<GpuPod>& pods) {
    std::vector<std::string> names;
    for (const GpuPod& p : pods) names.push_back(p.name);
    const auto binders = Binders(names);
    for (const GpuPod& p : pods) {
      EXPECT_EQ(binders.count(p.name) ? binders.at(p.name) : "(none)", cp().schedext_user())
          << p.name;
    }
  }

  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  const int64_t started_ns_ = NowNs();
  std::map<std::string, std::pair<int, int>> devices_;  // node -> {count, GiB per device}
  std::map<std::string, int> requests_;                 // pod -> GiB
};

// Two nodes, six 8 GiB devices. Six 5 GiB pods can only go one per device
// (two would need 10); six 3 GiB pods then fill exactly the 3 GiB left on
// each: every device ends with exactly one of each, 8 of 8 GiB.
TEST_F(GpuShareE2eTest, GpuPodsLandOnDevicesWithoutOverAllocation) {
  ASSERT_NO_FATAL_FAILURE(AddGpuNode("g2", 2, 8));
  ASSERT_NO_FATAL_FAILURE(AddGpuNode("g4", 4, 8));
  std::vector<std::string> big;
  std::vector<std::string> small;
  for (int i = 0; i < 6; ++i) {
    big.push_back("big" + std::to_string(i));
    ASSERT_NO_FATAL_FAILURE(CreateGpuPod(big.back(), 5));
  }
  std::vector<GpuPod> placed = ExpectBoundWithAnnotations(big);
  ASSERT_EQ(placed.size(), big.size());
  std::set<std::pair<std::string, std::string>> devices_used;
  for (const GpuPod& p : placed) {
    devices_used.insert({p.node, p.annotations.at("ALIYUN_COM_GPU_MEM_IDX")});
  }
  EXPECT_EQ(devices_used.size(), 6u) << "two 5 GiB pods share an 8 GiB device";
  ExpectNoDeviceOverAllocated();

  for (int i = 0; i < 6; ++i) {
    small.push_back("small" + std::to_string(i));
    ASSERT_NO_FATAL_FAILURE(CreateGpuPod(small.back(), 3));
  }
  std::vector<GpuPod> placed_small = ExpectBoundWithAnnotations(small);
  ASSERT_EQ(placed_small.size(), small.size());
  const auto usage = DeviceUsage();
  EXPECT_EQ(usage.size(), 6u);
  for (const auto& [device, gib] : usage) {
    EXPECT_EQ(gib, 8) << device.first << " GPU " << device.second;
  }
  ExpectNoDeviceOverAllocated();
  placed.insert(placed.end(), placed_small.begin(), placed_small.end());
  ExpectSchedextBound(placed);
}

// One node, two 8 GiB devices, 5 GiB taken on each: 6 GiB free in total, so
// kube-scheduler's own fit (ignoredByScheduler: false) passes a 4 GiB pod,
// but no device has 4 GiB free: schedext keeps it Pending. Freeing a device
// lets it in, on that device.
TEST_F(GpuShareE2eTest, APodFittingNoSingleDeviceStaysPending) {
  ASSERT_NO_FATAL_FAILURE(AddGpuNode("g", 2, 8));
  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("a", 5));
  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("b", 5));
  const std::vector<GpuPod> first = ExpectBoundWithAnnotations({"a", "b"});
  ASSERT_EQ(first.size(), 2u);
  ASSERT_NE(first[0].annotations.at("ALIYUN_COM_GPU_MEM_IDX"),
            first[1].annotations.at("ALIYUN_COM_GPU_MEM_IDX"));

  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("c", 4));
  const auto message = WaitUnschedulable(cp(), ns_, "c", kScheduleTimeout);
  ASSERT_TRUE(message.has_value()) << GetPod(cp(), ns_, "c").dump();
  Note("4 GiB pod: " + *message);
  EXPECT_NE(message->find("1 Insufficient aliyun.com/gpu-mem on any one GPU"), std::string::npos)
      << *message;
  std::vector<std::string> events;
  EXPECT_TRUE(WaitFor([&] {
    events = FailedSchedulingEvents(cp(), ns_, "c");
    for (const std::string& e : events) {
      if (e.find("Insufficient aliyun.com/gpu-mem on any one GPU") != std::string::npos) {
        return true;
      }
    }
    return false;
  })) << ::testing::PrintToString(events);
  EXPECT_EQ(GetPod(cp(), ns_, "c")["spec"].value("nodeName", ""), "");
  ExpectNoDeviceOverAllocated();

  // Free the device of "a": "c" gets it.
  const std::string freed = first[0].name == "a"
                                ? first[0].annotations.at("ALIYUN_COM_GPU_MEM_IDX")
                                : first[1].annotations.at("ALIYUN_COM_GPU_MEM_IDX");
  ASSERT_TRUE(cp().Delete("/api/v1/namespaces/" + ns_ + "/pods/a").ok());
  requests_.erase("a");
  const std::vector<GpuPod> second = ExpectBoundWithAnnotations({"c"});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].annotations.at("ALIYUN_COM_GPU_MEM_IDX"), freed);
  ExpectNoDeviceOverAllocated();
  ExpectSchedextBound(second);
}

// managedResources: a pod of the same scheduler that asks for no GPU memory
// is placed and bound by kube-scheduler alone.
TEST_F(GpuShareE2eTest, PodsWithoutGpuMemoryBypassSchedext) {
  ASSERT_NO_FATAL_FAILURE(AddGpuNode("g", 1, 8));
  const int64_t filters_before = RequestCount(schedext().port(), "gpushare", "filter");
  const int64_t binds_before = RequestCount(schedext().port(), "gpushare", "bind");
  ASSERT_GE(filters_before, 0);
  ASSERT_NO_FATAL_FAILURE(Create(Pod("cpu-only", {{"cpu", "100m"}})));
  const auto bound = WaitForNodeNames(cp(), ns_, {"cpu-only"}, kScheduleTimeout);
  EXPECT_EQ(bound.count("cpu-only") ? bound.at("cpu-only") : "", Node("g"));
  EXPECT_EQ(Binders({"cpu-only"})["cpu-only"], "system:kube-scheduler");
  EXPECT_EQ(RequestCount(schedext().port(), "gpushare", "filter"), filters_before);
  EXPECT_EQ(RequestCount(schedext().port(), "gpushare", "bind"), binds_before);
  const json pod = GetPod(cp(), ns_, "cpu-only");
  EXPECT_FALSE(
      pod["metadata"].value("annotations", json::object()).contains("ALIYUN_COM_GPU_MEM_IDX"))
      << pod.dump();
}

}  // namespace
}  // namespace schedext::testing::e2e
