// TokenBucket::WaitUntil: a token is taken only when its turn comes by the
// deadline; a refusal takes nothing and returns at once.
#include "cluster/token_bucket.h"

#include <gtest/gtest.h>

#include <chrono>

namespace schedext::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = TokenBucket::Clock;

TEST(TokenBucketTest, WaitUntilTakesTheBurstThenRefusesATurnPastTheDeadline) {
  TokenBucket bucket(/*qps=*/0.01, /*burst=*/2);  // a new token every 100 s
  EXPECT_TRUE(bucket.WaitUntil(Clock::now() + 1s));
  EXPECT_TRUE(bucket.WaitUntil(Clock::now() + 1s));
  EXPECT_FALSE(bucket.WaitUntil(Clock::now() + 10s));
  EXPECT_FALSE(bucket.WaitUntil(Clock::now() + 10s));
}

TEST(TokenBucketTest, ARefusalReservesNothingForLater) {
  // 20 tokens a second, burst 1. Were the refused calls to take their turns,
  // the call after them would be due 50 ms per refusal later, past its
  // 75 ms deadline.
  TokenBucket bucket(/*qps=*/20, /*burst=*/1);
  EXPECT_TRUE(bucket.WaitUntil(Clock::now() + 1s));
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(bucket.WaitUntil(Clock::now()));
  }
  EXPECT_TRUE(bucket.WaitUntil(Clock::now() + 75ms));
}

TEST(TokenBucketTest, WithoutALimitOnlyThePastIsRefused) {
  TokenBucket bucket(/*qps=*/0, /*burst=*/1);
  EXPECT_TRUE(bucket.WaitUntil(Clock::now() + 1ms));
  EXPECT_FALSE(bucket.WaitUntil(Clock::now() - 1ms));
}

}  // namespace
}  // namespace schedext::cluster
