#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "schedext/policy/policy.h"
#include "schedext/policy/request_state.h"

namespace schedext::policy {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

struct NormalizeCase {
  std::string name;
  std::vector<int64_t> scores;
  bool reverse;
  std::vector<int64_t> want;
};

TEST(NormalizeToMaxTest, ScalesLikeDefaultNormalizeScore) {
  const std::vector<NormalizeCase> cases = {
      {"empty", {}, false, {}},
      {"empty reversed", {}, true, {}},
      {"all zero stay zero", {0, 0, 0}, false, {0, 0, 0}},
      {"all zero reversed become max", {0, 0, 0}, true, {100, 100, 100}},
      // 100*1/4 = 25, 100*2/4 = 50, 100*4/4 = 100.
      {"largest becomes 100", {1, 2, 4}, false, {25, 50, 100}},
      // 100-25, 100-50, 100-100.
      {"reversed", {1, 2, 4}, true, {75, 50, 0}},
      // 100*1/3 = 33.3 → 33 (integer division, as Go).
      {"floors", {1, 3}, false, {33, 100}},
      // 100 - 33.
      {"floors before reversing", {1, 3}, true, {67, 0}},
      // -5 counts as 0; 100*10/10.
      {"negative treated as zero", {-5, 10}, false, {0, 100}},
      {"negative treated as zero reversed", {-5, 10}, true, {100, 0}},
      {"all negative stay zero", {-1, -2}, false, {0, 0}},
      {"all negative reversed become max", {-1, -2}, true, {100, 100}},
      {"single", {7}, false, {100}},
      // 100 * (2^63-1)/2 / (2^63-1) = 49.99… → 49, without overflowing.
      {"no overflow at int64 max", {kInt64Max, kInt64Max / 2}, false, {100, 49}},
  };
  for (const NormalizeCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<int64_t> scores = c.scores;
    NormalizeToMax(scores, c.reverse);
    EXPECT_EQ(scores, c.want);
  }
}

TEST(NormalizeMinMaxTest, ScalesSmallestToZeroAndLargestToMax) {
  const std::vector<NormalizeCase> cases = {
      {"empty", {}, false, {}},
      {"single is max", {7}, false, {100}},
      {"all equal are max", {5, 5, 5}, false, {100, 100, 100}},
      {"all equal reversed are max", {-3, -3}, true, {100, 100}},
      // (s-10)*100/20.
      {"evenly spaced", {10, 20, 30}, false, {0, 50, 100}},
      // (30-s)*100/20.
      {"reversed", {10, 20, 30}, true, {100, 50, 0}},
      // 1*100/3 = 33.3 → 33.
      {"floors", {0, 1, 3}, false, {0, 33, 100}},
      // (3-1)*100/3 = 66.7 → 66.
      {"floors reversed", {0, 1, 3}, true, {100, 66, 0}},
      // (0-(-10))*100/20 = 50.
      {"negative scores", {-10, 0, 10}, false, {0, 50, 100}},
      // 2^63 * 100 / (2^64-1) = 50.0… → 50, without overflowing.
      {"full int64 range", {kInt64Min, 0, kInt64Max}, false, {0, 50, 100}},
      {"order kept", {30, 10, 20}, false, {100, 0, 50}},
  };
  for (const NormalizeCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<int64_t> scores = c.scores;
    NormalizeMinMax(scores, c.reverse);
    EXPECT_EQ(scores, c.want);
  }
}

__extension__ typedef __int128 Wide;

// The 128-bit formulas NormalizeToMax and NormalizeMinMax implement (their
// narrower fast paths must agree with these on every input).
std::vector<int64_t> ReferenceToMax(std::vector<int64_t> scores, bool reverse) {
  int64_t max = 0;
  for (int64_t& score : scores) {
    score = std::max<int64_t>(score, 0);
    max = std::max(max, score);
  }
  for (int64_t& score : scores) {
    const int64_t scaled = max == 0 ? 0 : static_cast<int64_t>(Wide{100} * score / max);
    score = reverse ? 100 - scaled : scaled;
  }
  return scores;
}

std::vector<int64_t> ReferenceMinMax(std::vector<int64_t> scores, bool reverse) {
  if (scores.empty()) {
    return scores;
  }
  const int64_t min = *std::min_element(scores.begin(), scores.end());
  const int64_t max = *std::max_element(scores.begin(), scores.end());
  for (int64_t& score : scores) {
    if (min == max) {
      score = 100;
      continue;
    }
    const Wide distance = reverse ? Wide{max} - score : Wide{score} - min;
    score = static_cast<int64_t>(distance * 100 / (Wide{max} - min));
  }
  return scores;
}

// Largest and spans at the edges of the 32-bit, 64-bit and 128-bit paths
// (100·x fits in uint32 up to 42949672, in uint64 up to 184467440737095516),
// with scores at the ends and in between, against the 128-bit formulas.
TEST(NormalizeTest, NarrowPathsAgreeWithTheWideFormulaAtEveryBoundary) {
  const std::vector<int64_t> spans = {1,
                                      2,
                                      3,
                                      7,
                                      100,
                                      42949671,
                                      42949672,
                                      42949673,
                                      4294967295,
                                      4294967296,
                                      92233720368547758,
                                      92233720368547759,
                                      184467440737095515,
                                      184467440737095516,
                                      184467440737095517,
                                      kInt64Max / 3,
                                      kInt64Max - 1,
                                      kInt64Max};
  const std::vector<int64_t> bases = {kInt64Min, -42949672, -1, 0, 1, 5, 1000000};
  int checked = 0;
  for (int64_t span : spans) {
    // The values i/13 of the way from 0 to span (in 128 bits: span·i may overflow).
    std::vector<int64_t> offsets;
    for (int i = 0; i <= 13; ++i) {
      offsets.push_back(static_cast<int64_t>(Wide{span} * i / 13));
    }
    offsets.push_back(span - 1);
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(testing::Message() << "span " << span << " reverse " << reverse);
      // NormalizeToMax: largest = span, negatives included (they count as 0).
      std::vector<int64_t> to_max = offsets;
      to_max.push_back(-3);
      std::vector<int64_t> got = to_max;
      NormalizeToMax(got, reverse);
      EXPECT_EQ(got, ReferenceToMax(to_max, reverse));
      ++checked;
      // NormalizeMinMax: the same offsets from each base that keeps
      // base + span within int64.
      for (int64_t base : bases) {
        if (base > 0 && span > kInt64Max - base) {
          continue;
        }
        std::vector<int64_t> min_max;
        for (int64_t offset : offsets) {
          min_max.push_back(static_cast<int64_t>(static_cast<uint64_t>(base) +
                                                 static_cast<uint64_t>(offset)));
        }
        SCOPED_TRACE(testing::Message() << "base " << base);
        got = min_max;
        NormalizeMinMax(got, reverse);
        EXPECT_EQ(got, ReferenceMinMax(min_max, reverse));
        ++checked;
      }
    }
  }
  // The widest span of all: int64 min to int64 max (range 2^64 - 1).
  for (bool reverse : {false, true}) {
    const std::vector<int64_t> full = {kInt64Min, kInt64Min + 1, -1, 0, 1, kInt64Max - 1,
                                       kInt64Max};
    std::vector<int64_t> got = full;
    NormalizeMinMax(got, reverse);
    EXPECT_EQ(got, ReferenceMinMax(full, reverse));
    ++checked;
  }
  EXPECT_GT(checked, 200);
}

