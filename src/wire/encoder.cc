// Hand-written encoders for the extender replies (see encoder.h). Every key is
// written with its exact Go name, in the declaration order of the Go structs.
#include "schedext/wire/encoder.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "wire/json_scan.h"

namespace schedext::wire {
namespace {

using internal::FirstEscape;
using internal::NeedsEscape;

constexpr char kHexDigits[] = "0123456789abcdef";

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

// A reply is assembled in a stack buffer and appended to the output a few
// kilobytes at a time: a std::string append per name costs more than the copy.
class Piece {
 public:
  static constexpr size_t kCapacity = 4096;
  // False when `n` more bytes do not fit.
  bool Fits(size_t n) const { return kCapacity - size_ >= n; }
  // Flushes unless `n` more bytes fit (they may still not, after a flush).
  void Reserve(size_t n, std::string& out) {
    if (!Fits(n)) {
      FlushTo(out);
    }
  }
  void Put(std::string_view text) {
    // A name the request left out is a default string_view, whose data() is
    // null: memcpy from null is undefined even for 0 bytes.
    if (text.empty()) {
      return;
    }
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

// Room PutJsonString keeps in the piece for what follows a string.
constexpr size_t kSlack = 32;

// Appends `text` quoted and escaped: into `piece` when it needs no escaping and
// fits with kSlack to spare, else through `out` (flushing `piece` first).
void PutJsonString(std::string_view text, Piece& piece, std::string& out) {
  const size_t first = FirstEscape(text);
  if (first == text.size() && piece.Fits(text.size() + 2 + kSlack)) {
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

// The JSON literal of a name its buffer holds between '"' bytes (quotes
// included, nothing to escape: ExtenderArgsView::names_quoted).
std::string_view QuotedLiteral(std::string_view name) {
  return {name.data() - 1, name.size() + 2};
}

// Runs of quoted names (see QuotedLiteral) shorter than this are copied into
// the reply; longer ones are spliced when the writer can (a run of this size
// saves more copying than an extra write buffer costs).
constexpr size_t kMinNameSpliceBytes = 8192;

// The NodeNames array's elements for quoted names: each run of names that
// follow each other in their buffer after a single ',' is one span of it,
// from the first name's opening quote to the last one's closing quote.
void AppendQuotedNames(std::span<const std::string_view> names, std::string& out,
                       std::vector<ReplySplice>* splices) {
  for (size_t i = 0; i < names.size();) {
    const char* const start = names[i].data() - 1;
    const char* end = names[i].data() + names[i].size() + 1;  // past the closing quote
    size_t j = i + 1;
    // The pointers are compared first: equal, they say the next name's opening
    // quote is end[1], so end[0] is a byte of the same buffer.
    while (j < names.size() && names[j].data() == end + 2 && end[0] == ',') {
      end = names[j].data() + names[j].size() + 1;
      ++j;
    }
    if (i != 0) {
      out.push_back(',');
    }
    const auto bytes = static_cast<size_t>(end - start);
    if (splices != nullptr && bytes >= kMinNameSpliceBytes) {
      splices->push_back({out.size(), std::string_view(start, bytes)});
    } else {
      out.append(start, bytes);
    }
    i = j;
  }
}

void AppendInt(int64_t value, std::string& out) {
  char digits[24];
  const std::to_chars_result result = std::to_chars(digits, digits + sizeof(digits), value);
  out.append(digits, result.ptr);
}

// {"n1":"reason",...} in the given order; {} when empty. `names_quoted`: see
// FilterResultView.
void AppendFailedMap(std::span<const FailedNode> failed, bool names_quoted, std::string& out) {
  size_t bytes = 2;
  for (const FailedNode& node : failed) {
    bytes += node.name.size() + node.reason.size() + 6;
  }
  out.reserve(out.size() + bytes);
  Piece piece;
  piece.Put('{');
  bool first = true;
  for (const FailedNode& node : failed) {
    piece.Reserve(node.name.size() + node.reason.size() + 6 + 2 * kSlack, out);
    if (!first) {
      piece.Put(',');
    }
    first = false;
    if (names_quoted && piece.Fits(node.name.size() + 2 + kSlack)) {
      piece.Put(QuotedLiteral(node.name));
    } else {
      PutJsonString(node.name, piece, out);
    }
    piece.Put(':');
    PutJsonString(node.reason, piece, out);
  }
  piece.Put('}');
  piece.FlushTo(out);
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
  AppendFilterResult(result, out, nullptr);
}

void AppendFilterResult(const FilterResultView& result, std::string& out,
                        std::vector<ReplySplice>* splices) {
  if (result.mode == NodeMode::kFullNodes && splices != nullptr) {
    out.append(R"({"Nodes":{"metadata":{},"items":[)");
    const size_t first_splice = splices->size();
    for (std::string_view raw : result.passing) {
      if (splices->size() > first_splice) {
        // The previous run continues when this node follows it after a
        // single ',': the span then grows over both, separator included.
        ReplySplice& last = splices->back();
        const char* end = last.bytes.data() + last.bytes.size();
        if (end + 1 == raw.data() && *end == ',') {
          last.bytes = std::string_view(last.bytes.data(), last.bytes.size() + 1 + raw.size());
          continue;
        }
      }
      if (splices->size() > first_splice) {
        out.push_back(',');
      }
      splices->push_back({out.size(), raw});
    }
    out.append(R"(]},"NodeNames":null,"FailedNodes":)");
  } else if (result.mode == NodeMode::kFullNodes) {
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
    if (result.names_quoted) {
      AppendQuotedNames(result.passing, out, splices);
    } else {
      Piece piece;
      bool first = true;
      for (std::string_view name : result.passing) {
        piece.Reserve(name.size() + 3 + kSlack, out);
        if (!first) {
          piece.Put(',');
        }
        first = false;
        PutJsonString(name, piece, out);
      }
      piece.FlushTo(out);
    }
    out.append(R"(],"FailedNodes":)");
  }
  AppendFailedMap(result.failed, result.names_quoted, out);
  out.append(R"(,"FailedAndUnresolvableNodes":)");
  AppendFailedMap(result.unresolvable, result.names_quoted, out);
  out.append(R"(,"Error":""})");
}

size_t SplicedSize(std::string_view text, std::span<const ReplySplice> splices) {
  size_t size = text.size();
  for (const ReplySplice& splice : splices) {
    size += splice.bytes.size();
  }
  return size;
}

void AppendSpliced(std::string_view text, std::span<const ReplySplice> splices,
                   std::string& out) {
  out.reserve(out.size() + SplicedSize(text, splices));
  size_t from = 0;
  for (const ReplySplice& splice : splices) {
    out.append(text.substr(from, splice.at - from));
    out.append(splice.bytes);
    from = splice.at;
  }
  out.append(text.substr(from));
}

void AppendFilterError(std::string_view error, std::string& out) {
  out.append(
      R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":)");
  AppendJsonString(error, out);
  out.push_back('}');
}

void KeepScoresAboveLowest(std::vector<HostScore>& scores) {
  if (scores.empty()) {
    return;
  }
  int64_t lowest = scores.front().score;
  for (const HostScore& s : scores) {
    lowest = std::min(lowest, s.score);
  }
  size_t kept = 0;
  for (const HostScore& s : scores) {
    if (s.score != lowest) {
      scores[kept++] = {s.host, s.score - lowest};
    }
  }
  scores.resize(kept);
}

void AppendHostPriorityList(std::span<const HostScore> scores, std::string& out) {
  AppendHostPriorityList(scores, out, false);
}

void AppendHostPriorityList(std::span<const HostScore> scores, std::string& out,
                            bool hosts_quoted) {
  constexpr std::string_view kHost = R"({"Host":)";
  constexpr std::string_view kScore = R"(,"Score":)";
  // An entry but its host: the keys, the longest int64, '}' and ','.
  constexpr size_t kEntry = kHost.size() + kScore.size() + 20 + 2;
  size_t bytes = 2;
  for (const HostScore& score : scores) {
    bytes += score.host.size() + kHost.size() + kScore.size() + 6;
  }
  out.reserve(out.size() + bytes);
  Piece piece;
  piece.Put('[');
  bool first = true;
  for (const HostScore& score : scores) {
    const size_t literal = score.host.size() + 2;
    piece.Reserve(literal + kEntry + kSlack, out);
    if (!first) {
      piece.Put(',');
    }
    first = false;
    piece.Put(kHost);
    if (hosts_quoted && piece.Fits(literal + kSlack)) {
      piece.Put(QuotedLiteral(score.host));
    } else {
      PutJsonString(score.host, piece, out);  // leaves room for what follows
    }
    piece.Put(kScore);
    piece.PutInt(score.score);
    piece.Put('}');
  }
  piece.Put(']');
  piece.FlushTo(out);
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
