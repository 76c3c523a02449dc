// KeyHash: the 64-bit hash of the cluster cache's maps (PersistentMap,
// FlatPersistentMap), for object names and UIDs.
//
// Internal to the cluster layer (src/, not include/).
#ifndef SCHEDEXT_SRC_CLUSTER_KEY_HASH_H_
#define SCHEDEXT_SRC_CLUSTER_KEY_HASH_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace schedext::cluster::internal {

// The 64-bit hash the maps use by default. Node names are 10–63 bytes
// (typically 35–45); std::hash's byte-oriented murmur cost ~100 instructions
// per name, this one ~40: one multiply-rotate-multiply step per 8-byte word,
// the last word overlapping the previous one instead of a byte loop, and a
// final mix that spreads every input bit into the low bits the trie reads
// first. Not keyed: the keys are object names from the API server, and even
// equal hashes only make a bucket that is searched linearly.
struct KeyHash {
  uint64_t operator()(std::string_view key) const {
    const char* p = key.data();
    size_t n = key.size();
    uint64_t h = kSeed ^ (static_cast<uint64_t>(n) * kMulA);
    if (n >= 8) {
      for (; n > 8; p += 8, n -= 8) {
        h = Step(h, Load64(p));
      }
      h = Step(h, Load64(p + n - 8));
    } else if (n >= 4) {
      h = Step(h, (Load32(p) << 32) | Load32(p + n - 4));
    } else if (n > 0) {
      h = Step(h, (Byte(p[0]) << 16) | (Byte(p[n / 2]) << 8) | Byte(p[n - 1]));
    }
    h ^= h >> 32;
    h *= kMulB;
    h ^= h >> 29;
    h *= kMulA;
    h ^= h >> 32;
    return h;
  }

 private:
  // Odd constants with well-mixed bits (the golden ratio and a prime).
  static constexpr uint64_t kMulA = 0x9e3779b97f4a7c15ULL;
  static constexpr uint64_t kMulB = 0xd6e8feb86659fd93ULL;
  static constexpr uint64_t kSeed = 0x2545f4914f6cdd1dULL;

  // A bijection of `word` for a given `h`: keys of one length that differ in
  // one word never collide.
  static uint64_t Step(uint64_t h, uint64_t word) {
    return std::rotl(h ^ (word * kMulA), 29) * kMulB;
  }
  static uint64_t Load64(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  static uint64_t Load32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  static uint64_t Byte(char c) { return static_cast<uint8_t>(c); }
};

}  // namespace schedext::cluster::internal

#endif  // SCHEDEXT_SRC_CLUSTER_KEY_HASH_H_
