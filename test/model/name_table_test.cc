// NameTable and the lookups by interned id: the same answers as by text, and
// no key text read once a container carries ids (proved by overwriting the
// key text after AssignIds: an id lookup still finds the entry, a text lookup
// no longer does).
#include "schedext/model/name_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
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

// The value of a tagged key is parsed once, when the ids are assigned, exactly
// as the text lookups parse it: NodeNumeric's number (from_chars, finite,
// nothing else) and Gt/Lt's integer (strconv.ParseInt).
TEST(StringMapIdsTest, PreParsedValuesEqualTheTextParse) {
  struct Case {
    std::string value;
    std::optional<double> number;
    std::optional<int64_t> integer;
  };
  const std::vector<Case> cases = {
      {"5", 5, 5},
      {"007", 7, 7},
      {"+5", std::nullopt, 5},  // ParseInt takes a '+', from_chars does not
      {"-12", -12, -12},
      {"-0", -0.0, 0},
      {"+0", std::nullopt, 0},
      {"0.5", 0.5, std::nullopt},
      {"1e3", 1000, std::nullopt},
      {"", std::nullopt, std::nullopt},
      {"+", std::nullopt, std::nullopt},
      {"-", std::nullopt, std::nullopt},
      {" 5", std::nullopt, std::nullopt},
      {"5 ", std::nullopt, std::nullopt},
      {"0x10", std::nullopt, std::nullopt},
      {"inf", std::nullopt, std::nullopt},
      {"nan", std::nullopt, std::nullopt},
      {"1e999", std::nullopt, std::nullopt},
      {"SPOT", std::nullopt, std::nullopt},
      // Around 2^53, where a double stops holding every integer.
      {"9007199254740992", 9007199254740992.0, int64_t{9007199254740992}},
      {"9007199254740993", 9007199254740992.0, int64_t{9007199254740993}},
      {"-9007199254740993", -9007199254740992.0, int64_t{-9007199254740993}},
      {"+9007199254740993", std::nullopt, int64_t{9007199254740993}},
      {"9223372036854775807", 9223372036854775807.0, std::numeric_limits<int64_t>::max()},
      {"-9223372036854775808", -9223372036854775808.0, std::numeric_limits<int64_t>::min()},
      {"9223372036854775808", 9223372036854775808.0, std::nullopt},  // int64 overflow
      {"-9223372036854775809", -9223372036854775809.0, std::nullopt},
  };
  NameTable table;
  const InternedName key = InternedName::Of("example.com/v", &table);
  const InternedName absent = InternedName::Of("example.com/absent", &table);
  table.Freeze();
  for (const Case& c : cases) {
    SCOPED_TRACE("value \"" + c.value + "\"");
    EXPECT_EQ(ParseLabelNumber(c.value), c.number);
    EXPECT_EQ(ParseLabelInteger(c.value), c.integer);
    std::string text = "example.com/v" + c.value;
    StringMap plain;
    plain.Set("zone", "a");
    plain.Set(std::string_view(text).substr(0, 13), std::string_view(text).substr(13));
    StringMap tagged = plain;
    tagged.AssignIds(table);
    for (const StringMap* map : {&plain, &tagged}) {
      const std::optional<double> number = map->FindNumber(key);
      EXPECT_EQ(number, c.number);
      if (number.has_value() && c.number.has_value()) {
        EXPECT_EQ(std::signbit(*number), std::signbit(*c.number));  // "-0" stays -0.0
      }
      EXPECT_EQ(map->FindInteger(key), c.integer);
      EXPECT_EQ(map->FindNumber(absent), std::nullopt);
      EXPECT_EQ(map->FindInteger(absent), std::nullopt);
    }
    // A copy keeps the parses; a tagged map read them before: overwriting the
    // node's text changes neither (except an integer beyond 2^53, which one
    // double cannot hold exactly and is read from the text again).
    const StringMap copy = tagged;
    std::fill(text.begin(), text.end(), 'x');
    EXPECT_EQ(tagged.FindNumber(key), c.number);
    EXPECT_EQ(copy.FindNumber(key), c.number);
    const bool wide = c.integer.has_value() &&
                      (*c.integer > (int64_t{1} << 53) || *c.integer < -(int64_t{1} << 53));
    if (!wide) {
      EXPECT_EQ(tagged.FindInteger(key), c.integer);
      EXPECT_EQ(copy.FindInteger(key), c.integer);
    }
    // The text path reads the text, so it no longer finds the key.
    EXPECT_EQ(plain.FindNumber(key), std::nullopt);
  }
}

