// End to end, HAMi vGPU sharing: the real kube-scheduler with the shipped
// deploy/hami/kube-scheduler-config.yaml (schedulerName hami-scheduler,
// managedResources nvidia.com/gpu checked and HAMi's per-vGPU amounts left to
// schedext, bindVerb, node-cache mode) and the real schedext with the
// shipped deploy/hami/schedext.yaml, as its ServiceAccount with deploy/hami's
// RBAC, against the real kube-apiserver. Nodes carry the annotations and the
// nvidia.com/gpu capacity HAMi's device plugin writes.
//
// Asserted: where each vGPU pod lands; the exact HAMi annotations schedext
// writes before its Binding (what HAMi's device plugin allocates from); that
// every bind first took HAMi's node lock naming its pod, one pod at a time
// per node (a stand-in for the device plugin releases it once the pod is
// bound, as the plugin does after allocating); that no device holds more
// than its memory or split count; that a pod fitting no device stays Pending
// with FailedScheduling counting nodes per fixed reason; that deleting a pod
// frees its device for the pending one.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/hami_lock_releaser.h"
#include "control_plane/scheduler_e2e.h"

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;

constexpr std::string_view kHamiConfig = "deploy/hami/kube-scheduler-config.yaml";
constexpr std::string_view kHamiScheduler = "hami-scheduler";

