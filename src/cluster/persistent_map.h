// PersistentMap: an immutable hash map from a string key to
// std::shared_ptr<const V>, as a hash array mapped trie (HAMT). Set and Erase
// return a new map that shares every untouched subtree with the old one: an
// update copies one path of at most ceil(64 / 5) small nodes (≈ 3–4 levels of
// ≤ 32 pointers at 15,000–150,000 entries), never the whole map. That is what
// lets the cluster cache publish a new snapshot per watch event.
//
// Keys are views into the values (KeyOf(const V&) -> std::string_view), so a
// lookup by std::string_view allocates nothing.
//
// Internal to the cluster layer (src/, not include/). Thread-safety: a map is
// an immutable value; copies may be read from many threads at once, and
// shared_ptr keeps shared subtrees alive for every map that uses them.
#ifndef SCHEDEXT_SRC_CLUSTER_PERSISTENT_MAP_H_
#define SCHEDEXT_SRC_CLUSTER_PERSISTENT_MAP_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace schedext::cluster::internal {

template <typename V, typename KeyOf>
class PersistentMap {
 public:
  using Ptr = std::shared_ptr<const V>;

  PersistentMap() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The value stored under `key`, or nullptr.
  const Ptr* Find(std::string_view key) const {
    const uint64_t hash = Hash(key);
    const Node* node = root_.get();
    for (unsigned shift = 0; node != nullptr; shift += kBits) {
      if (shift >= 64) {
        for (const Child& child : node->children) {
          if (KeyOf{}(*child.value) == key) {
            return &child.value;
          }
        }
        return nullptr;
      }
      const uint32_t bit = 1u << ((hash >> shift) & kMask);
      if ((node->bitmap & bit) == 0) {
        return nullptr;
      }
      const Child& child = node->children[Index(node->bitmap, bit)];
      if (child.value) {
        return KeyOf{}(*child.value) == key ? &child.value : nullptr;
      }
      node = child.sub.get();
    }
    return nullptr;
  }

  // A map with `value` stored under its key (inserted or replaced).
  // `copied`, when given, is increased by the pointer slots this copied.
  PersistentMap Set(Ptr value, size_t* copied = nullptr) const {
    const std::string_view key = KeyOf{}(*value);
    bool inserted = false;
    PersistentMap out;
    out.root_ = SetIn(root_.get(), 0, Hash(key), key, std::move(value), inserted, copied);
    out.size_ = size_ + (inserted ? 1 : 0);
    return out;
  }

  // A map without `key` (the same map when it is absent).
  PersistentMap Erase(std::string_view key, size_t* copied = nullptr) const {
    if (Find(key) == nullptr) {
      return *this;
    }
    PersistentMap out;
    out.root_ = EraseIn(root_.get(), 0, Hash(key), key, copied);
    out.size_ = size_ - 1;
    return out;
  }

