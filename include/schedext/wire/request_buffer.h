// RequestBuffer: a received request body with the zeroed padding simdjson reads
// past the end of the document, so the body is parsed in place, never copied.
//
// One buffer per server worker, reused across requests (capacity is kept
// unless ShrinkTo() says otherwise). Thread-safety: none; one owner at a time.
#ifndef SCHEDEXT_WIRE_REQUEST_BUFFER_H_
#define SCHEDEXT_WIRE_REQUEST_BUFFER_H_

#include <cstddef>
#include <memory>
#include <string_view>

namespace schedext::wire {

// Bytes that must stay readable after the body (simdjson's SIMDJSON_PADDING).
inline constexpr size_t kJsonPadding = 64;

class RequestBuffer {
 public:
  RequestBuffer() = default;
  RequestBuffer(RequestBuffer&&) noexcept = default;
  RequestBuffer& operator=(RequestBuffer&&) noexcept = default;

  // A buffer holding a copy of `body` (tests, benchmarks).
  static RequestBuffer CopyOf(std::string_view body);

  // Empties the buffer, keeping its memory.
  void Clear() { size_ = 0; }
  // Makes room for `bytes` of body (plus padding) without changing the size.
  void Reserve(size_t bytes);
  // Appends body bytes, growing as needed.
  void Append(const char* data, size_t length);
  // For filling the buffer in place (e.g. straight from a socket): room for at
  // least `bytes` more body bytes, at data() + size(); Commit(n) then adds the
  // first n of them to the body.
  char* Tail(size_t bytes);
  void Commit(size_t bytes);
  // Frees the memory when it exceeds `max_bytes` (after a very large request).
  void ShrinkTo(size_t max_bytes);

  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  // Allocated bytes; always >= size() + kJsonPadding once anything is reserved.
  size_t capacity() const { return capacity_; }
  std::string_view view() const { return {data_.get(), size_}; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace schedext::wire

#endif  // SCHEDEXT_WIRE_REQUEST_BUFFER_H_