class HamiE2eTest : public E2eSuite {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;
    options.rbac_manifests = {"deploy/base/namespace.yaml", "deploy/base/serviceaccount.yaml",
                              "deploy/base/rbac.yaml", "deploy/hami/rbac.yaml"};
    StartE2e(std::move(options), [] { return ReadSourceFile("deploy/hami/schedext.yaml"); });
  }

  void SetUp() override {
    E2eSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (cp().scheduler().pid <= 0) {
      ASSERT_NO_FATAL_FAILURE(StartScheduler(kHamiConfig, {}, "/hami"));
    }
  }

  // A node whose device plugin registered `devices` GPUs of `memory` MiB,
  // each split `splits` ways (text form), advertising devices × splits
  // nvidia.com/gpu as HAMi's plugin does; devices 0 means none registered.
  void AddVgpuNode(const std::string& suffix, int devices, int splits, int memory,
                   int count_capacity = 8) {
    ASSERT_NO_FATAL_FAILURE(AddNode(suffix, {{"cpu", "8"},
                                             {"memory", "32Gi"},
                                             {"nvidia.com/gpu", std::to_string(count_capacity)}}));
    if (devices == 0) return;
    std::string text;
    for (int d = 0; d < devices; ++d) {
      text += Uuid(suffix, d) + "," + std::to_string(splits) + "," + std::to_string(memory) +
              ",100,NVIDIA-A10,0,true," + std::to_string(d) + ",hami-core:";
    }
    json patch;
    patch["metadata"]["annotations"]["hami.io/node-nvidia-register"] = text;
    patch["metadata"]["annotations"]["hami.io/node-handshake"] = "Reported_2026-01-01 00:00:00";
    const auto r = cp().AdminRequest("PATCH", "/api/v1/nodes/" + Node(suffix), patch.dump());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    memory_ = memory;
    splits_ = splits;
  }
  std::string Uuid(const std::string& suffix, int device) const {
    return "GPU-" + ns_ + "-" + suffix + "-" + std::to_string(device);
  }

  void CreateVgpuPod(const std::string& name, int memory) {
    PodSpec p = Pod(name, {{"cpu", "100m"}});
    p.scheduler_name = std::string(kHamiScheduler);
    p.limits = {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(memory)}};
    ASSERT_NO_FATAL_FAILURE(Create(p));
  }

  // A vGPU pod of `priority_class` bound to `node` at creation with HAMi's
  // allocation of `memory` MiB on `node`'s device 0 (as HAMi's scheduler or
  // schedext left it), so that schedext's accounting counts it there.
  void CreateBoundVgpuPod(const std::string& name, const std::string& suffix, int memory,
                          const std::string& priority_class) {
    PodSpec p = Pod(name, {{"cpu", "100m"}});
    p.scheduler_name = std::string(kHamiScheduler);
    p.limits = {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(memory)}};
    p.node_name = Node(suffix);
    p.priority_class = priority_class;
    json pod = json::parse(PodJson(p));
    const std::string allocation = Uuid(suffix, 0) + ",NVIDIA," + std::to_string(memory) + ",0:;";
    pod["metadata"]["annotations"] = {{"hami.io/vgpu-devices-allocated", allocation},
                                      {"hami.io/vgpu-devices-to-allocate", allocation},
                                      {"hami.io/vgpu-node", Node(suffix)},
                                      {"hami.io/bind-phase", "success"}};
    const auto created = cp().Create("/api/v1/namespaces/" + ns_ + "/pods", pod.dump());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  // Waits for `names` to be bound and checks HAMi's annotations on each:
  // both allocation annotations name one registered device with the pod's
  // memory and 0 cores, the node is the bound one, bind phase allocating,
  // the times Unix seconds of this test. Returns pod -> device UUID.
  std::map<std::string, std::string> ExpectBound(const std::vector<std::string>& names,
                                                 int memory) {
    const auto bound = WaitForNodeNames(cp(), ns_, names, kScheduleTimeout);
    EXPECT_EQ(bound.size(), names.size()) << ::testing::PrintToString(bound);
    std::map<std::string, std::string> devices;
    for (const auto& [name, node] : bound) {
      const json a = GetPod(cp(), ns_, name)["metadata"].value("annotations", json::object());
      const std::string allocation = a.value("hami.io/vgpu-devices-to-allocate", "");
      EXPECT_EQ(a.value("hami.io/vgpu-devices-allocated", ""), allocation) << name;
      const size_t comma = allocation.find(',');
      const std::string uuid = allocation.substr(0, comma);
      EXPECT_EQ(allocation, uuid + ",NVIDIA," + std::to_string(memory) + ",0:;") << name;
      EXPECT_EQ(uuid.rfind("GPU-" + ns_ + "-", 0), 0U) << name << ": " << allocation;
      EXPECT_EQ(a.value("hami.io/vgpu-node", ""), node) << name;
      EXPECT_EQ(a.value("hami.io/bind-phase", ""), "allocating") << name;
      for (const char* key : {"hami.io/vgpu-time", "hami.io/bind-time"}) {
        const std::string t = a.value(key, "0");
        EXPECT_GE(std::stoll(t), started_s_) << name << " " << key;
        EXPECT_LE(std::stoll(t), NowS()) << name << " " << key;
      }
      devices[name] = uuid;
    }
    return devices;
  }

  // vGPUs and memory per device over this test's bound pods, from their
  // annotations: never more than a device holds.
  void ExpectNoDeviceOverAllocated() const {
    std::map<std::string, std::pair<int, int>> used;
    for (const json& pod : ListPods(cp(), ns_)) {
      if (pod["spec"].value("nodeName", "").empty()) continue;
      const std::string allocation =
          pod["metadata"].value("annotations", json::object()).value(
              "hami.io/vgpu-devices-allocated", "");
      if (allocation.empty()) continue;
      const size_t c1 = allocation.find(',');
      const size_t c2 = allocation.find(',', c1 + 1);
      const size_t c3 = allocation.find(',', c2 + 1);
      auto& u = used[allocation.substr(0, c1)];
      ++u.first;
      u.second += std::stoi(allocation.substr(c2 + 1, c3 - c2 - 1));
    }
    for (const auto& [uuid, u] : used) {
      EXPECT_LE(u.first, splits_) << uuid;
      EXPECT_LE(u.second, memory_) << uuid;
    }
  }

  static int64_t NowS() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  const int64_t started_s_ = NowS();
  int memory_ = 0;
  int splits_ = 0;
};

