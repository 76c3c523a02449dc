// FlatPersistentMap: an immutable hash map from a string key to
// std::shared_ptr<const V>, as one open-addressing table (linear probing,
// at most 70 % full) whose slots live in copy-on-write blocks: 32 slots per
// leaf, 32 leaves per middle block, one root array. Set and Erase return a
// new map that shares every untouched block with the old one: an update
// copies the root (capacity / 1024 pointers), one middle block and the one
// or two leaves it writes, never the whole table; only a growth (the table
// doubles when it would pass 70 %) copies every slot.
//
// Why not PersistentMap's trie for the nodes: a request resolves thousands of
// node names, and a trie lookup is a chain of dependent loads through small
// subtree arrays scattered over the heap (measured: Resolve ≈ 40 % of a
// 5,000-name filter's CPU, mostly stalled on those loads). Here a lookup
// computes the slot's address from the hash (the root and middle blocks are
// a few KB and stay in L1), and the slots of 5,000 nodes are ≈ 200 KB of
// 24-byte {hash, value} pairs read in place: one cache line per lookup
// before the value itself, whose key is compared only when the whole hash
// agrees.
//
// Keys are views into the values (KeyOf(const V&) -> std::string_view). The
// interface is PersistentMap's (Find, FindMany, Set, Erase, ForEach).
//
// Internal to the cluster layer (src/, not include/). Thread-safety: a map is
// an immutable value; copies may be read from many threads at once, and
// shared_ptr keeps shared blocks alive for every map that uses them.
#ifndef SCHEDEXT_SRC_CLUSTER_FLAT_PERSISTENT_MAP_H_
#define SCHEDEXT_SRC_CLUSTER_FLAT_PERSISTENT_MAP_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/key_hash.h"

namespace schedext::cluster::internal {

template <typename V, typename KeyOf, typename Hasher = KeyHash>
class FlatPersistentMap {
 public:
  using Ptr = std::shared_ptr<const V>;

  FlatPersistentMap() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Slots in the table (0 until the first Set).
  size_t capacity() const { return root_ == nullptr ? 0 : mask_ + 1; }

  // The value stored under `key`, or nullptr.
  const Ptr* Find(std::string_view key) const {
    if (size_ == 0) {
      return nullptr;
    }
    const uint64_t hash = Hasher{}(key);
    return FindFrom(key, hash, hash & mask_);
  }

  // Calls found(i, Find(keys[i])) for every i, faster than one Find after
  // another: in groups, every lookup's slot is requested before any is read,
  // then every matching value before any key is compared, so their cache
  // misses overlap instead of queueing one behind another.
  template <typename Found>
  void FindMany(std::span<const std::string_view> keys, Found&& found) const {
    if (size_ == 0) {
      for (size_t i = 0; i < keys.size(); ++i) {
        found(i, static_cast<const Ptr*>(nullptr));
      }
      return;
    }
    constexpr size_t kGroup = 16;
    uint64_t hashes[kGroup];
    size_t positions[kGroup];
    const Slot* at[kGroup];  // the slot holding that hash; nullptr: absent
    for (size_t base = 0; base < keys.size(); base += kGroup) {
      const size_t n = std::min(kGroup, keys.size() - base);
      for (size_t i = 0; i < n; ++i) {
        hashes[i] = Hasher{}(keys[base + i]);
        positions[i] = hashes[i] & mask_;
        at[i] = SlotAt(positions[i]);
        __builtin_prefetch(at[i]);
      }
      for (size_t i = 0; i < n; ++i) {
        // Probe on from the home slot (the next slots are mostly in the same
        // line) to the one with this hash, or to an empty one.
        size_t pos = positions[i];
        const Slot* slot = at[i];
        while (slot != nullptr && slot->value != nullptr && slot->hash != hashes[i]) {
          pos = (pos + 1) & mask_;
          slot = SlotAt(pos);
        }
        positions[i] = pos;
        at[i] = slot != nullptr && slot->value != nullptr ? slot : nullptr;
        if (at[i] != nullptr) {
          __builtin_prefetch(at[i]->value.get());
        }
      }
      for (size_t i = 0; i < n; ++i) {
        const std::string_view key = keys[base + i];
        const Slot* slot = at[i];
        if (slot == nullptr) {
          found(base + i, static_cast<const Ptr*>(nullptr));
        } else if (SameKey(KeyOf{}(*slot->value), key)) {
          found(base + i, &slot->value);
        } else {
          // Another key with the same 64-bit hash: probe on past it.
          found(base + i, FindFrom(key, hashes[i], (positions[i] + 1) & mask_));
        }
      }
    }
  }

