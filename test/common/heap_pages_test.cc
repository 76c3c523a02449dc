#include "common/heap_pages.h"

#include <gtest/gtest.h>

namespace schedext::common {
namespace {

constexpr std::string_view kMadvise = "always [madvise] never\n";

TEST(HeapPagesTest, AddsTheTunableInMadviseMode) {
  EXPECT_EQ(TunablesForHeapHugePages(nullptr, kMadvise), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(TunablesForHeapHugePages("", kMadvise), "glibc.malloc.hugetlb=1");
}

TEST(HeapPagesTest, KeepsTheOperatorsOtherTunables) {
  EXPECT_EQ(TunablesForHeapHugePages("glibc.malloc.arena_max=2", kMadvise),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
}

TEST(HeapPagesTest, LeavesAnExplicitChoiceAlone) {
  // Set by the operator (0 turns it off) or by the re-executed process itself.
  EXPECT_EQ(TunablesForHeapHugePages("glibc.malloc.hugetlb=0", kMadvise), std::nullopt);
  EXPECT_EQ(TunablesForHeapHugePages("glibc.malloc.hugetlb=1", kMadvise), std::nullopt);
  EXPECT_EQ(TunablesForHeapHugePages("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2", kMadvise),
            std::nullopt);
  // A different tunable that only starts with the same name is not it.
  EXPECT_EQ(TunablesForHeapHugePages("glibc.malloc.hugetlbx=0", kMadvise),
            "glibc.malloc.hugetlbx=0:glibc.malloc.hugetlb=1");
}

TEST(HeapPagesTest, NothingToDoOutsideMadviseMode) {
  EXPECT_EQ(TunablesForHeapHugePages(nullptr, "[always] madvise never\n"), std::nullopt);
  EXPECT_EQ(TunablesForHeapHugePages(nullptr, "always madvise [never]\n"), std::nullopt);
  EXPECT_EQ(TunablesForHeapHugePages(nullptr, ""), std::nullopt);  // no THP in this kernel
}

}  // namespace
}  // namespace schedext::common
