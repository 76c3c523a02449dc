#include "common/stats.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace schedext {
namespace {

TEST(PercentileTest, NearestRank) {
  const std::vector<int64_t> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(Percentile(ten, 0.5), 5);
  EXPECT_EQ(Percentile(ten, 0.9), 9);
  EXPECT_EQ(Percentile(ten, 0.91), 10);
  EXPECT_EQ(Percentile(ten, 0.99), 10);
  EXPECT_EQ(Percentile(ten, 1.0), 10);
  EXPECT_EQ(Percentile(ten, 0.0), 1);
  EXPECT_EQ(Percentile(ten, 0.01), 1);
}

TEST(PercentileTest, ProductsJustAboveAWholeRankStayOnIt) {
  // 0.07 × 100 is 7.000000000000001 in doubles: still the 7th value.
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) {
    hundred.push_back(i);
  }
  EXPECT_EQ(Percentile(hundred, 0.07), 7);
  EXPECT_EQ(Percentile(hundred, 0.55), 55);
  EXPECT_EQ(Percentile(hundred, 0.99), 99);
}

TEST(PercentileTest, EmptyAndSingle) {
  EXPECT_EQ(Percentile(std::vector<double>{}, 0.5), 0);
  EXPECT_EQ(Percentile(std::vector<int64_t>{42}, 0.0), 42);
  EXPECT_EQ(Percentile(std::vector<int64_t>{42}, 0.99), 42);
  EXPECT_EQ(PercentileIndex(1, 0.5), 0u);
  EXPECT_EQ(PercentileIndex(3, 0.5), 1u);
  EXPECT_EQ(PercentileIndex(4, 0.5), 1u);
}

}  // namespace
}  // namespace schedext
