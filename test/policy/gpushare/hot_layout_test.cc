// GpuShare's compact per-node layout: DeviceVector (the per-device values held
// inline up to kInlineDevices, a heap vector beyond), model::NodeStates' inline
// slots, and the policy's decisions on nodes with more devices than the
// inline capacity, counted by the real accounting and looked up by interned
// ids as in production.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/builtin/gpushare/accounting.h"
#include "policy/builtin/gpushare/convention.h"
#include "policy/builtin/gpushare/device_vector.h"
#include "policy/builtin/gpushare/gpushare.h"
#include "schedext/model/name_table.h"
#include "schedext/model/node_state.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "testing/model_builders.h"

namespace schedext::policy {
namespace {

using gpushare::DeviceVector;
using gpushare::GpuAccounting;
using gpushare::GpuNodeState;
using gpushare::GpuShape;
using gpushare::GpuShareConvention;
using gpushare::GpuUsage;
using gpushare::kInlineDevices;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

constexpr std::string_view kGpuMem = "aliyun.com/gpu-mem";
constexpr std::string_view kGpuCount = "aliyun.com/gpu-count";
constexpr std::string_view kIndex = "ALIYUN_COM_GPU_MEM_IDX";

TEST(GpuShareHotLayoutTest, DeviceVectorGrowsPastInlineAndBack) {
  static_assert(kInlineDevices == 16);
  DeviceVector<int64_t> values;
  EXPECT_TRUE(values.empty());
  std::vector<int64_t> expect;
  for (int64_t i = 0; i < 20; ++i) {
    values.push_back(i * 10);
    expect.push_back(i * 10);
    ASSERT_EQ(values, expect) << "after " << i + 1 << " values";
  }
  EXPECT_EQ(values.size(), 20U);
  EXPECT_EQ(values.back(), 190);
  values[17] = 7;
  expect[17] = 7;
  const DeviceVector<int64_t> copy = values;  // a copy owns its values
  values[18] = 1;
  EXPECT_EQ(copy[18], 180);
  EXPECT_EQ(copy, expect);
  // Back under the inline capacity: the first values stay, nothing else.
  values.resize(3);
  EXPECT_EQ(values, (std::vector<int64_t>{0, 10, 20}));
  values.resize(5, 4);
  EXPECT_EQ(values, (std::vector<int64_t>{0, 10, 20, 4, 4}));
  values.pop_back();
  EXPECT_EQ(values, (std::vector<int64_t>{0, 10, 20, 4}));
  // Grown again across the boundary from a shrunk vector: the new values are
  // the given one, not what was there before.
  values.resize(18);
  EXPECT_EQ(values[16], 0);
  EXPECT_EQ(values[17], 0);
  EXPECT_EQ(values[3], 4);
  values.assign(17, 2);
  EXPECT_EQ(values, std::vector<int64_t>(17, 2));
  values.clear();
  EXPECT_TRUE(values.empty());
  EXPECT_EQ(values, DeviceVector<int64_t>{});
  // A vector of more values than the inline capacity compares by value.
  EXPECT_EQ(DeviceVector<int64_t>(std::vector<int64_t>(30, 1)), std::vector<int64_t>(30, 1));
  EXPECT_FALSE(DeviceVector<int64_t>(std::vector<int64_t>(30, 1)) == std::vector<int64_t>(29, 1));
}

// A state of its own type, to tell slots apart.
class Marker final : public model::NodeState {
 public:
  explicit Marker(int v) : value(v) {}
  int value;
};

int ValueAt(const model::NodeStates& states, size_t slot) {
  const auto* marker = static_cast<const Marker*>(states.Get(slot));
  return marker != nullptr ? marker->value : -1;
}

TEST(GpuShareHotLayoutTest, NodeStatesInlineAndOverflowSlots) {
  static_assert(model::NodeStates::kInlineSlots == 2);
  model::NodeStates states;
  EXPECT_TRUE(states.empty());
  EXPECT_EQ(states.Get(0), nullptr);
  EXPECT_EQ(states.Get(9), nullptr);
  states.Set(1, std::make_shared<Marker>(1));
  EXPECT_EQ(states.size(), 2U);
  EXPECT_EQ(ValueAt(states, 0), -1);
  EXPECT_EQ(ValueAt(states, 1), 1);
  states.Set(4, std::make_shared<Marker>(4));  // past the inline slots
  EXPECT_EQ(states.size(), 5U);
  EXPECT_EQ(ValueAt(states, 3), -1);
  EXPECT_EQ(ValueAt(states, 4), 4);
  EXPECT_EQ(static_cast<const Marker*>(states.GetShared(4).get())->value, 4);
  const model::NodeStates copy = states;
  states.Set(4, nullptr);  // the trailing slots go
  EXPECT_EQ(states.size(), 2U);
  EXPECT_EQ(ValueAt(copy, 4), 4);
  EXPECT_EQ(copy.size(), 5U);
  states.Set(7, nullptr);  // clearing an absent slot is nothing
  EXPECT_EQ(states.size(), 2U);
  states.Set(1, nullptr);
  EXPECT_TRUE(states.empty());
  EXPECT_EQ(states.GetShared(1), nullptr);
}

// A pod bound with `memory` GPU memory on `device`.
model::PodInfo GpuPodOn(TestArena& arena, int64_t memory, int device) {
  return PodBuilder(arena)
      .Name("p")
      .Container({}, {{kGpuMem, memory}})
      .Annotation(kIndex, std::to_string(device))
      .Build();
}

std::shared_ptr<const model::NodeState> Add(const GpuAccounting& accounting,
                                            std::shared_ptr<const model::NodeState> state,
                                            const model::PodInfo& pod, int sign) {
  return accounting.AddPod("big", std::move(state), pod, sign);
}

TEST(GpuShareHotLayoutTest, AccountingCountsDevicesBeyondInline) {
  const GpuAccounting accounting{GpuShareConvention{}};
  TestArena arena;
  const model::PodInfo on3 = GpuPodOn(arena, 2, 3);
  const model::PodInfo on18 = GpuPodOn(arena, 5, 18);
  const model::PodInfo on19 = GpuPodOn(arena, 7, 19);
  std::shared_ptr<const model::NodeState> state = Add(accounting, nullptr, on3, +1);
  state = Add(accounting, state, on19, +1);
  state = Add(accounting, state, on18, +1);
  state = Add(accounting, state, on18, +1);
  const GpuUsage& gpu = static_cast<const GpuNodeState&>(*state).gpu;
  std::vector<int64_t> used(20, 0);
  used[3] = 2;
  used[18] = 10;
  used[19] = 7;
  std::vector<int32_t> pods(20, 0);
  pods[3] = 1;
  pods[18] = 2;
  pods[19] = 1;
  EXPECT_EQ(gpu.used, used);
  EXPECT_EQ(gpu.pods, pods);
  EXPECT_EQ(gpu.UsedOn(19), 7);
  EXPECT_EQ(gpu.PodsOn(18), 2);

  // Recorded and replayed as the vectors were.
  const std::string encoded = accounting.EncodeState(*state);
  EXPECT_EQ(nlohmann::json::parse(encoded),
            (nlohmann::json{{"used", used}, {"pods", pods}, {"unassigned", 0}, {"unhealthy", 0}}));
  StatusOr<std::shared_ptr<const model::NodeState>> decoded = accounting.DecodeState(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(static_cast<const GpuNodeState&>(**decoded).gpu.used, used);
  EXPECT_EQ(static_cast<const GpuNodeState&>(**decoded).gpu.pods, pods);

  // The pods beyond the inline devices leave: back to what counting the one
  // pod on device 3 gives.
  state = Add(accounting, state, on19, -1);
  state = Add(accounting, state, on18, -1);
  state = Add(accounting, state, on18, -1);
  const GpuUsage& after = static_cast<const GpuNodeState&>(*state).gpu;
  const std::shared_ptr<const model::NodeState> recounted = Add(accounting, nullptr, on3, +1);
  const GpuUsage& fresh = static_cast<const GpuNodeState&>(*recounted).gpu;
  EXPECT_EQ(after.used, fresh.used);
  EXPECT_EQ(after.pods, fresh.pods);
  EXPECT_EQ(after.used, (std::vector<int64_t>{0, 0, 0, 2}));
  EXPECT_EQ(accounting.EncodeState(*state),
            R"({"pods":[0,0,0,1],"unassigned":0,"unhealthy":0,"used":[0,0,0,2]})");
}

// GpuShare built the way Profile::Build builds it (a handle of its own, so
// its state is slot 0, and a frozen name table the node's capacity is tagged
// with, so the shape is read by id).
class BigNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string_view scoring : {"binpack", "spread"}) {
      PolicyContext context;
      context.handle = &host_;
      context.names = &names_;
      StatusOr<std::unique_ptr<Policy>> policy =
          NewGpuShare(nlohmann::json{{"scoring", scoring}}, context);
      ASSERT_TRUE(policy.ok()) << policy.status().ToString();
      (scoring == "binpack" ? binpack_ : spread_) = std::move(*policy);
    }
    names_.Freeze();
  }

