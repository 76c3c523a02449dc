// PersistentMap: an immutable hash map from a string key to
// std::shared_ptr<const V>, as a hash array mapped trie (HAMT). Set and Erase
// return a new map that shares every untouched subtree with the old one: an
// update copies one path of at most ceil(64 / 5) small nodes (≈ 3–4 levels of
// ≤ 32 slots at 15,000–150,000 entries), never the whole map. That is what
// lets the cluster cache publish a new snapshot per watch event.
//
// Keys are views into the values (KeyOf(const V&) -> std::string_view), so a
// lookup by std::string_view allocates nothing. A request resolves thousands
// of names per call, so a lookup is laid out to miss the cache as little as
// possible: a subtree's slots are one allocation whose bitmap sits in the
// parent's slot (one dependent load per level), and each entry's slot keeps
// its key's hash (a lookup touches the value only when the whole hash agrees).
//
// Internal to the cluster layer (src/, not include/). Thread-safety: a map is
// an immutable value; copies may be read from many threads at once, and
// shared_ptr keeps shared subtrees alive for every map that uses them.
#ifndef SCHEDEXT_SRC_CLUSTER_PERSISTENT_MAP_H_
#define SCHEDEXT_SRC_CLUSTER_PERSISTENT_MAP_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "cluster/key_hash.h"

namespace schedext::cluster::internal {

template <typename V, typename KeyOf, typename Hasher = KeyHash>
class PersistentMap {
 public:
  using Ptr = std::shared_ptr<const V>;

  PersistentMap() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The value stored under `key`, or nullptr.
  const Ptr* Find(std::string_view key) const {
    const uint64_t hash = Hasher{}(key);
    const Slot* tree = &root_;
    for (unsigned shift = 0; tree->sub != nullptr; shift += kBits) {
      const Slot* slots = tree->sub.get();
      if (shift >= 64) {
        for (const Slot* s = slots; s != slots + tree->size; ++s) {
          if (SameKey(KeyOf{}(*s->value), key)) {
            return &s->value;
          }
        }
        return nullptr;
      }
      const uint32_t bit = Bit(hash, shift);
      if ((tree->bitmap & bit) == 0) {
        return nullptr;
      }
      const Slot& slot = slots[Index(tree->bitmap, bit)];
      if (slot.value != nullptr) {
        return slot.hash == hash && SameKey(KeyOf{}(*slot.value), key) ? &slot.value : nullptr;
      }
      tree = &slot;
    }
    return nullptr;
  }

  // Calls found(i, Find(keys[i])) for every i, faster than one Find after
  // another: lookups go down the trie a level at a time in groups, each one's
  // next slot and finally its entry prefetched before any is read, so their
  // cache misses overlap instead of queueing one behind another (a request
  // resolves thousands of names, and their entries are scattered in memory).
  template <typename Found>
  void FindMany(std::span<const std::string_view> keys, Found&& found) const {
    constexpr size_t kGroup = 16;
    uint64_t hashes[kGroup];
    const Slot* at[kGroup];  // where each lookup has got to; nullptr: absent
    for (size_t base = 0; base < keys.size(); base += kGroup) {
      const size_t n = std::min(kGroup, keys.size() - base);
      for (size_t i = 0; i < n; ++i) {
        hashes[i] = Hasher{}(keys[base + i]);
        at[i] = &root_;
      }
      for (unsigned shift = 0; shift < 64; shift += kBits) {
        bool descended = false;
        for (size_t i = 0; i < n; ++i) {
          const Slot* tree = at[i];
          if (tree == nullptr || tree->sub == nullptr) {
            continue;  // absent, or at its entry
          }
          const uint32_t bit = Bit(hashes[i], shift);
          if ((tree->bitmap & bit) == 0) {
            at[i] = nullptr;
            continue;
          }
          at[i] = &tree->sub[Index(tree->bitmap, bit)];
          __builtin_prefetch(at[i]);
          descended = true;
        }
        if (!descended) {
          break;
        }
      }
      for (size_t i = 0; i < n; ++i) {
        if (at[i] != nullptr && at[i]->value != nullptr) {
          __builtin_prefetch(at[i]->value.get());
        }
      }
      for (size_t i = 0; i < n; ++i) {
        const Slot* slot = at[i];
        const std::string_view key = keys[base + i];
        if (slot == nullptr) {
          found(base + i, static_cast<const Ptr*>(nullptr));
        } else if (slot->sub != nullptr) {
          found(base + i, Find(key));  // a bucket of entries whose hashes are equal
        } else {
          const bool hit = slot->value != nullptr && slot->hash == hashes[i] &&
                           SameKey(KeyOf{}(*slot->value), key);
          found(base + i, hit ? &slot->value : static_cast<const Ptr*>(nullptr));
        }
      }
    }
  }

