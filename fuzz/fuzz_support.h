// Shared by the fuzz targets in fuzz/: a check that fails loudly in both
// builds (libFuzzer reports the abort as a crash and keeps the input; the
// corpus-replay program exits non-zero, so its CTest case fails), and the way
// the server fills a request buffer.
//
// Every target defines LLVMFuzzerTestOneInput. Under clang with
// -fsanitize=fuzzer that is a libFuzzer target; under g++ it links with
// replay_main.cc and runs over the corpus files named on the command line.
#ifndef SCHEDEXT_FUZZ_FUZZ_SUPPORT_H_
#define SCHEDEXT_FUZZ_FUZZ_SUPPORT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "schedext/wire/request_buffer.h"

namespace schedext::fuzz {

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* condition,
                                     const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n  %s\n", file, line, condition,
               detail.c_str());
  std::abort();
}

// The input bytes as text.
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The body as the server receives it: Reserve(Content-Length), then socket
// reads land at Tail() and are Commit()ed. The reads are cut at sizes derived
// from the body so every input takes the same path on replay. A fresh buffer
// is exactly body + padding long, so AddressSanitizer flags any read past the
// padding the decoder relies on.
inline wire::RequestBuffer ReceiveBody(std::string_view body) {
  wire::RequestBuffer buffer;
  buffer.Reserve(body.size());
  size_t read = 0;
  size_t chunk = 1 + (body.empty() ? 0 : static_cast<unsigned char>(body.front()) % 61);
  while (read < body.size()) {
    const size_t n = std::min(chunk, body.size() - read);
    std::copy_n(body.data() + read, n, buffer.Tail(n));
    buffer.Commit(n);
    read += n;
    chunk = chunk * 2 + 1;
  }
  return buffer;
}

// `view` lies within the body held by `buffer` (an empty view always does).
inline bool Inside(std::string_view view, const wire::RequestBuffer& buffer) {
  const char* begin = buffer.data();
  const char* end = begin + buffer.size();
  return view.empty() || (view.data() >= begin && view.data() + view.size() <= end);
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF).
inline bool IsUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned lo = 0x80;
    unsigned hi = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      lo = c == 0xE0 ? 0xA0 : 0x80;
      hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      lo = c == 0xF0 ? 0x90 : 0x80;
      hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
      return false;
    }
    if (text.size() - i <= n) {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
        return false;
      }
    }
    i += n + 1;
  }
  return true;
}

}  // namespace schedext::fuzz

// Aborts with `detail` (a std::string expression, evaluated only on failure)
// when `condition` is false.
#define SCHEDEXT_FUZZ_CHECK(condition, detail)                                          \
  do {                                                                                  \
    if (!(condition)) {                                                                 \
      ::schedext::fuzz::CheckFailed(__FILE__, __LINE__, #condition, std::string(detail)); \
    }                                                                                   \
  } while (false)

#endif  // SCHEDEXT_FUZZ_FUZZ_SUPPORT_H_