  // 20 devices of 8 GiB; devices 0-17 full, 18 holds 6 and 19 holds 3 (free
  // 2 and 5), counted by the accounting from bound pods; `unhealthy` set on
  // the state as the unhealthy ConfigMap would.
  model::NodeInfo BigNode(uint64_t unhealthy) {
    const GpuAccounting accounting{GpuShareConvention{}};
    std::shared_ptr<const model::NodeState> state;
    for (int device = 0; device < 18; ++device) {
      state = Add(accounting, state, GpuPodOn(arena_, 8, device), +1);
    }
    state = Add(accounting, state, GpuPodOn(arena_, 6, 18), +1);
    state = Add(accounting, state, GpuPodOn(arena_, 3, 19), +1);
    auto with_mask = std::make_shared<GpuNodeState>();
    with_mask->gpu = static_cast<const GpuNodeState&>(*state).gpu;
    with_mask->gpu.unhealthy = unhealthy;

    model::NodeInfo node = NodeBuilder(arena_)
                               .Name("big")
                               .Capacity("cpu", 64000)
                               .Capacity("hugepages-2Mi", 0)
                               .Capacity(kGpuCount, 20)
                               .Capacity(kGpuMem, 160)
                               .Usage(20, {})
                               .Build();
    node.capacity.AssignIds(names_);
    model::NodeUsage usage = *node.usage;
    usage.states.Set(0, std::move(with_mask));
    node.usage = arena_.Keep(usage);
    return node;
  }

