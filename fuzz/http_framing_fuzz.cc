// Fuzz target: the listener's HTTP/1.1 request framing (src/server/http_framing.h)
// on one input taken as the bytes a client sends on one connection: request
// heads and bodies, pipelined. It drives ScanHead, ParseRequestHead and
// ChunkedDecoder the way a session does, request after request, until the
// bytes run out or a request is refused.
//
// Checks, beyond sanitizer reports:
// * ScanHead resumed over a head arriving in pieces finds what one scan of the
//   whole finds; a head it delimits ends at its first blank line and fits the
//   limit;
// * a refusal has one of the documented statuses and a one-line message; an
//   accepted head's views lie inside it (or are the literal "/"), hold no CR,
//   LF or space, and its Content-Length respects the body limit;
// * a chunked body decoded in pieces gives the same bytes, state, status and
//   consumed count as one Feed of the whole, never more than the limit, and a
//   finished decoder consumes nothing more.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "server/http_framing.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::fuzz {
namespace {

namespace http = server::http;

// Small limits, so that fuzz-sized inputs reach 413 and 431.
constexpr size_t kMaxHeaderBytes = 2048;
constexpr size_t kMaxHeaderFields = 24;
constexpr uint64_t kMaxBodyBytes = 16 << 10;
constexpr size_t kMaxChunkLine = 256;
constexpr int kMaxRequests = 64;

// Deterministic piece sizes from the input, so a failure replays the same way.
class Pieces {
 public:
  explicit Pieces(uint64_t seed) : state_(seed | 1) {}
  size_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return 1 + static_cast<size_t>(state_ % 23);
  }

 private:
  uint64_t state_;
};

uint64_t Seed(std::string_view input) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : input) {
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return h;
}

bool OneLine(std::string_view text) {
  return text.find('\n') == std::string_view::npos && text.find('\r') == std::string_view::npos;
}

bool Within(std::string_view view, std::string_view outer) {
  return view.empty() ||
         (view.data() >= outer.data() && view.data() + view.size() <= outer.data() + outer.size());
}

http::HeadScan CheckScan(std::string_view rest, Pieces& pieces) {
  const http::HeadScan whole = http::ScanHead(rest, kMaxHeaderBytes);
  // The same bytes as a session sees them arrive, a prefix at a time: a scan
  // that resumes where the previous one stopped answers as a fresh one.
  size_t have = 0;
  size_t scanned = 0;
  http::HeadScan first;
  while (true) {
    have = std::min(rest.size(), have + pieces.Next());
    const std::string_view prefix = rest.substr(0, have);
    const http::HeadScan fresh = http::ScanHead(prefix, kMaxHeaderBytes);
    const http::HeadScan resumed = http::ScanHead(prefix, kMaxHeaderBytes, scanned);
    SCHEDEXT_FUZZ_CHECK(resumed.skip == fresh.skip && resumed.length == fresh.length &&
                            resumed.too_large == fresh.too_large &&
                            resumed.bare_lf == fresh.bare_lf,
                        "resumed scan differs from a fresh one at " + std::to_string(have));
    scanned = have;
    if (fresh.length != 0 || fresh.too_large || fresh.bare_lf || have == rest.size()) {
      first = fresh;
      break;
    }
  }
  if (whole.length != 0) {
    SCHEDEXT_FUZZ_CHECK(first.length == whole.length && first.skip == whole.skip,
                        "the head found in pieces differs from the one in the whole");
    const std::string_view head = rest.substr(whole.skip, whole.length);
    SCHEDEXT_FUZZ_CHECK(head.size() <= kMaxHeaderBytes && head.size() >= 4, "head too long");
    SCHEDEXT_FUZZ_CHECK(head.find("\r\n\r\n") == head.size() - 4, "head not cut at its end");
    SCHEDEXT_FUZZ_CHECK(!whole.too_large, "both delimited and too large");
  }
  return whole;
}

void CheckHead(std::string_view head, const http::HeadResult& result,
               const http::RequestHead& out) {
  if (!result.ok()) {
    const int s = result.status;
    SCHEDEXT_FUZZ_CHECK(s == 400 || s == 413 || s == 415 || s == 417 || s == 431 || s == 501 ||
                            s == 505,
                        "status " + std::to_string(s));
    SCHEDEXT_FUZZ_CHECK(!result.error.empty() && OneLine(result.error), result.error);
    return;
  }
  for (std::string_view view : {out.method, out.target, out.path}) {
    // An absolute-form target without a path ("http://host?q") has the path
    // "/", which is a literal, not a view of the head.
    SCHEDEXT_FUZZ_CHECK(!view.empty() && (Within(view, head) || view == "/"),
                        "view outside the head: " + std::string(view));
    SCHEDEXT_FUZZ_CHECK(OneLine(view) && view.find(' ') == std::string_view::npos,
                        std::string(view));
  }
  SCHEDEXT_FUZZ_CHECK(out.path.front() == '/' || out.path == "*", std::string(out.path));
  SCHEDEXT_FUZZ_CHECK(out.minor_version == 0 || out.minor_version == 1, "minor version");
  if (out.content_type.has_value()) {
    SCHEDEXT_FUZZ_CHECK(Within(*out.content_type, head) && OneLine(*out.content_type),
                        "content type view");
  }
  if (out.framing == http::BodyFraming::kContentLength) {
    SCHEDEXT_FUZZ_CHECK(out.content_length <= kMaxBodyBytes, "Content-Length over the limit");
  }
  if (out.framing == http::BodyFraming::kChunked) {
    SCHEDEXT_FUZZ_CHECK(out.minor_version == 1, "chunked HTTP/1.0");
  }
}

