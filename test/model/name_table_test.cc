// NameTable and the lookups by interned id: the same answers as by text, and
// no key text read once a container carries ids (proved by overwriting the
// key text after AssignIds: an id lookup still finds the entry, a text lookup
// no longer does).
#include "schedext/model/name_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "schedext/model/resources.h"
#include "schedext/model/selectors.h"

namespace schedext::model {
namespace {

TEST(NameTableTest, InternsOnceAndFreezes) {
  NameTable table;
  EXPECT_EQ(table.Find("cpu"), kCpuNameId);
  EXPECT_EQ(table.Find("memory"), kMemoryNameId);
  EXPECT_EQ(table.Find("ephemeral-storage"), kEphemeralStorageNameId);
  EXPECT_EQ(table.Find("pods"), kPodsNameId);
  EXPECT_EQ(table.Find("example.com/gpu"), kNoNameId);
  const NameId gpu = table.Intern("example.com/gpu");
  EXPECT_NE(gpu, kNoNameId);
  EXPECT_EQ(table.Intern(std::string("example.com/") + "gpu"), gpu);
  const NameId zone = table.Intern("topology.kubernetes.io/zone");
  EXPECT_NE(zone, gpu);
  table.Freeze();
  EXPECT_TRUE(table.frozen());
  EXPECT_EQ(table.Intern("late.example.com/x"), kNoNameId);
  EXPECT_EQ(table.Find("late.example.com/x"), kNoNameId);
  EXPECT_EQ(table.Intern("example.com/gpu"), gpu);
  EXPECT_EQ(table.size(), 6U);
}

TEST(ResourceListIdsTest, ByIdReadsNoNameText) {
  NameTable table;
  const InternedName gpu = InternedName::Of("example.com/gpu", &table);
  const InternedName cpu = InternedName::Of("cpu", &table);
  const InternedName absent = InternedName::Of("example.com/fpga", &table);
  table.Freeze();
  // Names as a decoded node holds them: views into its own text.
  std::string text = "example.com/gpuhugepages-2Mi";
  ResourceList list;
  list.Set("cpu", 4000);
  list.Set(std::string_view(text).substr(0, 15), 8);
  list.Set(std::string_view(text).substr(15), 1024);
  list.AssignIds(table);
  EXPECT_EQ(list.ids_from(), &table);
  EXPECT_EQ(list.Get(gpu), 8);
  EXPECT_EQ(list.Get(cpu), 4000);
  EXPECT_EQ(list.Get(absent), 0);
  // Overwrite the stored name: only a lookup that reads the text misses now.
  text.replace(0, 15, "xxxxxxxxxxxxxxx");
  EXPECT_EQ(list.Get(gpu), 8);
  EXPECT_EQ(list.Get(gpu.text), 0);
}

TEST(ResourceListIdsTest, TextFallbackAndLaterAdds) {
  NameTable table;
  NameTable other;
  const InternedName gpu = InternedName::Of("example.com/gpu", &table);
  const InternedName elsewhere = InternedName::Of("example.com/gpu", &other);
  const InternedName text_only = InternedName::Of("example.com/gpu", nullptr);
  ResourceList untagged;
  untagged.Set("example.com/gpu", 3);
  // No ids in the list, ids of another table, no id: all by text.
  EXPECT_EQ(untagged.Get(gpu), 3);
  EXPECT_EQ(untagged.Get(text_only), 3);
  ResourceList tagged;
  tagged.AssignIds(table);
  tagged.Add("example.com/gpu", 2);  // tagged as it comes
  tagged.Add("example.com/gpu", 5);
  EXPECT_EQ(tagged.Get(gpu), 7);
  EXPECT_EQ(tagged.Get(elsewhere), 7);
  ResourceList sum;
  sum.AssignIds(table);
  sum.AddAll(untagged);
  sum.MaxWith(tagged);
  EXPECT_EQ(sum.Get(gpu), 7);
  // Ids are derived data: equality compares amounts only.
  ResourceList plain;
  plain.Set("example.com/gpu", 7);
  EXPECT_EQ(sum, plain);
  sum.Clear();
  EXPECT_EQ(sum.ids_from(), nullptr);
}

TEST(StringMapIdsTest, ByIdReadsNoKeyText) {
  NameTable table;
  const InternedName zone = InternedName::Of("topology.kubernetes.io/zone", &table);
  const InternedName os = InternedName::Of("kubernetes.io/os", &table);
  const InternedName missing = InternedName::Of("kubernetes.io/arch", &table);
  table.Freeze();
  std::string text = "topology.kubernetes.io/zoneus-west-2akubernetes.io/oslinux";
  const std::string_view all(text);
  StringMap labels;
  labels.Set(all.substr(0, 27), all.substr(27, 10));
  labels.AssignIds(table);
  labels.Set(all.substr(37, 16), all.substr(53));  // set after AssignIds: tagged too
  EXPECT_EQ(labels.Find(zone), "us-west-2a");
  EXPECT_EQ(labels.Find(os), "linux");
  EXPECT_EQ(labels.Find(missing), std::nullopt);
  text.replace(0, 27, std::string(27, 'x'));
  EXPECT_EQ(labels.Find(zone), "us-west-2a");
  EXPECT_EQ(labels.Find(zone.text), std::nullopt);
  // A selector with an interned key matches through the id.
  SelectorRequirement requirement{zone.text, SelectorOperator::kIn, {"us-west-2a"}};
  requirement.key_id = zone.id;
  requirement.key_table = zone.table;
  EXPECT_TRUE(Matches(requirement, labels));
  labels.Clear();
  EXPECT_EQ(labels.ids_from(), nullptr);
  EXPECT_EQ(labels.Find(zone), std::nullopt);
}

TEST(StringMapIdsTest, UntaggedMapsAreSearchedByText) {
  NameTable table;
  const InternedName zone = InternedName::Of("topology.kubernetes.io/zone", &table);
  StringMap labels;
  labels.Set("topology.kubernetes.io/zone", "a");
  EXPECT_EQ(labels.Find(zone), "a");
  SelectorRequirement requirement{"topology.kubernetes.io/zone", SelectorOperator::kIn, {"a"}};
  EXPECT_TRUE(Matches(requirement, labels));
}

}  // namespace
}  // namespace schedext::model
