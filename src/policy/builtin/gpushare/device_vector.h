// DeviceVector: per-device values of one node (GpuUsage::used, ::pods), held
// inline for the first kInlineDevices devices so that the per-node Filter and
// Score read them from the node's GPU state itself, in the cache lines that
// state occupies, instead of following a pointer to a separate heap block
// for every node. A node with more devices (up to kMaxGpuDevices) keeps all
// its values in a heap vector instead; behaviour is the same at any size.
//
// The interface is the subset of std::vector that the accounting, the
// recorded-state codec and the tests use; it compares equal to a
// std::vector of the same values.
//
// Thread-safety: a plain value type.
#ifndef SCHEDEXT_POLICY_BUILTIN_GPUSHARE_DEVICE_VECTOR_H_
#define SCHEDEXT_POLICY_BUILTIN_GPUSHARE_DEVICE_VECTOR_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace schedext::policy::gpushare {

// Kubernetes GPU nodes carry at most 16 devices in practice (8 is common).
inline constexpr size_t kInlineDevices = 16;

template <typename T>
class DeviceVector {
 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  DeviceVector() = default;
  DeviceVector(std::initializer_list<T> values) { Assign(values.begin(), values.end()); }
  // Implicit, as assigning a std::vector to the member it replaces was.
  DeviceVector(const std::vector<T>& values)  // NOLINT(google-explicit-constructor)
  {
    Assign(values.data(), values.data() + values.size());
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* data() const { return size_ <= kInlineDevices ? inline_ : heap_.data(); }
  T* data() { return size_ <= kInlineDevices ? inline_ : heap_.data(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& operator[](size_t i) { return data()[i]; }
  const T& back() const { return data()[size_ - 1]; }
  T& back() { return data()[size_ - 1]; }

  // Grows with copies of `value` or drops the values past `n`.
  void resize(size_t n, T value = T()) {
    if (n == size_) {
      return;
    }
    if (n > kInlineDevices) {
      if (size_ <= kInlineDevices) {
        heap_.assign(inline_, inline_ + size_);
      }
      heap_.resize(n, value);
    } else {
      if (size_ > kInlineDevices) {
        std::copy(heap_.begin(), heap_.begin() + n, inline_);
        heap_ = std::vector<T>();
      } else if (n > size_) {
        std::fill(inline_ + size_, inline_ + n, value);
      }
      // Values past size_ in inline_ are unspecified; keep them zero so that
      // copies carry no stale data.
      std::fill(inline_ + n, inline_ + kInlineDevices, T());
    }
    size_ = n;
  }
  void assign(size_t n, T value) {
    clear();
    resize(n, value);
  }
  void push_back(T value) { resize(size_ + 1, value); }
  void pop_back() { resize(size_ - 1); }
  void clear() { resize(0); }

  friend bool operator==(const DeviceVector& a, const DeviceVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const DeviceVector& a, const std::vector<T>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void Assign(const T* first, const T* last) {
    clear();
    const size_t n = static_cast<size_t>(last - first);
    resize(n);
    std::copy(first, last, data());
  }

  // Number of values: in inline_ while <= kInlineDevices, else in heap_.
  size_t size_ = 0;
  T inline_[kInlineDevices] = {};
  std::vector<T> heap_;
};

}  // namespace schedext::policy::gpushare

#endif  // SCHEDEXT_POLICY_BUILTIN_GPUSHARE_DEVICE_VECTOR_H_
