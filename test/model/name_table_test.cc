// NameTable and the lookups by interned id: the same answers as by text, and
// no key text read once a container carries ids (proved by overwriting the
// key text after AssignIds: an id lookup still finds the entry, a text lookup
// no longer does).
#include "schedext/model/name_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Every operator, on maps with and without ids and requirements with and
// without value ids: the id path answers exactly as the text path.
TEST(SelectorIdsTest, SameAnswersAsText) {
  NameTable table;
  const std::vector<std::string> keys = {"zone", "os", "tier"};
  const std::vector<std::vector<std::string>> value_sets = {{"a"}, {"a", "b"}, {"late"}, {}, {"5"}};
  for (const std::string& k : keys) {
    table.Intern(k);
  }
  table.Intern("a");
  table.Intern("b");
  table.Intern("5");
  table.Freeze();  // "late", "c", "7" stay out of the table
  const std::vector<std::vector<std::pair<std::string, std::string>>> nodes = {
      {},
      {{"zone", "a"}},
      {{"zone", "c"}, {"os", "b"}},
      {{"zone", "late"}},
      {{"tier", "7"}},
      {{"zone", "b"}, {"tier", "5"}}};
  const SelectorOperator ops[] = {SelectorOperator::kIn,     SelectorOperator::kNotIn,
                                  SelectorOperator::kExists, SelectorOperator::kDoesNotExist,
                                  SelectorOperator::kGt,     SelectorOperator::kLt};
  int by_id = 0;
  for (const auto& labels_spec : nodes) {
    StringMap plain;
    for (const auto& [k, v] : labels_spec) {
      plain.Set(k, v);
    }
    StringMap tagged = plain;
    tagged.AssignIds(table);
    for (const std::string& key : keys) {
      for (const auto& values : value_sets) {
        for (SelectorOperator op : ops) {
          SelectorRequirement text_req{key, op, {}};
          for (const std::string& v : values) {
            text_req.values.push_back(v);
          }
          SelectorRequirement id_req = text_req;
          const InternedName interned = InternedName::Of(key, &table);
          id_req.key_id = interned.id;
          id_req.key_table = interned.table;
          for (const std::string& v : values) {
            id_req.value_ids.push_back(table.Find(v));
          }
          if (std::find(id_req.value_ids.begin(), id_req.value_ids.end(), kNoNameId) !=
              id_req.value_ids.end()) {
            id_req.value_ids.clear();  // as NodeLabel does: all or none
          }
          const bool want = Matches(text_req, plain);
          EXPECT_EQ(Matches(id_req, tagged), want) << key << " op " << static_cast<int>(op);
          EXPECT_EQ(Matches(id_req, plain), want);
          EXPECT_EQ(Matches(text_req, tagged), want);
          by_id += id_req.value_ids.empty() ? 0 : 1;
        }
      }
    }
  }
  EXPECT_GT(by_id, 0);
}

TEST(SelectorIdsTest, ValueIdsReadNoValueText) {
  NameTable table;
  const InternedName os = InternedName::Of("kubernetes.io/os", &table);
  const NameId linux_id = table.Intern("linux");
  table.Freeze();
  std::string text = "kubernetes.io/oslinux";
  StringMap labels;
  labels.Set(std::string_view(text).substr(0, 16), std::string_view(text).substr(16));
  labels.AssignIds(table);
  SelectorRequirement in{os.text, SelectorOperator::kIn, {"linux"}};
  in.key_id = os.id;
  in.key_table = os.table;
  in.value_ids = {linux_id};
  EXPECT_TRUE(Matches(in, labels));
  text.replace(0, text.size(), std::string(text.size(), 'x'));  // key and value text gone
  EXPECT_TRUE(Matches(in, labels));
  in.op = SelectorOperator::kNotIn;
  EXPECT_FALSE(Matches(in, labels));
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