  // A map with `value` stored under its key (inserted or replaced).
  // `copied`, when given, is increased by the slots and block pointers this
  // copied.
  FlatPersistentMap Set(Ptr value, size_t* copied = nullptr) const {
    const std::string_view key = KeyOf{}(*value);
    const uint64_t hash = Hasher{}(key);
    if (size_ > 0) {
      size_t pos = hash & mask_;
      for (const Slot* slot = SlotAt(pos); slot != nullptr && slot->value != nullptr;
           pos = (pos + 1) & mask_, slot = SlotAt(pos)) {
        if (slot->hash == hash && SameKey(KeyOf{}(*slot->value), key)) {
          FlatPersistentMap out = *this;
          Writer(*this, out, copied).At(pos).value = std::move(value);
          return out;
        }
      }
    }
    FlatPersistentMap out = (size_ + 1) * 10 > capacity() * 7 ? Grown(copied) : *this;
    Writer writer(*this, out, copied);
    writer.Insert(hash, std::move(value));
    ++out.size_;
    return out;
  }

  // A map without `key` (the same map when it is absent). Later entries of
  // the probe run move back into the gap (no tombstones), so lookups never
  // slow down with churn.
  FlatPersistentMap Erase(std::string_view key, size_t* copied = nullptr) const {
    if (size_ == 0) {
      return *this;
    }
    const uint64_t hash = Hasher{}(key);
    const Ptr* found = FindFrom(key, hash, hash & mask_);
    if (found == nullptr) {
      return *this;
    }
    size_t hole = hash & mask_;
    while (&SlotAt(hole)->value != found) {
      hole = (hole + 1) & mask_;
    }
    FlatPersistentMap out = *this;
    Writer writer(*this, out, copied);
    writer.At(hole) = Slot{};
    for (size_t pos = (hole + 1) & mask_;; pos = (pos + 1) & mask_) {
      const Slot* slot = out.SlotAt(pos);
      if (slot == nullptr || slot->value == nullptr) {
        break;
      }
      // The entry at `pos` may fill the hole unless its home lies
      // (cyclically) after the hole, up to `pos`.
      const size_t home = slot->hash & mask_;
      const bool stays = hole < pos ? (home > hole && home <= pos) : (home > hole || home <= pos);
      if (!stays) {
        Slot moved = std::move(writer.At(pos));
        writer.At(pos) = Slot{};
        writer.At(hole) = std::move(moved);
        hole = pos;
      }
    }
    --out.size_;
    return out;
  }