// Decodes a chunked body at the start of `rest` twice, whole and in pieces;
// returns the bytes it used, or nothing when the connection stops here.
bool DecodeChunked(std::string_view rest, Pieces& pieces, size_t& used) {
  http::ChunkedDecoder whole(kMaxBodyBytes, kMaxChunkLine);
  wire::RequestBuffer whole_body;
  const http::ChunkedDecoder::Result one = whole.Feed(rest, whole_body);

  http::ChunkedDecoder split(kMaxBodyBytes, kMaxChunkLine);
  wire::RequestBuffer split_body;
  size_t consumed = 0;
  size_t offered = 0;
  http::ChunkedDecoder::Result last;
  // Each piece is what arrived and was not consumed yet, as a session keeps it.
  while (true) {
    offered = std::min(rest.size(), offered + pieces.Next());
    last = split.Feed(rest.substr(consumed, offered - consumed), split_body);
    SCHEDEXT_FUZZ_CHECK(last.consumed <= offered - consumed, "consumed more than offered");
    consumed += last.consumed;
    if (last.state != http::ChunkedDecoder::State::kNeedMore || offered == rest.size()) {
      break;
    }
  }
  SCHEDEXT_FUZZ_CHECK(last.state == one.state && last.status == one.status,
                      "state in pieces differs: " + std::to_string(static_cast<int>(last.state)) +
                          "/" + std::to_string(last.status) + " vs " +
                          std::to_string(static_cast<int>(one.state)) + "/" +
                          std::to_string(one.status));
  SCHEDEXT_FUZZ_CHECK(split_body.view() == whole_body.view(), "body in pieces differs");
  SCHEDEXT_FUZZ_CHECK(whole_body.size() <= kMaxBodyBytes, "body over the limit");
  if (one.state == http::ChunkedDecoder::State::kError) {
    SCHEDEXT_FUZZ_CHECK(one.status == 400 || one.status == 413, std::to_string(one.status));
    SCHEDEXT_FUZZ_CHECK(!one.error.empty() && OneLine(one.error), std::string(one.error));
    return false;
  }
  if (one.state != http::ChunkedDecoder::State::kDone) {
    SCHEDEXT_FUZZ_CHECK(one.consumed == rest.size(), "stopped early without an answer");
    return false;
  }
  SCHEDEXT_FUZZ_CHECK(consumed == one.consumed, "consumed in pieces differs");
  SCHEDEXT_FUZZ_CHECK(whole.body_bytes() == whole_body.size(), "body_bytes differs");
  const http::ChunkedDecoder::Result after = whole.Feed(rest.substr(one.consumed), whole_body);
  SCHEDEXT_FUZZ_CHECK(after.state == http::ChunkedDecoder::State::kDone && after.consumed == 0,
                      "a finished decoder consumed more");
  used = one.consumed;
  return true;
}

}  // namespace
}  // namespace schedext::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedext;
  namespace http = server::http;
  std::string_view rest = fuzz::AsText(data, size);
  fuzz::Pieces pieces(fuzz::Seed(rest));
  http::HeadLimits limits;
  limits.max_header_bytes = fuzz::kMaxHeaderBytes;
  limits.max_header_fields = fuzz::kMaxHeaderFields;
  limits.max_body_bytes = fuzz::kMaxBodyBytes;

  for (int request = 0; request < fuzz::kMaxRequests && !rest.empty(); ++request) {
    const http::HeadScan scan = fuzz::CheckScan(rest, pieces);
    if (scan.length == 0) {
      break;  // incomplete (the session reads more) or too large (431)
    }
    // The head is copied out, as a session that reads into its own buffer has
    // it: AddressSanitizer then sees any read past its end.
    const std::string head_bytes(rest.substr(scan.skip, scan.length));
    const std::vector<char> exact(head_bytes.begin(), head_bytes.end());
    const std::string_view head(exact.data(), exact.size());
    http::RequestHead out;
    const http::HeadResult result = http::ParseRequestHead(head, limits, out);
    fuzz::CheckHead(head, result, out);
    if (!result.ok()) {
      break;  // refused: the connection closes
    }
    rest.remove_prefix(scan.skip + scan.length);
    if (out.framing == http::BodyFraming::kContentLength) {
      if (out.content_length > rest.size()) {
        break;
      }
      const wire::RequestBuffer body =
          fuzz::ReceiveBody(rest.substr(0, static_cast<size_t>(out.content_length)));
      SCHEDEXT_FUZZ_CHECK(body.size() == out.content_length, "body size");
      rest.remove_prefix(static_cast<size_t>(out.content_length));
    } else if (out.framing == http::BodyFraming::kChunked) {
      size_t used = 0;
      if (!fuzz::DecodeChunked(rest, pieces, used)) {
        break;
      }
      rest.remove_prefix(used);
    }
    if (!out.keep_alive) {
      break;
    }
  }
  return 0;
}
