// RequestBuffer: a growable byte buffer that always keeps kJsonPadding zeroed
// bytes after the body, so simdjson can parse it in place.
#include "schedext/wire/request_buffer.h"

#include <algorithm>
#include <cstring>

namespace schedext::wire {
namespace {

// Allocates `capacity` bytes and copies the first `size` bytes of `old` into it.
std::unique_ptr<char[]> Reallocate(const char* old, size_t size, size_t capacity) {
  std::unique_ptr<char[]> fresh(new char[capacity]);
  if (size > 0) {
    std::memcpy(fresh.get(), old, size);
  }
  return fresh;
}

}  // namespace

RequestBuffer RequestBuffer::CopyOf(std::string_view body) {
  RequestBuffer buffer;
  buffer.Reserve(body.size());
  buffer.Append(body.data(), body.size());
  return buffer;
}

void RequestBuffer::Reserve(size_t bytes) {
  const size_t needed = bytes + kJsonPadding;
  if (needed <= capacity_ && data_ != nullptr) {
    return;
  }
  data_ = Reallocate(data_.get(), size_, needed);
  capacity_ = needed;
  // Only the padding: zeroing the whole reservation would fault in every page
  // of a 59 MB body before the first byte arrives, and Append writes them anyway.
  std::memset(data_.get() + size_, 0, kJsonPadding);
}

void RequestBuffer::Append(const char* data, size_t length) {
  char* tail = Tail(length);
  if (length > 0) {
    std::memcpy(tail, data, length);
  }
  Commit(length);
}

char* RequestBuffer::Tail(size_t bytes) {
  const size_t needed = size_ + bytes + kJsonPadding;
  if (needed > capacity_ || data_ == nullptr) {
    // Grow geometrically so a chunked body costs amortised O(1) per byte.
    const size_t grown = std::max(needed, capacity_ + capacity_ / 2);
    data_ = Reallocate(data_.get(), size_, grown);
    capacity_ = grown;
  }
  return data_.get() + size_;
}

void RequestBuffer::Commit(size_t bytes) {
  size_ += bytes;
  // simdjson reads up to kJsonPadding bytes past the end: keep them zeroed, as
  // they may hold the bytes of an earlier, longer body.
  std::memset(data_.get() + size_, 0, kJsonPadding);
}

void RequestBuffer::ShrinkTo(size_t max_bytes) {
  // Freeing drops the content too: this is called between requests.
  if (capacity_ > max_bytes) {
    data_.reset();
    capacity_ = 0;
    size_ = 0;
  }
}

}  // namespace schedext::wire