  // A map with `value` stored under its key (inserted or replaced).
  // `copied`, when given, is increased by the slots this copied.
  PersistentMap Set(Ptr value, size_t* copied = nullptr) const {
    const std::string_view key = KeyOf{}(*value);
    bool inserted = false;
    PersistentMap out;
    out.root_ = SetIn(root_, 0, Hasher{}(key), key, std::move(value), inserted, copied);
    out.size_ = size_ + (inserted ? 1 : 0);
    return out;
  }

  // A map without `key` (the same map when it is absent).
  PersistentMap Erase(std::string_view key, size_t* copied = nullptr) const {
    if (Find(key) == nullptr) {
      return *this;
    }
    PersistentMap out;
    out.root_ = EraseIn(root_, 0, Hasher{}(key), key, copied);
    out.size_ = size_ - 1;
    return out;
  }

  // Calls fn(const Ptr&) for every value, in no particular order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    ForEachIn(root_, fn);
  }

 private:
  static constexpr unsigned kBits = 5;
  static constexpr uint64_t kMask = 31;

  // Either an entry (value set; hash is its key's) or a subtree (sub set, or
  // neither for the empty map's root): `size` slots in one array, a branch
  // indexed by `bitmap` or, below 64 bits of hash, a bucket of entries whose
  // hashes are equal (bitmap unused).
  struct Slot {
    uint64_t hash = 0;
    uint32_t bitmap = 0;
    uint32_t size = 0;
    Ptr value;
    std::shared_ptr<const Slot[]> sub;
  };
  using Slots = std::shared_ptr<Slot[]>;

  static uint32_t Bit(uint64_t hash, unsigned shift) {
    return 1U << ((hash >> shift) & kMask);
  }
  // Bits set in `x`, branch-free and inline: std::popcount compiles to a
  // libgcc call unless the build targets CPUs with POPCNT, which baseline
  // x86-64 does not guarantee.
  static uint32_t CountBits(uint32_t x) {
    x -= (x >> 1) & 0x55555555U;
    x = (x & 0x33333333U) + ((x >> 2) & 0x33333333U);
    x = (x + (x >> 4)) & 0x0F0F0F0FU;
    return (x * 0x01010101U) >> 24;
  }
  static size_t Index(uint32_t bitmap, uint32_t bit) { return CountBits(bitmap & (bit - 1)); }
  // g++ 12 -O2 leaves std::string_view's operator== as a call to compare();
  // equality needs only the sizes and memcmp.
  static bool SameKey(std::string_view a, std::string_view b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
  }
  static void Count(size_t* copied, size_t n) {
    if (copied != nullptr) {
      *copied += n;
    }
  }

  static Slot Entry(uint64_t hash, Ptr value) {
    Slot slot;
    slot.hash = hash;
    slot.value = std::move(value);
    return slot;
  }
  static Slot Subtree(uint32_t bitmap, uint32_t size, Slots slots) {
    Slot slot;
    if (size > 0) {
      slot.bitmap = bitmap;
      slot.size = size;
      slot.sub = std::move(slots);
    }
    return slot;
  }
  // A copy of `tree`'s slots, with an empty one inserted at `gap` unless gap
  // is kNoGap.
  static Slots CopySlots(const Slot& tree, size_t gap, size_t* copied) {
    const size_t n = tree.size;
    Count(copied, n);
    Slots out = std::make_shared<Slot[]>(gap == kNoGap ? n : n + 1);
    for (size_t i = 0, j = 0; i < n; ++i, ++j) {
      if (j == gap) {
        ++j;
      }
      out[j] = tree.sub[i];
    }
    return out;
  }
  static constexpr size_t kNoGap = static_cast<size_t>(-1);