// A scorer that keeps ScoreHook's default Normalize.
class RawScorer final : public ScoreHook {
 public:
  int64_t Score(const RequestState& /*state*/, const model::PodInfo& /*pod*/,
                const model::NodeInfo& /*node*/) const override {
    return 0;
  }
};

TEST(ScoreHookTest, DefaultNormalizeClampsIntoRange) {
  RawScorer scorer;
  RequestState state;
  std::vector<int64_t> scores = {kInt64Min, -5, 0, 50, 100, 101, kInt64Max};
  scorer.Normalize(state, scores);
  EXPECT_EQ(scores, (std::vector<int64_t>{0, 0, 0, 50, 100, 100, 100}));
}

struct Number final : StateData {
  explicit Number(int v) : value(v) {}
  int value;
};

TEST(RequestStateTest, StoresOneSlotPerOwner) {
  RequestState state;
  int owner_a = 0;
  int owner_b = 0;
  EXPECT_EQ(state.Get(&owner_a), nullptr);

  state.Set(&owner_a, std::make_unique<Number>(1));
  state.Set(&owner_b, std::make_unique<Number>(2));
  ASSERT_NE(state.GetAs<Number>(&owner_a), nullptr);
  ASSERT_NE(state.GetAs<Number>(&owner_b), nullptr);
  EXPECT_EQ(state.GetAs<Number>(&owner_a)->value, 1);
  EXPECT_EQ(state.GetAs<Number>(&owner_b)->value, 2);

  state.Set(&owner_a, std::make_unique<Number>(3));
  EXPECT_EQ(state.GetAs<Number>(&owner_a)->value, 3);
  EXPECT_EQ(state.GetAs<Number>(&owner_b)->value, 2);

  state.Set(&owner_b, nullptr);
  EXPECT_EQ(state.Get(&owner_b), nullptr);

  state.Clear();
  EXPECT_EQ(state.Get(&owner_a), nullptr);
}

}  // namespace
}  // namespace schedext::policy
