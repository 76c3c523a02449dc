// Finding the bytes a JSON string cannot hold unescaped, fast: the encoder
// quotes thousands of node names per reply, the decoder reads NodeNames
// straight from the body when none of them needs unescaping.
//
// Internal to the wire layer (src/, not include/).
#ifndef SCHEDEXT_SRC_WIRE_JSON_SCAN_H_
#define SCHEDEXT_SRC_WIRE_JSON_SCAN_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace schedext::wire::internal {

// True for the bytes a JSON string cannot hold as they are: '"', '\\' and
// control characters.
constexpr bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

// True when one of the 8 bytes of `w` needs escaping: '"', '\\' and bytes
// below 0x20 found with the usual zero-byte bit tricks (exact as a yes/no
// answer per word).
inline bool WordNeedsEscape(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const uint64_t quote = w ^ (kOnes * '"');
  const uint64_t backslash = w ^ (kOnes * '\\');
  const uint64_t flagged = ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
                           ((w - kOnes * 0x20) & ~w);
  return (flagged & kHigh) != 0;
}

inline uint64_t LoadWord(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

#if defined(__SSE2__)
// Bit k set: byte k of the 16 at `p` needs escaping (or, with kNonAscii, is
// 0x80 or above). SSE2 is part of x86-64.
template <bool kNonAscii = false>
inline unsigned EscapeMask16(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i max_control = _mm_set1_epi8(0x1f);
  const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(v, max_control), max_control);
  const __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
  __m128i flagged = _mm_or_si128(_mm_or_si128(quote, backslash), control);
  if constexpr (kNonAscii) {
    flagged = _mm_or_si128(flagged, v);  // the high bit is what movemask reads
  }
  return static_cast<unsigned>(_mm_movemask_epi8(flagged));
}

// Over the 64 bytes at `p`: bit k of `quotes` set when byte k is '"', of
// `other` when it is '\\', a control byte or (with kNonAscii) 0x80 or above.
struct Masks64 {
  uint64_t quotes = 0;
  uint64_t other = 0;
};
template <bool kNonAscii>
inline Masks64 ScanMasks64(const char* p) {
  const __m128i max_control = _mm_set1_epi8(0x1f);
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  Masks64 m;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    __m128i other = _mm_or_si128(_mm_cmpeq_epi8(v, backslash),
                                 _mm_cmpeq_epi8(_mm_max_epu8(v, max_control), max_control));
    if constexpr (kNonAscii) {
      other = _mm_or_si128(other, v);  // the high bit is what movemask reads
    }
    m.quotes |= static_cast<uint64_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote))) << (16 * k);
    m.other |= static_cast<uint64_t>(_mm_movemask_epi8(other)) << (16 * k);
  }
  return m;
}

// Reads elements of a string array in the compact form Go's encoder writes
// ("a","b",...) from the opening quote at `p`: every one that is plain and
// followed by `,"`. Returns the opening quote of the first element it did
// not read (`p` when none), for the general loop to go on from; never reads
// the last element. 64 bytes per step, each byte looked at once: a 5,000-name
// body is ~3,600 steps and one bit per quote, where a search per name costs
// a few 16-byte steps and a mispredicted exit.
template <bool kNonAscii>
const char* ScanCompactStrings(const char* p, const char* end,
                               std::vector<std::string_view>& out) {
  const char* open = p;  // the opening quote of the element being read
  for (const char* block = p; end - block >= 64; block += 64) {
    const Masks64 m = ScanMasks64<kNonAscii>(block);
    // Only the quotes before the first other byte: nothing from it on is read
    // here, whether it sits in a string or after the array.
    uint64_t quotes = m.other == 0 ? m.quotes : m.quotes & ((m.other & (0 - m.other)) - 1);
    for (; quotes != 0; quotes &= quotes - 1) {
      const char* at = block + std::countr_zero(quotes);
      if (at == open) {
        continue;
      }
      // The first quote after `open` closes the element.
      if (end - at < 3 || at[1] != ',' || at[2] != '"') {
        return open;
      }
      out.emplace_back(open + 1, static_cast<size_t>(at - open - 1));
      open = at + 2;
    }
    if (m.other != 0) {
      return open;
    }
  }
  return open;
}
#endif