  // A subtree holding two entries whose hashes agree below `shift`.
  static Slot Pair(unsigned shift, Slot a, Slot b) {
    if (shift >= 64) {
      Slots slots = std::make_shared<Slot[]>(2);
      slots[0] = std::move(a);
      slots[1] = std::move(b);
      return Subtree(0, 2, std::move(slots));
    }
    const uint32_t bit_a = Bit(a.hash, shift);
    const uint32_t bit_b = Bit(b.hash, shift);
    if (bit_a == bit_b) {
      Slots slots = std::make_shared<Slot[]>(1);
      slots[0] = Pair(shift + kBits, std::move(a), std::move(b));
      return Subtree(bit_a, 1, std::move(slots));
    }
    Slots slots = std::make_shared<Slot[]>(2);
    slots[bit_a < bit_b ? 0 : 1] = std::move(a);
    slots[bit_a < bit_b ? 1 : 0] = std::move(b);
    return Subtree(bit_a | bit_b, 2, std::move(slots));
  }

  // `tree` with `value` set under `key`.
  static Slot SetIn(const Slot& tree, unsigned shift, uint64_t hash, std::string_view key,
                    Ptr value, bool& inserted, size_t* copied) {
    if (shift >= 64) {
      for (uint32_t i = 0; i < tree.size; ++i) {
        if (KeyOf{}(*tree.sub[i].value) == key) {
          Slots slots = CopySlots(tree, kNoGap, copied);
          slots[i].value = std::move(value);
          return Subtree(0, tree.size, std::move(slots));
        }
      }
      Slots slots = CopySlots(tree, tree.size, copied);
      slots[tree.size] = Entry(hash, std::move(value));
      inserted = true;
      return Subtree(0, tree.size + 1, std::move(slots));
    }
    const uint32_t bit = Bit(hash, shift);
    const size_t index = Index(tree.bitmap, bit);
    if ((tree.bitmap & bit) == 0) {
      Slots slots = CopySlots(tree, index, copied);
      slots[index] = Entry(hash, std::move(value));
      inserted = true;
      return Subtree(tree.bitmap | bit, tree.size + 1, std::move(slots));
    }
    Slots slots = CopySlots(tree, kNoGap, copied);
    Slot& slot = slots[index];
    if (slot.value == nullptr) {
      slot = SetIn(slot, shift + kBits, hash, key, std::move(value), inserted, copied);
    } else if (slot.hash == hash && KeyOf{}(*slot.value) == key) {
      slot.value = std::move(value);
    } else {
      slot = Pair(shift + kBits, std::move(slot), Entry(hash, std::move(value)));
      inserted = true;
    }
    return Subtree(tree.bitmap, tree.size, std::move(slots));
  }

  // `tree` without `key`, which is known to be in it. An empty result is a
  // slot with neither value nor sub.
  static Slot EraseIn(const Slot& tree, unsigned shift, uint64_t hash, std::string_view key,
                      size_t* copied) {
    size_t index = 0;
    uint32_t bitmap = 0;
    if (shift >= 64) {
      while (KeyOf{}(*tree.sub[index].value) != key) {
        ++index;
      }
    } else {
      const uint32_t bit = Bit(hash, shift);
      index = Index(tree.bitmap, bit);
      bitmap = tree.bitmap & ~bit;
      const Slot& slot = tree.sub[index];
      if (slot.sub != nullptr) {
        Slot rest = EraseIn(slot, shift + kBits, hash, key, copied);
        // A subtree keeps at least one entry; left with exactly one, it
        // collapses into that entry.
        Slots slots = CopySlots(tree, kNoGap, copied);
        slots[index] = rest.size == 1 && rest.sub[0].value != nullptr ? rest.sub[0] : rest;
        return Subtree(tree.bitmap, tree.size, std::move(slots));
      }
    }
    const uint32_t size = tree.size - 1;
    Count(copied, tree.size);
    Slots slots = size > 0 ? std::make_shared<Slot[]>(size) : nullptr;
    for (size_t i = 0, j = 0; i < tree.size; ++i) {
      if (i != index) {
        slots[j++] = tree.sub[i];
      }
    }
    return Subtree(bitmap, size, std::move(slots));
  }

  template <typename Fn>
  static void ForEachIn(const Slot& tree, Fn& fn) {
    for (uint32_t i = 0; i < tree.size; ++i) {
      const Slot& slot = tree.sub[i];
      if (slot.value != nullptr) {
        fn(slot.value);
      } else {
        ForEachIn(slot, fn);
      }
    }
  }

  Slot root_;  // a subtree, or empty
  size_t size_ = 0;
};

}  // namespace schedext::cluster::internal

#endif  // SCHEDEXT_SRC_CLUSTER_PERSISTENT_MAP_H_
