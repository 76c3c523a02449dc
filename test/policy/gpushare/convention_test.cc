// GpuShare's conventions (convention.h): the pod's request and device index,
// the node's device shape, unhealthy ConfigMaps (name and value), and best-fit
// placement.
#include "policy/builtin/gpushare/convention.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "testing/model_builders.h"

namespace schedext::model {
namespace {

using policy::gpushare::GpuDeviceIndex;
using policy::gpushare::GpuMemoryRequest;
using policy::gpushare::GpuPlacement;
using policy::gpushare::GpuShape;
using policy::gpushare::GpuShareConvention;
using policy::gpushare::GpuUsage;
using policy::gpushare::kMaxGpuDevices;
using policy::gpushare::NodeGpuShape;
using policy::gpushare::ParseUnhealthyDevices;
using policy::gpushare::PlaceOnGpu;
using policy::gpushare::UnhealthyConfigMapNode;

using ::schedext::test::NodeBuilder;
using ::schedext::test::PodBuilder;
using ::schedext::test::TestArena;

constexpr std::string_view kMem = "aliyun.com/gpu-mem";
constexpr std::string_view kCount = "aliyun.com/gpu-count";
constexpr std::string_view kIndex = "ALIYUN_COM_GPU_MEM_IDX";

TEST(GpuShareTest, MemoryRequestSumsLimitsOfRegularContainers) {
  const GpuShareConvention convention;
  TestArena arena;
  // 3 + 5 from the limits; the third container only requests (no limit), and
  // requests are not what the device plugin reads: 8.
  const PodInfo pod = PodBuilder(arena)
                          .Container({{"cpu", 100}}, {{kMem, 3}})
                          .Container({}, {{kMem, 5}, {"cpu", 200}})
                          .Container({{kMem, 4}})
                          .Build();
  EXPECT_EQ(GpuMemoryRequest(pod, convention), 8);

  const PodInfo requests_only = PodBuilder(arena).Container({{kMem, 4}}).Build();
  EXPECT_EQ(GpuMemoryRequest(requests_only, convention), 0);
  const PodInfo no_containers = PodBuilder(arena).Build();
  EXPECT_EQ(GpuMemoryRequest(no_containers, convention), 0);
  const PodInfo other_limit = PodBuilder(arena).Container({}, {{"nvidia.com/gpu", 1}}).Build();
  EXPECT_EQ(GpuMemoryRequest(other_limit, convention), 0);

  // The resource name is the convention's.
  GpuShareConvention custom;
  custom.memory_resource = "example.com/vram";
  const PodInfo custom_pod = PodBuilder(arena)
                                 .Container({}, {{"example.com/vram", 6}})
                                 .Container({}, {{kMem, 2}})
                                 .Build();
  EXPECT_EQ(GpuMemoryRequest(custom_pod, custom), 6);
}

TEST(GpuShareTest, DeviceIndexIsADecimalIndexInRange) {
  struct Case {
    std::optional<std::string> annotation;  // nullopt: absent
    std::optional<int> index;
  };
  const std::vector<Case> cases = {
      {"0", 0},
      {"3", 3},
      {"+2", 2},  // strconv.Atoi accepts a plus sign
      {"63", 63},
      {"-1", std::nullopt},
      {"x", std::nullopt},
      {"1x", std::nullopt},
      {"64", std::nullopt},  // past kMaxGpuDevices
      {"", std::nullopt},
      {"+", std::nullopt},
      {std::nullopt, std::nullopt},
  };
  const GpuShareConvention convention;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.annotation.value_or("<absent>"));
    TestArena arena;
    PodBuilder builder(arena);
    builder.Container({}, {{kMem, 1}});
    if (c.annotation.has_value()) {
      builder.Annotation(kIndex, *c.annotation);
    }
    EXPECT_EQ(GpuDeviceIndex(builder.Build(), convention), c.index);
  }
  // The annotation name is the convention's.
  GpuShareConvention custom;
  custom.index_annotation = "gpu-index";
  TestArena arena;
  const PodInfo pod = PodBuilder(arena).Annotation("gpu-index", "5").Annotation(kIndex, "1").Build();
  EXPECT_EQ(GpuDeviceIndex(pod, custom), 5);
  EXPECT_EQ(GpuDeviceIndex(pod, convention), 1);
}

