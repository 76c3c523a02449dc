// Hand-written encoders for the extender replies (see encoder.h). Every key is
// written with its exact Go name, in the declaration order of the Go structs.
#include "schedext/wire/encoder.h"

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace schedext::wire {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// True for the bytes AppendJsonString must escape.
constexpr bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

// True when one of the 8 bytes of `w` needs escaping: '"', '\\' and bytes
// below 0x20 found with the usual zero-byte bit tricks (exact as a yes/no
// answer per word).
bool WordNeedsEscape(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const uint64_t quote = w ^ (kOnes * '"');
  const uint64_t backslash = w ^ (kOnes * '\\');
  const uint64_t flagged = ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
                           ((w - kOnes * 0x20) & ~w);
  return (flagged & kHigh) != 0;
}

uint64_t LoadWord(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

#if defined(__SSE2__)
// Bit k set: byte k of the 16 at `p` needs escaping. SSE2 is part of x86-64.
unsigned EscapeMask16(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i max_control = _mm_set1_epi8(0x1f);
  const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(v, max_control), max_control);
  const __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
  return static_cast<unsigned>(
      _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)));
}
#endif

// Index of the first byte of `text` that needs escaping, or text.size().
// Every reply quotes thousands of 35-45-byte node names: with SSE2, 16 bytes
// per step and the index straight from the mask; otherwise (and for short
// text) 8 bytes per step and a byte loop only in a flagged word. The last
// block overlaps the one before instead of a byte loop over the tail.
size_t FirstEscape(std::string_view text) {
  const char* p = text.data();
  const size_t n = text.size();
  size_t i = 0;
#if defined(__SSE2__)
  if (n >= 16) {
    for (; i + 16 <= n; i += 16) {
      const unsigned mask = EscapeMask16(p + i);
      if (mask != 0) {
        return i + static_cast<size_t>(std::countr_zero(mask));
      }
    }
    if (i == n) {
      return n;
    }
    // Bytes before i are clean, so the first set bit is in [i, n).
    const unsigned mask = EscapeMask16(p + n - 16);
    return mask != 0 ? n - 16 + static_cast<size_t>(std::countr_zero(mask)) : n;
  }
#endif
  if (n >= 8) {
    for (; i + 8 <= n; i += 8) {
      if (WordNeedsEscape(LoadWord(p + i))) {
        break;
      }
    }
    if (i + 8 > n && (i == n || !WordNeedsEscape(LoadWord(p + n - 8)))) {
      return n;
    }
  }
  for (; i < n; ++i) {
    if (NeedsEscape(static_cast<unsigned char>(p[i]))) {
      return i;
    }
  }
  return n;
}

// The bytes of `text` from `from` on, escaped (no quotes).
void AppendEscapedTail(std::string_view text, size_t from, std::string& out) {
  size_t run_start = from;
  for (size_t i = from; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!NeedsEscape(c)) {
      continue;
    }
    out.append(text.data() + run_start, i - run_start);
    run_start = i + 1;
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default: {
        const char escape[] = {'\\', 'u', '0', '0', kHexDigits[c >> 4], kHexDigits[c & 0xF]};
        out.append(escape, sizeof(escape));
        break;
      }
    }
  }
  out.append(text.data() + run_start, text.size() - run_start);
}

// Small pieces of a reply are assembled in a stack buffer and appended to the
// output in one call: a std::string append per piece costs more than the copy.
class Piece {
 public:
  static constexpr size_t kCapacity = 256;
  // False when `n` more bytes do not fit.
  bool Fits(size_t n) const { return kCapacity - size_ >= n; }
  void Put(std::string_view text) {
    std::memcpy(buf_ + size_, text.data(), text.size());
    size_ += text.size();
  }
  void Put(char c) { buf_[size_++] = c; }
  void PutInt(int64_t value) {
    size_ = static_cast<size_t>(std::to_chars(buf_ + size_, buf_ + kCapacity, value).ptr - buf_);
  }
  void FlushTo(std::string& out) {
    out.append(buf_, size_);
    size_ = 0;
  }

 private:
  char buf_[kCapacity];
  size_t size_ = 0;
};

// Appends `text` quoted and escaped: into `piece` when it needs no escaping and
// fits, else through `out` (flushing `piece` first).
void PutJsonString(std::string_view text, Piece& piece, std::string& out) {
  const size_t first = FirstEscape(text);
  if (first == text.size() && piece.Fits(text.size() + 2 + 32)) {
    piece.Put('"');
    piece.Put(text);
    piece.Put('"');
    return;
  }
  piece.FlushTo(out);
  out.push_back('"');
  out.append(text.data(), first);
  AppendEscapedTail(text, first, out);
  out.push_back('"');
}