  std::pair<Verdict::Code, std::string> Filter(const model::PodInfo& pod,
                                               const model::NodeInfo& node) {
    RequestState state;
    EXPECT_TRUE(binpack_->AsFilter()->PreFilter(state, pod).ok());
    const Verdict verdict = binpack_->AsFilter()->Filter(state, pod, node);
    return {verdict.code, std::string(verdict.reason)};
  }

  int64_t Score(const Policy& policy, const model::PodInfo& pod, const model::NodeInfo& node) {
    RequestState state;
    const model::NodeInfo* nodes[] = {&node};
    EXPECT_TRUE(policy.AsScorer()->PreScore(state, pod, nodes).ok());
    return policy.AsScorer()->Score(state, pod, node);
  }

  model::PodInfo Request(int64_t memory) {
    return PodBuilder(arena_).Name("new").Container({}, {{kGpuMem, memory}}).Build();
  }

  PolicyHost host_;
  model::NameTable names_;
  TestArena arena_;
  std::unique_ptr<Policy> binpack_;
  std::unique_ptr<Policy> spread_;
};

TEST_F(BigNodeTest, ShapeReadByIdAsByText) {
  const model::NodeInfo node = BigNode(0);
  ASSERT_EQ(node.capacity.ids_from(), &names_);
  const GpuShareConvention convention;
  const GpuShape by_id =
      gpushare::NodeGpuShape(node, gpushare::GpuResourceNames::Of(convention, &names_));
  const GpuShape by_text = gpushare::NodeGpuShape(node, convention);
  EXPECT_EQ(by_id.count, 20);
  EXPECT_EQ(by_id.device_memory, 8);
  EXPECT_EQ(by_id.count, by_text.count);
  EXPECT_EQ(by_id.total_memory, by_text.total_memory);
  EXPECT_EQ(by_id.device_memory, by_text.device_memory);
}

TEST_F(BigNodeTest, FilterAndScoreSeeDevicesBeyondInline) {
  const model::NodeInfo healthy = BigNode(0);
  // Best fit: 2 fills device 18, 5 fills device 19.
  EXPECT_EQ(Filter(Request(2), healthy), std::make_pair(Verdict::Code::kSuccess, std::string()));
  EXPECT_EQ(Filter(Request(5), healthy), std::make_pair(Verdict::Code::kSuccess, std::string()));
  EXPECT_EQ(Filter(Request(6), healthy),
            std::make_pair(Verdict::Code::kUnschedulable,
                           std::string("Insufficient aliyun.com/gpu-mem on any one GPU")));
  EXPECT_EQ(Score(*binpack_, Request(2), healthy), 100);
  EXPECT_EQ(Score(*binpack_, Request(4), healthy), 87);  // device 19: 100 × (8 − 1) / 8
  // spread: 100 × (Σ free − request) / Σ device memory = 100 × (7 − 4) / 160.
  EXPECT_EQ(Score(*spread_, Request(4), healthy), 1);
  EXPECT_EQ(Score(*spread_, Request(6), healthy), 0);

  // Device 19 unhealthy: only device 18's 2 GiB is free.
  const model::NodeInfo sick = BigNode(uint64_t{1} << 19);
  EXPECT_EQ(Filter(Request(2), sick), std::make_pair(Verdict::Code::kSuccess, std::string()));
  EXPECT_EQ(Filter(Request(3), sick),
            std::make_pair(Verdict::Code::kUnschedulable,
                           std::string("Insufficient aliyun.com/gpu-mem on any one GPU")));
  EXPECT_EQ(Score(*binpack_, Request(3), sick), 0);
  // Every device unhealthy: none could ever hold the request.
  const model::NodeInfo dead = BigNode((uint64_t{1} << 20) - 1);
  EXPECT_EQ(Filter(Request(1), dead),
            std::make_pair(Verdict::Code::kUnschedulableAndUnresolvable,
                           std::string("node(s) had no healthy GPU large enough for the pod's "
                                       "aliyun.com/gpu-mem")));
}

}  // namespace
}  // namespace schedext::policy