  // Calls fn(const Ptr&) for every value, in no particular order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    ForEachIn(root_.get(), fn);
  }

 private:
  static constexpr unsigned kBits = 5;
  static constexpr uint64_t kMask = 31;

  struct Node;
  // Exactly one of value (an entry) and sub (a subtree) is set.
  struct Child {
    Ptr value;
    std::shared_ptr<const Node> sub;
  };
  // A branch (bitmap + compressed children) or, below 64 bits of hash, a
  // bucket of colliding entries (bitmap unused).
  struct Node {
    uint32_t bitmap = 0;
    std::vector<Child> children;
  };

  static uint64_t Hash(std::string_view key) {
    return static_cast<uint64_t>(std::hash<std::string_view>{}(key));
  }
  static size_t Index(uint32_t bitmap, uint32_t bit) {
    return static_cast<size_t>(std::popcount(bitmap & (bit - 1)));
  }
  static void Count(size_t* copied, size_t n) {
    if (copied != nullptr) {
      *copied += n;
    }
  }

  // A subtree holding two entries whose hashes agree below `shift`.
  static std::shared_ptr<const Node> Pair(unsigned shift, uint64_t hash_a, Ptr a, uint64_t hash_b,
                                          Ptr b) {
    auto node = std::make_shared<Node>();
    if (shift >= 64) {
      node->children.push_back({std::move(a), nullptr});
      node->children.push_back({std::move(b), nullptr});
      return node;
    }
    const uint32_t bit_a = 1u << ((hash_a >> shift) & kMask);
    const uint32_t bit_b = 1u << ((hash_b >> shift) & kMask);
    if (bit_a == bit_b) {
      node->bitmap = bit_a;
      node->children.push_back(
          {nullptr, Pair(shift + kBits, hash_a, std::move(a), hash_b, std::move(b))});
      return node;
    }
    node->bitmap = bit_a | bit_b;
    if (bit_a < bit_b) {
      node->children.push_back({std::move(a), nullptr});
      node->children.push_back({std::move(b), nullptr});
    } else {
      node->children.push_back({std::move(b), nullptr});
      node->children.push_back({std::move(a), nullptr});
    }
    return node;
  }

  static std::shared_ptr<const Node> SetIn(const Node* node, unsigned shift, uint64_t hash,
                                           std::string_view key, Ptr value, bool& inserted,
                                           size_t* copied) {
    auto out = node != nullptr ? std::make_shared<Node>(*node) : std::make_shared<Node>();
    Count(copied, out->children.size());
    if (shift >= 64) {
      for (Child& child : out->children) {
        if (KeyOf{}(*child.value) == key) {
          child.value = std::move(value);
          return out;
        }
      }
      out->children.push_back({std::move(value), nullptr});
      inserted = true;
      return out;
    }
    const uint32_t bit = 1u << ((hash >> shift) & kMask);
    const size_t index = Index(out->bitmap, bit);
    if ((out->bitmap & bit) == 0) {
      out->bitmap |= bit;
      out->children.insert(out->children.begin() + static_cast<std::ptrdiff_t>(index),
                           Child{std::move(value), nullptr});
      inserted = true;
      return out;
    }
    Child& child = out->children[index];
    if (child.value) {
      const std::string_view existing = KeyOf{}(*child.value);
      if (existing == key) {
        child.value = std::move(value);
        return out;
      }
      child.sub =
          Pair(shift + kBits, Hash(existing), std::move(child.value), hash, std::move(value));
      child.value = nullptr;
      inserted = true;
      return out;
    }
    child.sub =
        SetIn(child.sub.get(), shift + kBits, hash, key, std::move(value), inserted, copied);
    return out;
  }

  // `key` is known to be present under `node`. Returns nullptr for an empty result.
  static std::shared_ptr<const Node> EraseIn(const Node* node, unsigned shift, uint64_t hash,
                                             std::string_view key, size_t* copied) {
    auto out = std::make_shared<Node>(*node);
    Count(copied, out->children.size());
    if (shift >= 64) {
      for (size_t i = 0; i < out->children.size(); ++i) {
        if (KeyOf{}(*out->children[i].value) == key) {
          out->children.erase(out->children.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
      return out->children.empty() ? nullptr : out;
    }
    const uint32_t bit = 1u << ((hash >> shift) & kMask);
    const size_t index = Index(out->bitmap, bit);
    Child& child = out->children[index];
    if (child.sub) {
      child.sub = EraseIn(child.sub.get(), shift + kBits, hash, key, copied);
      if (child.sub != nullptr) {
        // A subtree left with a single entry collapses into it.
        if (child.sub->children.size() == 1 && child.sub->children[0].value) {
          child.value = child.sub->children[0].value;
          child.sub = nullptr;
        }
        return out;
      }
    }
    out->bitmap &= ~bit;
    out->children.erase(out->children.begin() + static_cast<std::ptrdiff_t>(index));
    return out->children.empty() ? nullptr : out;
  }

  template <typename Fn>
  static void ForEachIn(const Node* node, Fn& fn) {
    if (node == nullptr) {
      return;
    }
    for (const Child& child : node->children) {
      if (child.value) {
        fn(child.value);
      } else {
        ForEachIn(child.sub.get(), fn);
      }
    }
  }

  std::shared_ptr<const Node> root_;
  size_t size_ = 0;
};

}  // namespace schedext::cluster::internal

#endif  // SCHEDEXT_SRC_CLUSTER_PERSISTENT_MAP_H_
