// KeyIndex, and the containers that keep one when long (StringMap,
// ResourceList): right answers against a reference map, and work per entry
// that stays flat from 1x to 100x entries, counted in key probes
// (KeyProbes), not timed.
#include "schedext/model/key_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "schedext/model/resources.h"
#include "schedext/model/selectors.h"

namespace schedext::model {
namespace {

std::vector<std::string> Keys(size_t n, std::string_view prefix) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    keys.push_back(std::string(prefix) + std::to_string(i));
  }
  return keys;
}

// Key probes per entry that `build(n)` makes.
template <typename Build>
double ProbesPerEntry(size_t n, Build build) {
  const uint64_t before = KeyProbes();
  build(n);
  return static_cast<double>(KeyProbes() - before) / static_cast<double>(n);
}

// Work per entry at 1x, 10x and 100x: flat within 2x, and counted at all.
template <typename Build>
void ExpectFlat(Build build, size_t base = 400) {
  const double small = ProbesPerEntry(base, build);
  const double medium = ProbesPerEntry(base * 10, build);
  const double large = ProbesPerEntry(base * 100, build);
  EXPECT_GE(small, 1.0) << "no probes counted: the test would not see a scan";
  EXPECT_LE(medium, 2 * small) << "probes per entry at 1x " << small << ", at 10x " << medium;
  EXPECT_LE(large, 2 * small) << "probes per entry at 1x " << small << ", at 100x " << large;
}

TEST(KeyIndexTest, AgreesWithAReferenceMapThroughInsertsAndRebuilds) {
  std::mt19937 random(7);
  std::vector<std::string> keys;
  std::unordered_map<std::string, uint32_t> reference;
  KeyIndex index;
  const auto key_at = [&keys](uint32_t p) { return std::string_view(keys[p]); };
  for (int round = 0; round < 5000; ++round) {
    // Short keys from a small alphabet: many share hashes' low bits.
    std::string key(1 + random() % 6, 'a');
    for (char& c : key) {
      c = static_cast<char>('a' + random() % 4);
    }
    const auto it = reference.find(key);
    const uint32_t want = it == reference.end() ? KeyIndex::kNotFound : it->second;
    ASSERT_EQ(index.Find(key, key_at), want) << key;
    if (want == KeyIndex::kNotFound) {
      keys.push_back(key);
      reference.emplace(key, static_cast<uint32_t>(keys.size() - 1));
      if (round % 2 == 0) {
        index.Insert(key, static_cast<uint32_t>(keys.size() - 1));
      } else {
        ASSERT_EQ(index.FindOrInsert(key, static_cast<uint32_t>(keys.size() - 1), key_at),
                  KeyIndex::kNotFound);
      }
    } else {
      ASSERT_EQ(index.FindOrInsert(key, 12345, key_at), want) << key;
    }
    if (round % 1000 == 999) {
      index.Rebuild(keys.size(), key_at);
    }
  }
  ASSERT_EQ(index.size(), reference.size());
  for (const auto& [key, position] : reference) {
    EXPECT_EQ(index.Find(key, key_at), position) << key;
  }
  EXPECT_EQ(index.Find("not-a-key", key_at), KeyIndex::kNotFound);
  index.Reset();
  EXPECT_EQ(index.Find(keys[0], key_at), KeyIndex::kNotFound);
}

TEST(KeyIndexTest, HashesKeysOfEveryLengthApart) {
  // Keys that differ in one byte, at every position of every length up to
  // 40: the hash reads every byte, whichever branch a length takes.
  for (size_t length = 1; length <= 40; ++length) {
    const std::string base(length, 'k');
    for (size_t at = 0; at < length; ++at) {
      std::string other = base;
      other[at] = 'j';
      EXPECT_NE(HashKey(base), HashKey(other)) << "length " << length << " at " << at;
    }
  }
  EXPECT_EQ(HashKey("same"), HashKey(std::string("same")));
}

TEST(StringMapTest, LongMapsFindAndReplaceLikeShortOnes) {
  const std::vector<std::string> keys = Keys(1000, "example.com/key-");
  StringMap map;
  for (const std::string& key : keys) {
    map.Set(key, "first");
  }
  // A repeated key replaces the value at the first position, as before.
  map.Set(keys[500], "second");
  map.Set(keys[3], "second");
  ASSERT_EQ(map.size(), 1000u);
  EXPECT_EQ(map.entries()[500].first, keys[500]);
  EXPECT_EQ(map.entries()[500].second, "second");
  EXPECT_EQ(map.Find(keys[3]), "second");
  EXPECT_EQ(map.Find(keys[999]), "first");
  EXPECT_EQ(map.Find("example.com/key-1000"), std::nullopt);
  map.Clear();
  EXPECT_EQ(map.Find(keys[3]), std::nullopt);
  map.Set("a", "b");
  EXPECT_EQ(map.Find("a"), "b");
}

TEST(StringMapTest, BuildingCostsConstantProbesPerEntry) {
  const std::vector<std::string> keys = Keys(40000, "example.com/annotation-");
  ExpectFlat([&keys](size_t n) {
    StringMap map;
    for (size_t i = 0; i < n; ++i) {
      map.Set(keys[i], "v");
    }
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(map.Find(keys[i]), "v");
    }
  });
}

TEST(ResourceListTest, LongListsAddMergeAndDropZeros) {
  const std::vector<std::string> names = Keys(100, "example.com/r-");
  ResourceList a;
  ResourceList b;
  for (size_t i = 0; i < names.size(); ++i) {
    a.Set(names[i], static_cast<int64_t>(i));
    b.Set(names[names.size() - 1 - i], 1);
  }
  a.AddAll(b);
  b.Set("example.com/only-b", 7);
  a.MaxWith(b);
  ASSERT_EQ(a.scalars.size(), 101u);
  EXPECT_EQ(a.Get(names[0]), 1);  // 0 + 1
  EXPECT_EQ(a.Get(names[99]), 100);
  EXPECT_EQ(a.Get("example.com/only-b"), 7);
  a.Set(names[0], 0);
  a.Set(names[1], 0);
  a.RemoveZeroScalars();
  EXPECT_EQ(a.scalars.size(), 99u);
  EXPECT_EQ(a.Get(names[0]), 0);
  EXPECT_EQ(a.Get(names[2]), 3);
  EXPECT_EQ(a.Get("example.com/only-b"), 7);
}

TEST(ResourceListTest, BuildingAndSummingCostConstantProbesPerEntry) {
  const std::vector<std::string> names = Keys(40000, "example.com/device-");
  ExpectFlat([&names](size_t n) {
    ResourceList container;
    for (size_t i = 0; i < n; ++i) {
      container.Set(names[i], 1);
    }
    ResourceList total;
    total.AddAll(container);
    total.AddAll(container);
    total.MaxWith(container);
    ASSERT_EQ(total.Get(names[n - 1]), 2);
  });
}

}  // namespace
}  // namespace schedext::model