TEST(GpuShareTest, NodeShapeDividesMemoryByCount) {
  struct Case {
    std::string name;
    std::optional<int64_t> count;   // capacity[gpu-count]; nullopt: absent
    std::optional<int64_t> memory;  // capacity[gpu-mem]
    int expect_count;
    int64_t expect_total;
    int64_t expect_device;
    bool has_gpus;
  };
  const std::vector<Case> cases = {
      // 50 / 4 = 12 (integer division, as the plugin computes it).
      {"integer division", 4, 50, 4, 50, 12, true},
      {"exact", 2, 32, 2, 32, 16, true},
      {"count zero", 0, 32, 0, 32, 0, false},
      {"no gpu resources", std::nullopt, std::nullopt, 0, 0, 0, false},
      // 100 devices clamped to 64: 128 / 64 = 2.
      {"count clamped", 100, 128, 64, 128, 2, true},
      // 3 / 4 = 0: devices with no memory hold nothing.
      {"less memory than devices", 4, 3, 4, 3, 0, false},
      {"negative count", -2, 32, 0, 32, 0, false},
  };
  const GpuShareConvention convention;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TestArena arena;
    NodeBuilder builder(arena);
    builder.Name("n1");
    if (c.count.has_value()) {
      builder.Capacity(kCount, *c.count);
    }
    if (c.memory.has_value()) {
      builder.Capacity(kMem, *c.memory);
    }
    const GpuShape shape = NodeGpuShape(builder.Build(), convention);
    EXPECT_EQ(shape.count, c.expect_count);
    EXPECT_EQ(shape.total_memory, c.expect_total);
    EXPECT_EQ(shape.device_memory, c.expect_device);
    EXPECT_EQ(shape.has_gpus(), c.has_gpus);
  }
}

TEST(GpuShareTest, NodeShapeReadsCapacityNotAllocatable) {
  const GpuShareConvention convention;
  TestArena arena;
  const NodeInfo node =
      NodeBuilder(arena).Name("n1").Allocatable(kCount, 2).Allocatable(kMem, 16).Build();
  EXPECT_FALSE(NodeGpuShape(node, convention).has_gpus());
}

TEST(GpuShareTest, ParseUnhealthyDevices) {
  struct Case {
    std::string text;
    uint64_t mask;
    int invalid;
  };
  const std::vector<Case> cases = {
      // 0 and 2 are devices; "x" and "99" are not; empty entries are skipped.
      {" 0, 2 ,x,99,,", 0b101, 2},
      {"", 0, 0},
      {",,", 0, 0},
      {"1", 0b10, 0},
      {"\t3\t,1", 0b1010, 0},
      {"63", uint64_t{1} << 63, 0},
      {"64,-1", 0, 2},
      {"1,1", 0b10, 0},
      {"1 2", 0, 1},  // one entry, not two
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("\"" + c.text + "\"");
    int invalid = -1;
    EXPECT_EQ(ParseUnhealthyDevices(c.text, &invalid), c.mask);
    EXPECT_EQ(invalid, c.invalid);
    EXPECT_EQ(ParseUnhealthyDevices(c.text), c.mask);  // the count is optional
  }
}

TEST(GpuShareTest, UnhealthyConfigMapNode) {
  struct Case {
    std::string namespace_name;
    std::string name;
    std::optional<std::string> node;
  };
  const std::vector<Case> cases = {
      {"kube-system", "unhealthy-gpu-n1", "n1"},
      {"kube-system", "unhealthy-gpu-unhealthy-gpu-n1", "unhealthy-gpu-n1"},
      {"default", "unhealthy-gpu-n1", std::nullopt},      // other namespace
      {"kube-system", "unhealthy-gpu-", std::nullopt},    // nothing after the prefix
      {"kube-system", "healthy-gpu-n1", std::nullopt},    // other prefix
      {"kube-system", "unhealthy-gpu", std::nullopt},     // shorter than the prefix
      {"kube-system", "Unhealthy-gpu-n1", std::nullopt},  // case matters
  };
  const GpuShareConvention convention;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.namespace_name + "/" + c.name);
    const std::optional<std::string_view> node =
        UnhealthyConfigMapNode(c.namespace_name, c.name, convention);
    ASSERT_EQ(node.has_value(), c.node.has_value());
    if (node.has_value()) {
      EXPECT_EQ(*node, *c.node);
    }
  }
  GpuShareConvention custom;
  custom.unhealthy_namespace = "gpu";
  custom.unhealthy_prefix = "bad-";
  EXPECT_EQ(UnhealthyConfigMapNode("gpu", "bad-n7", custom), std::optional<std::string_view>("n7"));
  EXPECT_EQ(UnhealthyConfigMapNode("kube-system", "unhealthy-gpu-n1", custom), std::nullopt);
}