// Replacing a tagged value re-parses it; a key added later is tagged and
// parsed as it comes; an entry whose key the table lacks has no tag but is
// still found by text.
TEST(StringMapIdsTest, SetAfterAssignIdsKeepsTheParsesCurrent) {
  NameTable table;
  const InternedName version = InternedName::Of("example.com/version", &table);
  const InternedName load = InternedName::Of("example.com/load", &table);
  const NameId high = table.Intern("high");
  table.Freeze();
  StringMap labels;
  labels.Set("example.com/version", "3");
  labels.Set("example.com/other", "9");
  labels.AssignIds(table);
  EXPECT_EQ(labels.FindNumber(version), 3.0);
  EXPECT_EQ(labels.FindInteger(version), 3);
  labels.Set("example.com/version", "+4");
  EXPECT_EQ(labels.FindNumber(version), std::nullopt);
  EXPECT_EQ(labels.FindInteger(version), 4);
  EXPECT_EQ(labels.Find(version), "+4");
  labels.Set("example.com/version", "high");
  EXPECT_EQ(labels.FindNumber(version), std::nullopt);
  EXPECT_EQ(labels.FindInteger(version), std::nullopt);
  EXPECT_EQ(labels.FindValueId(version), high);
  EXPECT_EQ(labels.FindNumber(load), std::nullopt);
  labels.Set("example.com/load", "0.25");
  EXPECT_EQ(labels.FindNumber(load), 0.25);
  EXPECT_EQ(labels.Find(load), "0.25");
  EXPECT_EQ(labels.FindValueId(load), kNoNameId);
  // Untagged key: by text only, and in entry order with the others.
  EXPECT_EQ(labels.Find("example.com/other"), "9");
  ASSERT_EQ(labels.size(), 3U);
  EXPECT_EQ(labels.entries()[1].first, "example.com/other");
  EXPECT_EQ(labels.entries()[2].first, "example.com/load");
  // Assigning again (as a cache re-storing the node would) changes nothing.
  labels.AssignIds(table);
  EXPECT_EQ(labels.FindNumber(load), 0.25);
  EXPECT_EQ(labels.Find(version), "high");
}

// Gt / Lt by id answer as by text on every edge-case label value, against
// well-formed and malformed operands.
TEST(SelectorIdsTest, GtLtByIdEqualTheTextParse) {
  NameTable table;
  const InternedName key = InternedName::Of("example.com/gen", &table);
  table.Freeze();
  const std::vector<std::string> values = {"5",
                                           "007",
                                           "+5",
                                           "-5",
                                           "-0",
                                           "",
                                           "5x",
                                           "0.5",
                                           "1e3",
                                           "4",
                                           "6",
                                           "9007199254740993",
                                           "9223372036854775807",
                                           "9223372036854775808"};
  const std::vector<std::vector<std::string>> operands = {
      {"5"}, {"0"}, {"9007199254740992"}, {"+4"}, {"-1"}, {"x"}, {}, {"1", "2"}};
  int matched = 0;
  for (const std::string& value : values) {
    StringMap plain;
    plain.Set(key.text, value);
    StringMap tagged = plain;
    tagged.AssignIds(table);
    for (const auto& operand : operands) {
      for (SelectorOperator op : {SelectorOperator::kGt, SelectorOperator::kLt}) {
        SelectorRequirement text_req{key.text, op, {}};
        for (const std::string& v : operand) {
          text_req.values.push_back(v);
        }
        SelectorRequirement id_req = text_req;
        id_req.key_id = key.id;
        id_req.key_table = key.table;
        const bool want = Matches(text_req, plain);
        EXPECT_EQ(Matches(id_req, tagged), want)
            << "\"" << value << "\" op " << static_cast<int>(op) << " " << operand.size();
        matched += want ? 1 : 0;
      }
    }
  }
  EXPECT_GT(matched, 0);
  // Exact answers on a few: "007" > 5 (7), "+5" < 6, "9007199254740993" > 9007199254740992.
  StringMap labels;
  labels.Set(key.text, "007");
  labels.AssignIds(table);
  SelectorRequirement gt{key.text, SelectorOperator::kGt, {"5"}};
  gt.key_id = key.id;
  gt.key_table = key.table;
  EXPECT_TRUE(Matches(gt, labels));
  labels.Set(key.text, "+5");
  EXPECT_FALSE(Matches(gt, labels));
  SelectorRequirement lt = gt;
  lt.op = SelectorOperator::kLt;
  lt.values = {"6"};
  EXPECT_TRUE(Matches(lt, labels));
  labels.Set(key.text, "9007199254740993");
  gt.values = {"9007199254740992"};
  EXPECT_TRUE(Matches(gt, labels));
  labels.Set(key.text, "");
  EXPECT_FALSE(Matches(gt, labels));
  EXPECT_FALSE(Matches(lt, labels));
}

}  // namespace
}  // namespace schedext::model
