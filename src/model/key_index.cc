#include "schedext/model/key_index.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>

namespace schedext::model {
namespace {

struct Seeds {
  uint64_t a;
  uint64_t b;
  uint64_t c;
};

Seeds DrawSeeds() {
  std::random_device device;
  auto draw = [&device] { return (uint64_t{device()} << 32) ^ device(); };
  // Odd, so that no seed multiplies a word to zero by itself.
  return Seeds{draw() | 1, draw() | 1, draw() | 1};
}

// Drawn once, then read-only: the same key hashes alike in every map of the
// process, and differently in the next process.
const Seeds& ProcessSeeds() {
  static const Seeds seeds = DrawSeeds();
  return seeds;
}

// GCC's and Clang's 128-bit integer (__extension__: not ISO C++).
__extension__ using Uint128 = unsigned __int128;

// The 128-bit product of a and b, its halves folded together.
uint64_t MultiplyFold(uint64_t a, uint64_t b) {
  const Uint128 product = static_cast<Uint128>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

uint64_t Load64(const char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t Load32(const char* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

thread_local uint64_t probes_of_thread = 0;

}  // namespace

uint64_t KeyProbes() { return probes_of_thread; }

void CountKeyProbes(size_t n) { probes_of_thread += n; }

size_t KeyIndex::CapacityFor(size_t n) { return std::bit_ceil(n < 4 ? size_t{8} : n * 2); }

uint64_t HashKey(std::string_view key) {
  const Seeds& seeds = ProcessSeeds();
  const char* p = key.data();
  size_t left = key.size();
  uint64_t h = seeds.a ^ (key.size() * 0x9e3779b97f4a7c15ULL);
  // 16 bytes a step; the last 1..16 bytes are read below, overlapping the
  // previous step when the key is long enough.
  while (left > 16) {
    h = MultiplyFold(Load64(p) ^ seeds.b, Load64(p + 8) ^ h);
    p += 16;
    left -= 16;
  }
  uint64_t x = 0;
  uint64_t y = 0;
  if (key.size() >= 16) {
    x = Load64(key.data() + key.size() - 16);
    y = Load64(key.data() + key.size() - 8);
  } else if (left >= 8) {
    x = Load64(p);
    y = Load64(p + left - 8);
  } else if (left >= 4) {
    x = Load32(p);
    y = Load32(p + left - 4);
  } else if (left > 0) {
    const auto byte = [](char c) { return uint64_t{static_cast<unsigned char>(c)}; };
    x = byte(p[0]) | (byte(p[left / 2]) << 8) | (byte(p[left - 1]) << 16);
  }
  h = MultiplyFold(x ^ seeds.b, y ^ seeds.c ^ h);
  return MultiplyFold(h ^ seeds.a, seeds.c);
}

}  // namespace schedext::model