TEST(GpuShareTest, PlaceOnGpuIsBestFit) {
  struct Case {
    std::string name;
    GpuShape shape;
    std::optional<GpuUsage> usage;  // nullopt: PlaceOnGpu gets nullptr
    int64_t request;
    int device;
    int64_t free_after;
    int64_t largest_free;
    bool could_fit;
  };
  // Four devices of 32 / 4 = 8.
  const GpuShape four{4, 32, 8};
  const std::vector<Case> cases = {
      // free = 8 − used = [6, 3, 8, 2]; 3 fits on 0, 1, 2; device 1 leaves 0.
      {"best fit", four, GpuUsage{{2, 5, 0, 6}, {1, 1, 0, 1}, 0, 0}, 3, 1, 0, 8, true},
      // free = [8, 3, 3, 8]; devices 1 and 2 both leave 0: the lower wins.
      {"ties to lowest index", four, GpuUsage{{0, 5, 5, 0}, {0, 1, 1, 0}, 0, 0}, 3, 1, 0, 8, true},
      // All free 8: device 0 leaves 8 − 2 = 6.
      {"empty devices tie", four, GpuUsage{}, 2, 0, 6, 8, true},
      // free = [6, 3, 8, 2] but device 1 is unhealthy: next best is 0 (6 − 3 = 3).
      {"unhealthy skipped", four, GpuUsage{{2, 5, 0, 6}, {1, 1, 0, 1}, 0, 0b0010}, 3, 0, 3, 8,
       true},
      // Device 2 (free 8) unhealthy: largest_free is the healthy maximum, 6.
      {"unhealthy not in largest_free", four, GpuUsage{{2, 5, 0, 6}, {1, 1, 0, 1}, 0, 0b0100}, 3,
       1, 0, 6, true},
      // used 12 > 8 on device 0: free max(0, 8 − 12) = 0, not −4; device 1 has 8 − 7 = 1.
      {"over-committed floored at 0", GpuShape{2, 16, 8}, GpuUsage{{12, 7}, {2, 1}, 0, 0}, 1, 1, 0,
       1, true},
      // Every device full or over: nothing now, but an empty device would hold 1.
      {"all over-committed", GpuShape{2, 16, 8}, GpuUsage{{12, 9}, {2, 2}, 0, 0}, 1, -1, 0, 0,
       true},
      // free = [2, 2, 2, 2]: 4 fits nowhere now; 8 ≥ 4 when emptied.
      {"no room now", four, GpuUsage{{6, 6, 6, 6}, {1, 1, 1, 1}, 0, 0}, 4, -1, 0, 2, true},
      // 9 > 8 on every device: could never fit.
      {"every device too small", four, GpuUsage{}, 9, -1, 0, 8, false},
      // Every device unhealthy: no healthy device at all.
      {"all unhealthy", four, GpuUsage{{}, {}, 0, 0b1111}, 1, -1, 0, 0, false},
      // Unhealthy devices outside the shape's count change nothing: 8 − 1 = 7.
      {"unhealthy beyond count", GpuShape{1, 8, 8}, GpuUsage{{}, {}, 0, 0b1110}, 1, 0, 7, 8, true},
      // No usage: all devices empty, device 0 leaves 8 − 8 = 0.
      {"null usage", four, std::nullopt, 8, 0, 0, 8, true},
      // used sized to the highest index seen: device 1 is empty, 8 − 5 = 3.
      {"usage shorter than count", GpuShape{2, 16, 8}, GpuUsage{{8}, {1}, 0, 0}, 5, 1, 3, 8, true},
      // Unassigned memory is on no device: it does not reduce any device's free.
      {"unassigned ignored", GpuShape{1, 8, 8}, GpuUsage{{}, {}, 100, 0}, 8, 0, 0, 8, true},
      {"no devices", GpuShape{0, 0, 0}, GpuUsage{}, 1, -1, 0, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const GpuPlacement placement =
        PlaceOnGpu(c.shape, c.usage.has_value() ? &*c.usage : nullptr, c.request);
    EXPECT_EQ(placement.device, c.device);
    EXPECT_EQ(placement.free_after, c.free_after);
    EXPECT_EQ(placement.largest_free, c.largest_free);
    EXPECT_EQ(placement.could_fit, c.could_fit);
  }
}

TEST(GpuShareTest, GpuUsageAccessorsOutOfRange) {
  const GpuUsage usage{{4, 0, 2}, {1, 0, 1}, 0, uint64_t{1} << 63};
  EXPECT_EQ(usage.UsedOn(2), 2);
  EXPECT_EQ(usage.UsedOn(3), 0);
  EXPECT_EQ(usage.UsedOn(-1), 0);
  EXPECT_EQ(usage.PodsOn(0), 1);
  EXPECT_EQ(usage.PodsOn(7), 0);
  EXPECT_TRUE(usage.Unhealthy(63));
  EXPECT_FALSE(usage.Unhealthy(64));
  EXPECT_FALSE(usage.Unhealthy(-1));
  EXPECT_FALSE(usage.Unhealthy(0));
}

}  // namespace
}  // namespace schedext::model
