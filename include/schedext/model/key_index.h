// KeyIndex: finds a key's position in a sequence the caller owns, in
// expected constant time, for sequences too long to scan.
//
// Labels, annotations and resource lists are small vectors searched by a
// scan (faster than hashing at the 5–30 entries real objects have). Their
// contents come from clients, though, and a pod may carry 32,000
// annotations: a scan per insert would make decoding it quadratic. Above
// kScanLimit entries such a container keeps a KeyIndex beside its vector.
//
// The hash is keyed with a seed drawn once per process, so a client cannot
// choose keys that collide (the defence Go's maps use).
//
// The owner calls Insert for each new position and Rebuild after anything
// that moves positions; KeyIndex holds no keys, it asks key_at(position).
// Thread-safety: a value type; const methods may run concurrently.
#ifndef SCHEDEXT_MODEL_KEY_INDEX_H_
#define SCHEDEXT_MODEL_KEY_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace schedext::model {

// Containers of up to this many entries are searched by a scan and keep no
// index.
inline constexpr size_t kScanLimit = 16;

// Keys this thread compared or slots it examined looking up and inserting
// keys: KeyIndex's probes and the short containers' scan steps, since the
// thread started. An operation count, not a clock: the complexity tests read
// it to tell constant from linear work per entry without timing anything
// (like RocksDB's per-thread perf context).
uint64_t KeyProbes();
// Adds n to this thread's KeyProbes (one call per lookup, not per step).
void CountKeyProbes(size_t n);

// The process's keyed hash of `key`.
uint64_t HashKey(std::string_view key);

class KeyIndex {
 public:
  static constexpr uint32_t kNotFound = UINT32_MAX;

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }

  // The position whose key equals `key`, or kNotFound.
  template <typename KeyAt>
  uint32_t Find(std::string_view key, const KeyAt& key_at) const {
    if (count_ == 0) {
      return kNotFound;
    }
    // An empty slot's position_plus_one - 1 is kNotFound.
    return slots_[SlotOf(key, HashKey(key), key_at)].position_plus_one - 1;
  }

  // The position whose key equals `key`; when there is none, records that
  // `position` holds it and returns kNotFound. One probe sequence for both.
  template <typename KeyAt>
  uint32_t FindOrInsert(std::string_view key, uint32_t position, const KeyAt& key_at) {
    if ((count_ + 1) * 2 > slots_.size()) {
      Grow(count_ + 1);
    }
    const uint64_t hash = HashKey(key);
    Slot& slot = slots_[SlotOf(key, hash, key_at)];
    if (slot.position_plus_one != 0) {
      return slot.position_plus_one - 1;
    }
    slot = Slot{position + 1, static_cast<uint32_t>(hash)};
    ++count_;
    return kNotFound;
  }

  // Records that `position` holds `key`, which no indexed position holds.
  void Insert(std::string_view key, uint32_t position) {
    if ((count_ + 1) * 2 > slots_.size()) {
      Grow(count_ + 1);
    }
    Place(HashKey(key), position);
    ++count_;
  }

  // Indexes positions [0, n) afresh; their keys must be distinct.
  template <typename KeyAt>
  void Rebuild(size_t n, const KeyAt& key_at) {
    slots_.assign(CapacityFor(n), Slot{});
    count_ = 0;
    for (size_t p = 0; p < n; ++p) {
      Place(HashKey(key_at(static_cast<uint32_t>(p))), static_cast<uint32_t>(p));
    }
    count_ = n;
  }

  // Forgets every position and releases the slots.
  void Reset() {
    slots_ = {};
    count_ = 0;
  }

 private:
  struct Slot {
    uint32_t position_plus_one = 0;  // 0: empty
    uint32_t tag = 0;                // the hash's low half (the bucket's bits)
  };

  // A power of two with room for n at a load of at most one half.
  static size_t CapacityFor(size_t n);

  // The slot holding `key` (whose hash is `hash`), or the empty slot where
  // it would go. The slots must not be full (the load is at most one half).
  template <typename KeyAt>
  size_t SlotOf(std::string_view key, uint64_t hash, const KeyAt& key_at) const {
    const uint32_t tag = static_cast<uint32_t>(hash);
    const size_t mask = slots_.size() - 1;
    size_t probes = 1;
    size_t i = hash & mask;
    for (;; i = (i + 1) & mask, ++probes) {
      const Slot& slot = slots_[i];
      if (slot.position_plus_one == 0 ||
          (slot.tag == tag && key_at(slot.position_plus_one - 1) == key)) {
        break;
      }
    }
    CountKeyProbes(probes);
    return i;
  }

  // Doubles the slots as needed for n positions. The bucket of a position
  // is its hash's low bits, which its tag keeps: no key is read again.
  void Grow(size_t n) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(CapacityFor(n), Slot{});
    for (const Slot& slot : old) {
      if (slot.position_plus_one != 0) {
        Place(slot.tag, slot.position_plus_one - 1);
      }
    }
  }

  void Place(uint64_t hash, uint32_t position) {
    const size_t mask = slots_.size() - 1;
    size_t probes = 0;
    size_t i = hash & mask;
    for (; slots_[i].position_plus_one != 0; i = (i + 1) & mask) {
      ++probes;
    }
    CountKeyProbes(probes + 1);
    slots_[i] = Slot{position + 1, static_cast<uint32_t>(hash)};
  }

  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_KEY_INDEX_H_
