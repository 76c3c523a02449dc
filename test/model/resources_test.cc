#include "schedext/model/resources.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace schedext::model {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(ResourceListTest, GetAndSetWellKnownResources) {
  ResourceList list;
  list.Set("cpu", 1500);
  list.Set("memory", 1024);
  list.Set("ephemeral-storage", 2048);
  list.Set("pods", 110);
  EXPECT_EQ(list.milli_cpu, 1500);
  EXPECT_EQ(list.memory, 1024);
  EXPECT_EQ(list.ephemeral_storage, 2048);
  EXPECT_EQ(list.pods, 110);
  EXPECT_EQ(list.Get("cpu"), 1500);
  EXPECT_EQ(list.Get("memory"), 1024);
  EXPECT_EQ(list.Get("ephemeral-storage"), 2048);
  EXPECT_EQ(list.Get("pods"), 110);
  // The well-known names never land among the scalars.
  EXPECT_TRUE(list.scalars.empty());
}

TEST(ResourceListTest, GetAbsentIsZero) {
  ResourceList list;
  EXPECT_EQ(list.Get("cpu"), 0);
  EXPECT_EQ(list.Get("example.com/gpu"), 0);
  EXPECT_EQ(list.Get(""), 0);
}

TEST(ResourceListTest, ScalarsKeepInsertionOrderAndOneEntryPerName) {
  ResourceList list;
  list.Set("hugepages-2Mi", 4);
  list.Set("example.com/gpu", 2);
  list.Set("hugepages-2Mi", 8);  // replaces, does not append
  list.Add("example.com/gpu", 1);
  list.Add("example.com/fpga", 3);
  const std::vector<ScalarResource> want = {
      {"hugepages-2Mi", 8}, {"example.com/gpu", 3}, {"example.com/fpga", 3}};
  EXPECT_EQ(list.scalars, want);
  EXPECT_EQ(list.Get("hugepages-2Mi"), 8);
  EXPECT_EQ(list.Get("example.com/gpu"), 3);
  // Names are compared by content, not by pointer.
  const std::string name = "example.com/gpu";
  EXPECT_EQ(list.Get(std::string_view(name)), 3);
}

TEST(ResourceListTest, AddToAbsentNameCreatesOnlyForNonZero) {
  ResourceList list;
  list.Add("example.com/gpu", 0);
  EXPECT_TRUE(list.scalars.empty());
  list.Add("example.com/gpu", -2);
  EXPECT_EQ(list.Get("example.com/gpu"), -2);
  // Set records the name even with zero: the body named it.
  list.Set("example.com/fpga", 0);
  ASSERT_EQ(list.scalars.size(), 2u);
  EXPECT_EQ(list.scalars[1], (ScalarResource{"example.com/fpga", 0}));
}

TEST(ResourceListTest, AddSaturatesAtInt64Limits) {
  struct Case {
    std::string name;
    int64_t start;
    int64_t add;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {"cpu", kMax - 1, 5, kMax},
      {"memory", kMax, kMax, kMax},
      {"pods", kMin + 1, -5, kMin},
      {"ephemeral-storage", 10, -3, 7},
      {"example.com/gpu", kMax, 1, kMax},
      {"example.com/gpu", kMin, -1, kMin},
      {"example.com/gpu", kMax, kMin, -1},  // no overflow: plain sum
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + " " + std::to_string(c.start) + " + " + std::to_string(c.add));
    ResourceList list;
    list.Set(c.name, c.start);
    list.Add(c.name, c.add);
    EXPECT_EQ(list.Get(c.name), c.want);
  }
}

TEST(ResourceListTest, AddAllSumsEveryResource) {
  ResourceList a;
  a.Set("cpu", 100);
  a.Set("memory", 1000);
  a.Set("example.com/gpu", 1);
  ResourceList b;
  b.Set("cpu", 250);
  b.Set("pods", 1);
  b.Set("ephemeral-storage", 7);
  b.Set("hugepages-1Gi", 2);
  b.Set("example.com/gpu", 3);
  a.AddAll(b);
  EXPECT_EQ(a.milli_cpu, 350);  // 100 + 250
  EXPECT_EQ(a.memory, 1000);
  EXPECT_EQ(a.ephemeral_storage, 7);
  EXPECT_EQ(a.pods, 1);
  const std::vector<ScalarResource> want = {{"example.com/gpu", 4}, {"hugepages-1Gi", 2}};
  EXPECT_EQ(a.scalars, want);
}