// Two 8000 MiB devices split 4 ways on one node, and a node advertising
// nvidia.com/gpu without any registered device. Four 3000 MiB pods fit two
// per device (memory, not splits, is the limit); the fifth fits nowhere and
// stays Pending, its event counting each node under one fixed reason;
// deleting a pod lets it in, on the freed device.
TEST_F(HamiE2eTest, VgpuPodsGetHamisAnnotationsAndNoDeviceOverflows) {
  ASSERT_NO_FATAL_FAILURE(AddVgpuNode("a", 2, 4, 8000));
  ASSERT_NO_FATAL_FAILURE(AddVgpuNode("bare", 0, 0, 0));
  LockReleaser plugin(cp(), Node("a"));
  const std::vector<std::string> first = {"p0", "p1", "p2", "p3"};
  for (const std::string& name : first) {
    ASSERT_NO_FATAL_FAILURE(CreateVgpuPod(name, 3000));
  }
  const auto devices = ExpectBound(first, 3000);
  ASSERT_EQ(devices.size(), first.size());
  std::map<std::string, int> per_device;
  for (const auto& [pod, uuid] : devices) ++per_device[uuid];
  EXPECT_EQ(per_device, (std::map<std::string, int>{{Uuid("a", 0), 2}, {Uuid("a", 1), 2}}));
  ExpectNoDeviceOverAllocated();
  const auto binders = Binders(first);
  for (const std::string& name : first) {
    EXPECT_EQ(binders.count(name) ? binders.at(name) : "(none)", cp().schedext_user()) << name;
  }

  ASSERT_NO_FATAL_FAILURE(CreateVgpuPod("late", 3000));
  const auto message = WaitUnschedulable(cp(), ns_, "late", kScheduleTimeout);
  ASSERT_TRUE(message.has_value()) << GetPod(cp(), ns_, "late").dump();
  Note("3000 MiB pod: " + *message);
  EXPECT_NE(message->find("1 Insufficient nvidia.com/gpumem"), std::string::npos) << *message;
  EXPECT_NE(message->find("1 node(s) have no HAMi vGPU devices"), std::string::npos)
      << *message;

  const std::string freed = devices.at("p0");
  ASSERT_TRUE(cp().Delete("/api/v1/namespaces/" + ns_ + "/pods/p0").ok());
  const auto late = ExpectBound({"late"}, 3000);
  ASSERT_EQ(late.size(), 1U);
  EXPECT_EQ(late.at("late"), freed);
  ExpectNoDeviceOverAllocated();

  // Every bound pod held the node lock in turn (the releaser saw each one
  // holding it once bound), and the last lock is released.
  const auto released = [&] {
    const auto n = cp().AdminRequest("GET", "/api/v1/nodes/" + Node("a"));
    return n.ok() && json::parse(n->body, nullptr, false)["metadata"]
                         .value("annotations", json::object())
                         .count("hami.io/mutex.lock") == 0;
  };
  for (int i = 0; i < 100 && !released(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(released());
  std::vector<std::string> holders = plugin.holders();
  std::sort(holders.begin(), holders.end());
  EXPECT_EQ(holders, (std::vector<std::string>{"late", "p0", "p1", "p2", "p3"}));
  EXPECT_TRUE(plugin.errors().empty()) << ::testing::PrintToString(plugin.errors());
}

// Preemption. kube-scheduler counts nvidia.com/gpu (one device split 2 per
// node: 2) and proposes, on each full node, evicting the less important of
// its two vGPU pods; whether that makes room for 6,000 MiB is a question of
// device memory, which only schedext answers. On "room" the victim holds
// 7,000 MiB of the 10,000 (8,000 free once it goes), on "tight" 2,000 (3,000
// free): schedext keeps "room" with its victim and drops "tight", saying so
// in a SchedextPreemption event; the preemptor lands on "room".
TEST_F(HamiE2eTest, PreemptionKeepsOnlyNodesWhereTheVictimsDeviceMemoryMakesRoom) {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, int>>{{"hami-low", 100}, {"hami-mid", 200},
                                                {"hami-high", 1000}}) {
    const Status s = EnsurePriorityClass(cp(), name, value);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_NO_FATAL_FAILURE(AddVgpuNode("room", 1, 2, 10000, 2));
  ASSERT_NO_FATAL_FAILURE(AddVgpuNode("tight", 1, 2, 10000, 2));
  LockReleaser room_plugin(cp(), Node("room"));
  ASSERT_NO_FATAL_FAILURE(CreateBoundVgpuPod("low-room", "room", 7000, "hami-low"));
  ASSERT_NO_FATAL_FAILURE(CreateBoundVgpuPod("mid-room", "room", 2000, "hami-mid"));
  ASSERT_NO_FATAL_FAILURE(CreateBoundVgpuPod("low-tight", "tight", 2000, "hami-low"));
  ASSERT_NO_FATAL_FAILURE(CreateBoundVgpuPod("mid-tight", "tight", 7000, "hami-mid"));
  // schedext's cache counts all four before the preemptor comes.
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto [status, body] = HttpGet(schedext().port(), "/hami/inspect");
        return status == 200 && body.find("low-tight") != std::string::npos &&
               body.find("mid-room") != std::string::npos &&
               body.find("low-room") != std::string::npos &&
               body.find("mid-tight") != std::string::npos;
      },
      std::chrono::seconds(10)))
      << HttpGet(schedext().port(), "/hami/inspect").second;
  const std::string low_room_uid = GetPod(cp(), ns_, "low-room")["metadata"].value("uid", "");

  PodSpec high = Pod("high", {{"cpu", "100m"}});
  high.scheduler_name = std::string(kHamiScheduler);
  high.priority_class = "hami-high";
  high.limits = {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "6000"}};
  ASSERT_NO_FATAL_FAILURE(Create(high));
  const auto bound = WaitForNodeNames(cp(), ns_, {"high"}, kScheduleTimeout);
  ASSERT_EQ(bound.count("high") ? bound.at("high") : "", Node("room"))
      << GetPod(cp(), ns_, "high").dump();

  // The victim on "room" is gone (or going); every other pod is untouched.
  const json victim = GetPod(cp(), ns_, "low-room");
  EXPECT_TRUE(victim.is_null() || victim["metadata"].value("uid", "") != low_room_uid ||
              victim["metadata"].contains("deletionTimestamp"))
      << victim.dump();
  for (const char* kept : {"mid-room", "low-tight", "mid-tight"}) {
    const json pod = GetPod(cp(), ns_, kept);
    ASSERT_TRUE(pod.is_object()) << kept;
    EXPECT_FALSE(pod["metadata"].contains("deletionTimestamp")) << kept;
  }
  ExpectNoDeviceOverAllocated();

  // Why "tight" was dropped, on the preemptor.
  json event;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = cp().AdminRequest("GET", "/apis/events.k8s.io/v1/namespaces/" + ns_ +
                                              "/events?fieldSelector=reason%3DSchedextPreemption");
        if (!r.ok() || r->status != 200) return false;
        const json list = json::parse(r->body, nullptr, false);
        if (!list.is_object() || list.value("items", json::array()).empty()) return false;
        event = list["items"][0];
        return true;
      },
      std::chrono::seconds(10)));
  Note("SchedextPreemption: " + event.value("note", ""));
  EXPECT_EQ(event["regarding"].value("name", ""), "high");
  EXPECT_EQ(event.value("type", ""), "Normal");
  EXPECT_EQ(event.value("note", ""),
            "Preemption by profile hami: kept 1 of 2 candidate nodes. " + Node("tight") +
                ": dropped: HamiVgpu: Insufficient nvidia.com/gpumem (even after evicting all 1 "
                "proposed pod).")
      << event.dump();
}

}  // namespace
}  // namespace schedext::testing::e2e
