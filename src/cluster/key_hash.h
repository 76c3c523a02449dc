// KeyHash: the 64-bit hash of the cluster cache's maps (PersistentMap,
// FlatPersistentMap), for object names and UIDs.
//
// Internal to the cluster layer (src/, not include/).
#ifndef SCHEDEXT_SRC_CLUSTER_KEY_HASH_H_
#define SCHEDEXT_SRC_CLUSTER_KEY_HASH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace schedext::cluster::internal {

// The 64-bit hash the maps use by default. Node names are 10–63 bytes
// (typically 35–45) and a 5,000-name request hashes every one of them:
// 16 bytes per step, each a folded 64×64→128-bit multiply of the two words
// (one xored with the state), the last step overlapping the one before
// instead of a byte loop. A 40-byte name takes three steps and a final fold:
// ~57 instructions inside Resolve's loop, against ~70 for the 8-bytes-per-step
// hash before it (callgrind, bench/instructions). The product's low and high
// halves folded together spread every input bit over the low bits the tables
// index by.
//
// A fold loses the state when one factor is 0: the constant xored into each
// first word has every byte's high bit set, so no ASCII word (node names,
// UIDs) can cancel it. Not keyed: the keys are object names from the API
// server, and equal hashes only make a probe run or bucket that is searched
// linearly.
struct KeyHash {
  uint64_t operator()(std::string_view key) const {
    const char* p = key.data();
    const size_t n = key.size();
    uint64_t h = kSeed ^ (static_cast<uint64_t>(n) * kLength);
    if (n > 16) {
      const char* last = p + n - 16;
      for (; p < last; p += 16) {
        h = Fold(Load64(p) ^ kWord, Load64(p + 8) ^ h);
      }
      h = Fold(Load64(last) ^ kWord, Load64(last + 8) ^ h);
    } else if (n >= 8) {
      h = Fold(Load64(p) ^ kWord, Load64(p + n - 8) ^ h);
    } else if (n >= 4) {
      h = Fold(((Load32(p) << 32) | Load32(p + n - 4)) ^ kWord, h);
    } else if (n > 0) {
      h = Fold(((Byte(p[0]) << 16) | (Byte(p[n / 2]) << 8) | Byte(p[n - 1])) ^ kWord, h);
    }
    return Fold(h ^ kFinal, kLength);
  }

 private:
  __extension__ typedef unsigned __int128 Product;

  // Every byte ≥ 0x80 (see above); the others odd, with well-mixed bits.
  static constexpr uint64_t kWord = 0xa0761d6478bd642fULL | 0x8080808080808080ULL;
  static constexpr uint64_t kLength = 0x9e3779b97f4a7c15ULL;
  static constexpr uint64_t kSeed = 0x2545f4914f6cdd1dULL;
  static constexpr uint64_t kFinal = 0xd6e8feb86659fd93ULL;

  static uint64_t Fold(uint64_t a, uint64_t b) {
    const Product product = static_cast<Product>(a) * b;
    return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
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