TEST(ResourceListTest, AddAllSaturates) {
  ResourceList a;
  a.Set("memory", kMax - 10);
  a.Set("example.com/gpu", kMax);
  a.AddAll(a);  // self-add is allowed
  EXPECT_EQ(a.memory, kMax);
  EXPECT_EQ(a.Get("example.com/gpu"), kMax);
  EXPECT_EQ(a.scalars.size(), 1u);
}

TEST(ResourceListTest, MaxWithTakesTheLargerAmount) {
  ResourceList a;
  a.Set("cpu", 500);
  a.Set("memory", 10);
  a.Set("example.com/gpu", 2);
  ResourceList b;
  b.Set("cpu", 200);
  b.Set("memory", 30);
  b.Set("pods", 1);
  b.Set("example.com/gpu", 1);
  b.Set("hugepages-2Mi", 5);
  b.Set("example.com/zero", 0);
  b.Set("example.com/negative", -1);
  a.MaxWith(b);
  EXPECT_EQ(a.milli_cpu, 500);
  EXPECT_EQ(a.memory, 30);
  EXPECT_EQ(a.pods, 1);
  EXPECT_EQ(a.ephemeral_storage, 0);
  // Absent counts as 0: max(0, 0) and max(0, -1) leave no entry.
  const std::vector<ScalarResource> want = {{"example.com/gpu", 2}, {"hugepages-2Mi", 5}};
  EXPECT_EQ(a.scalars, want);
}

TEST(ResourceListTest, ForEachVisitsNonZeroWellKnownFirst) {
  ResourceList list;
  list.Set("example.com/gpu", 1);
  list.Set("pods", 3);
  list.Set("cpu", 100);
  list.Set("example.com/zero", 0);
  list.Set("hugepages-2Mi", 2);
  std::vector<std::pair<std::string_view, int64_t>> seen;
  list.ForEach([&seen](std::string_view name, int64_t amount) { seen.emplace_back(name, amount); });
  const std::vector<std::pair<std::string_view, int64_t>> want = {
      {"cpu", 100}, {"pods", 3}, {"example.com/gpu", 1}, {"hugepages-2Mi", 2}};
  EXPECT_EQ(seen, want);
}

TEST(ResourceListTest, ClearResetsButKeepsCapacity) {
  ResourceList list;
  list.Set("cpu", 1);
  list.Set("memory", 2);
  list.Set("ephemeral-storage", 3);
  list.Set("pods", 4);
  list.Set("example.com/gpu", 5);
  list.Set("hugepages-2Mi", 6);
  const size_t capacity = list.scalars.capacity();
  list.Clear();
  EXPECT_EQ(list, ResourceList{});
  EXPECT_EQ(list.scalars.capacity(), capacity);
}

TEST(ResourceListTest, DoesNotAllocateForExistingNames) {
  ResourceList list;
  list.Set("example.com/gpu", 1);
  list.Set("hugepages-2Mi", 1);
  const ScalarResource* data = list.scalars.data();
  const size_t capacity = list.scalars.capacity();
  ResourceList other;
  other.Set("example.com/gpu", 7);
  other.Set("hugepages-2Mi", 9);
  for (int i = 0; i < 100; ++i) {
    list.Set("example.com/gpu", i);
    list.Add("hugepages-2Mi", 1);
    list.Add("cpu", 1);
    list.AddAll(other);
    list.MaxWith(other);
  }
  // Same buffer, so no reallocation happened.
  EXPECT_EQ(list.scalars.data(), data);
  EXPECT_EQ(list.scalars.capacity(), capacity);
  EXPECT_EQ(list.scalars.size(), 2u);
}

}  // namespace
}  // namespace schedext::model