// Index of the first byte of `text` that needs escaping, or text.size().
// Every reply quotes thousands of 35-45-byte node names: with SSE2, 16 bytes
// per step and the index straight from the mask; otherwise (and for short
// text) 8 bytes per step and a byte loop only in a flagged word. The last
// block overlaps the one before instead of a byte loop over the tail.
// kNonAscii: bytes of 0x80 and above count as flagged too.
template <bool kNonAscii = false>
inline size_t FirstEscape(std::string_view text) {
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const auto flagged_word = [](uint64_t w) {
    return WordNeedsEscape(w) || (kNonAscii && (w & kHigh) != 0);
  };
  const char* p = text.data();
  const size_t n = text.size();
  size_t i = 0;
#if defined(__SSE2__)
  if (n >= 16) {
    for (; i + 16 <= n; i += 16) {
      const unsigned mask = EscapeMask16<kNonAscii>(p + i);
      if (mask != 0) {
        return i + static_cast<size_t>(std::countr_zero(mask));
      }
    }
    if (i == n) {
      return n;
    }
    // Bytes before i are clean, so the first set bit is in [i, n).
    const unsigned mask = EscapeMask16<kNonAscii>(p + n - 16);
    return mask != 0 ? n - 16 + static_cast<size_t>(std::countr_zero(mask)) : n;
  }
#endif
  if (n >= 8) {
    for (; i + 8 <= n; i += 8) {
      if (flagged_word(LoadWord(p + i))) {
        break;
      }
    }
    if (i + 8 > n && (i == n || !flagged_word(LoadWord(p + n - 8)))) {
      return n;
    }
  }
  for (; i < n; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (NeedsEscape(c) || (kNonAscii && c >= 0x80)) {
      return i;
    }
  }
  return n;
}

inline const char* SkipJsonSpace(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
    ++p;
  }
  return p;
}

// Reads the JSON array at `open_bracket` (up to `end`) when every element is a
// string that needs no unescaping (and, with kNonAscii, is ASCII), appending
// views of their text to `out`; returns the position after the closing
// bracket, or nullptr for any other shape (`out` then holds a part).
template <bool kNonAscii = false>
const char* ScanPlainStringArray(const char* open_bracket, const char* end,
                                 std::vector<std::string_view>& out) {
  const char* p = open_bracket;
  if (p >= end || *p != '[') {
    return nullptr;
  }
  p = SkipJsonSpace(p + 1, end);
  if (p < end && *p == ']') {
    return p + 1;
  }
  while (p < end && *p == '"') {
#if defined(__SSE2__)
    p = ScanCompactStrings<kNonAscii>(p, end, out);
#endif
    const char* text = p + 1;
    const size_t length =
        FirstEscape<kNonAscii>(std::string_view(text, static_cast<size_t>(end - text)));
    p = text + length;
    if (p >= end || *p != '"') {
      return nullptr;  // an escape, a control (or non-ASCII) byte: not plain
    }
    out.emplace_back(text, length);
    p = SkipJsonSpace(p + 1, end);
    if (p < end && *p == ']') {
      return p + 1;
    }
    if (p >= end || *p != ',') {
      return nullptr;
    }
    p = SkipJsonSpace(p + 1, end);
  }
  return nullptr;
}

// True when only the root object's closing brace (and whitespace) is left.
inline bool OnlyRootCloseLeft(const char* p, const char* end) {
  p = SkipJsonSpace(p, end);
  return p < end && *p == '}' && SkipJsonSpace(p + 1, end) == end;
}

}  // namespace schedext::wire::internal

#endif  // SCHEDEXT_SRC_WIRE_JSON_SCAN_H_