void AppendInt(int64_t value, std::string& out) {
  char digits[24];
  const std::to_chars_result result = std::to_chars(digits, digits + sizeof(digits), value);
  out.append(digits, result.ptr);
}

// {"n1":"reason",...} in the given order; {} when empty.
void AppendFailedMap(std::span<const FailedNode> failed, std::string& out) {
  size_t bytes = 2;
  for (const FailedNode& node : failed) {
    bytes += node.name.size() + node.reason.size() + 6;
  }
  out.reserve(out.size() + bytes);
  out.push_back('{');
  Piece piece;
  bool first = true;
  for (const FailedNode& node : failed) {
    if (!first) {
      piece.Put(',');
    }
    first = false;
    PutJsonString(node.name, piece, out);
    piece.Put(':');
    PutJsonString(node.reason, piece, out);
    piece.FlushTo(out);
  }
  out.push_back('}');
}

}  // namespace

void AppendJsonString(std::string_view text, std::string& out) {
  const size_t first = FirstEscape(text);
  out.push_back('"');
  out.append(text.data(), first);
  if (first != text.size()) {
    AppendEscapedTail(text, first, out);
  }
  out.push_back('"');
}

void AppendFilterResult(const FilterResultView& result, std::string& out) {
  if (result.mode == NodeMode::kFullNodes) {
    size_t bytes = 128;
    for (std::string_view raw : result.passing) {
      bytes += raw.size() + 1;
    }
    out.reserve(out.size() + bytes);
    out.append(R"({"Nodes":{"metadata":{},"items":[)");
    bool first = true;
    for (std::string_view raw : result.passing) {
      if (!first) {
        out.push_back(',');
      }
      first = false;
      out.append(raw);
    }
    out.append(R"(]},"NodeNames":null,"FailedNodes":)");
  } else {
    size_t bytes = 128;
    for (std::string_view name : result.passing) {
      bytes += name.size() + 3;
    }
    out.reserve(out.size() + bytes);
    out.append(R"({"Nodes":null,"NodeNames":[)");
    Piece piece;
    bool first = true;
    for (std::string_view name : result.passing) {
      if (!first) {
        piece.Put(',');
      }
      first = false;
      PutJsonString(name, piece, out);
      piece.FlushTo(out);
    }
    out.append(R"(],"FailedNodes":)");
  }
  AppendFailedMap(result.failed, out);
  out.append(R"(,"FailedAndUnresolvableNodes":)");
  AppendFailedMap(result.unresolvable, out);
  out.append(R"(,"Error":""})");
}

void AppendFilterError(std::string_view error, std::string& out) {
  out.append(
      R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":)");
  AppendJsonString(error, out);
  out.push_back('}');
}

void AppendHostPriorityList(std::span<const HostScore> scores, std::string& out) {
  constexpr std::string_view kHost = R"({"Host":)";
  constexpr std::string_view kScore = R"(,"Score":)";
  size_t bytes = 2;
  for (const HostScore& score : scores) {
    bytes += score.host.size() + kHost.size() + kScore.size() + 6;
  }
  out.reserve(out.size() + bytes);
  out.push_back('[');
  Piece piece;
  bool first = true;
  for (const HostScore& score : scores) {
    if (!first) {
      piece.Put(',');
    }
    first = false;
    piece.Put(kHost);
    PutJsonString(score.host, piece, out);  // leaves room for what follows
    piece.Put(kScore);
    piece.PutInt(score.score);
    piece.Put('}');
    piece.FlushTo(out);
  }
  out.push_back(']');
}

void AppendPreemptionResult(std::span<const MetaVictimsEntry> nodes, std::string& out) {
  out.append(R"({"NodeNameToMetaVictims":{)");
  bool first_node = true;
  for (const MetaVictimsEntry& node : nodes) {
    if (!first_node) {
      out.push_back(',');
    }
    first_node = false;
    AppendJsonString(node.node, out);
    out.append(R"(:{"Pods":[)");
    bool first_pod = true;
    for (std::string_view uid : node.uids) {
      if (!first_pod) {
        out.push_back(',');
      }
      first_pod = false;
      out.append(R"({"UID":)");
      AppendJsonString(uid, out);
      out.push_back('}');
    }
    out.append(R"(],"NumPDBViolations":)");
    AppendInt(node.num_pdb_violations, out);
    out.push_back('}');
  }
  out.append("}}");
}

void AppendBindingResult(std::string_view error, std::string& out) {
  out.append(R"({"Error":)");
  AppendJsonString(error, out);
  out.push_back('}');
}

void AppendErrorBody(std::string_view error, std::string& out) {
  out.append(R"({"Error":)");
  AppendJsonString(error, out);
  out.push_back('}');
}

}  // namespace schedext::wire