  // Calls fn(const Ptr&) for every value, in no particular order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (root_ == nullptr) {
      return;
    }
    for (const std::shared_ptr<Mid>& mid : *root_) {
      for (size_t l = 0; mid != nullptr && l < kMidLeaves; ++l) {
        const Leaf* leaf = mid->leaves[l].get();
        for (size_t s = 0; leaf != nullptr && s < kLeafSlots; ++s) {
          if (leaf->slots[s].value != nullptr) {
            fn(leaf->slots[s].value);
          }
        }
      }
    }
  }

 private:
  static constexpr size_t kLeafBits = 5;
  static constexpr size_t kLeafSlots = size_t{1} << kLeafBits;
  static constexpr size_t kMidBits = 5;
  static constexpr size_t kMidLeaves = size_t{1} << kMidBits;
  static constexpr size_t kMidSlots = kLeafSlots * kMidLeaves;

  // Empty: value == nullptr.
  struct Slot {
    uint64_t hash = 0;
    Ptr value;
  };
  // Blocks are written only while a Writer builds the map that first holds
  // them; once that map is returned they are shared and never change. A null
  // block is all empty slots.
  struct Leaf {
    Slot slots[kLeafSlots];
  };
  struct Mid {
    std::shared_ptr<Leaf> leaves[kMidLeaves];
  };
  using Root = std::vector<std::shared_ptr<Mid>>;

  // Copy-on-write access to `out`'s slots: the first write under a block
  // that `out` still shares with `base` copies that block (and the root).
  class Writer {
   public:
    Writer(const FlatPersistentMap& base, FlatPersistentMap& out, size_t* copied)
        : base_(base), out_(out), copied_(copied) {}

    Slot& At(size_t pos) {
      if (root_ == nullptr) {
        root_ = out_.root_ == base_.root_ ? std::make_shared<Root>(*out_.root_)
                                          : std::const_pointer_cast<Root>(out_.root_);
        if (out_.root_ == base_.root_) {
          Count(root_->size());
        }
        out_.root_ = root_;
      }
      std::shared_ptr<Mid>& mid = (*root_)[pos / kMidSlots];
      const Mid* base_mid = BaseMid(pos);
      if (mid == nullptr) {
        mid = std::make_shared<Mid>();
      } else if (mid.get() == base_mid) {
        mid = std::make_shared<Mid>(*mid);
        Count(kMidLeaves);
      }
      std::shared_ptr<Leaf>& leaf = mid->leaves[(pos / kLeafSlots) % kMidLeaves];
      if (leaf == nullptr) {
        leaf = std::make_shared<Leaf>();
      } else if (base_mid != nullptr && leaf == base_mid->leaves[(pos / kLeafSlots) % kMidLeaves]) {
        leaf = std::make_shared<Leaf>(*leaf);
        Count(kLeafSlots);
      }
      return leaf->slots[pos % kLeafSlots];
    }

    // Stores a key that is not in the table at its first free slot.
    void Insert(uint64_t hash, Ptr value) {
      size_t pos = hash & out_.mask_;
      for (const Slot* slot = out_.SlotAt(pos); slot != nullptr && slot->value != nullptr;
           slot = out_.SlotAt(pos)) {
        pos = (pos + 1) & out_.mask_;
      }
      Slot& slot = At(pos);
      slot.hash = hash;
      slot.value = std::move(value);
    }

   private:
    // base_'s middle block for `pos`, when base_ has the same table.
    const Mid* BaseMid(size_t pos) const {
      if (base_.root_ == nullptr || base_.mask_ != out_.mask_) {
        return nullptr;
      }
      return (*base_.root_)[pos / kMidSlots].get();
    }
    void Count(size_t n) {
      if (copied_ != nullptr) {
        *copied_ += n;
      }
    }

    const FlatPersistentMap& base_;
    FlatPersistentMap& out_;
    size_t* copied_;
    std::shared_ptr<Root> root_;  // out_'s root, once it is out_'s own
  };

  // The slot at `pos`; nullptr when its block is absent (an empty slot).
  const Slot* SlotAt(size_t pos) const {
    const Mid* mid = (*root_)[pos / kMidSlots].get();
    if (mid == nullptr) {
      return nullptr;
    }
    const Leaf* leaf = mid->leaves[(pos / kLeafSlots) % kMidLeaves].get();
    return leaf == nullptr ? nullptr : &leaf->slots[pos % kLeafSlots];
  }

  // Find(key) with the probe starting at `pos` (requires size_ > 0).
  const Ptr* FindFrom(std::string_view key, uint64_t hash, size_t pos) const {
    for (const Slot* slot = SlotAt(pos); slot != nullptr && slot->value != nullptr;
         pos = (pos + 1) & mask_, slot = SlotAt(pos)) {
      if (slot->hash == hash && SameKey(KeyOf{}(*slot->value), key)) {
        return &slot->value;
      }
    }
    return nullptr;
  }

  // This map in a table of twice the capacity (or the first table), no block
  // shared with this one.
  FlatPersistentMap Grown(size_t* copied) const {
    FlatPersistentMap out;
    const size_t capacity = std::max(kMidSlots, 2 * this->capacity());
    out.root_ = std::make_shared<Root>(capacity / kMidSlots);
    out.mask_ = capacity - 1;
    out.size_ = size_;
    const FlatPersistentMap empty;
    Writer writer(empty, out, nullptr);
    ForEach([&](const Ptr& value) { writer.Insert(Hasher{}(KeyOf{}(*value)), value); });
    if (copied != nullptr) {
      *copied += size_;
    }
    return out;
  }

  // Inline, where memcmp is a call through the PLT and a dispatch on the
  // length for every one of a request's thousands of names: 16 bytes per
  // step and a last step overlapping the one before, so names of 33-48 bytes
  // (most of them) take the same three steps and the loop's exit is
  // predicted.
  static bool SameKey(std::string_view a, std::string_view b) {
    const size_t n = a.size();
    if (n != b.size()) {
      return false;
    }
    const char* x = a.data();
    const char* y = b.data();
    if (n >= 16) {
      uint64_t diff = 0;
      for (size_t i = 0; i + 16 < n; i += 16) {
        diff |= (Word(x + i) ^ Word(y + i)) | (Word(x + i + 8) ^ Word(y + i + 8));
      }
      return (diff | (Word(x + n - 16) ^ Word(y + n - 16)) | (Word(x + n - 8) ^ Word(y + n - 8))) ==
             0;
    }
    if (n >= 8) {
      return ((Word(x) ^ Word(y)) | (Word(x + n - 8) ^ Word(y + n - 8))) == 0;
    }
    return n == 0 || std::memcmp(x, y, n) == 0;
  }
  static uint64_t Word(const char* p) {
    uint64_t w;
    std::memcpy(&w, p, sizeof(w));
    return w;
  }

  std::shared_ptr<const Root> root_;  // null until the first Set
  size_t mask_ = 0;                   // capacity - 1
  size_t size_ = 0;
};

}  // namespace schedext::cluster::internal

#endif  // SCHEDEXT_SRC_CLUSTER_FLAT_PERSISTENT_MAP_H_
