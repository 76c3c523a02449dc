// The pure framing rules of server/http_framing.h, case by case: the status
// each malformed or ambiguous head gets, what an accepted head yields, and the
// chunked decoder fed whole, byte by byte and broken.
#include "server/http_framing.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace schedext::server::http {
namespace {

constexpr std::string_view kHost = "Host: x\r\n";

std::string Head(std::string_view request_line, std::string_view fields) {
  return std::string(request_line) + "\r\n" + std::string(fields) + "\r\n";
}

TEST(HttpFramingTest, HeadRefusalsGetTheirStatus) {
  struct Case {
    std::string name;
    std::string head;
    int want;
  };
  const std::string post = "POST /filter HTTP/1.1";
  const std::vector<Case> cases = {
      {"conflicting Content-Length",
       Head(post, std::string(kHost) + "Content-Length: 5\r\nContent-Length: 6\r\n"), 400},
      {"plus sign", Head(post, std::string(kHost) + "Content-Length: +5\r\n"), 400},
      {"negative", Head(post, std::string(kHost) + "Content-Length: -5\r\n"), 400},
      {"list", Head(post, std::string(kHost) + "Content-Length: 5, 5\r\n"), 400},
      {"hex", Head(post, std::string(kHost) + "Content-Length: 0x5\r\n"), 400},
      {"empty length", Head(post, std::string(kHost) + "Content-Length: \r\n"), 400},
      {"20 digits", Head(post, std::string(kHost) + "Content-Length: 99999999999999999999\r\n"),
       400},
      {"over the body limit", Head(post, std::string(kHost) + "Content-Length: 1001\r\n"), 413},
      {"gzip transfer coding", Head(post, std::string(kHost) + "Transfer-Encoding: gzip\r\n"), 501},
      {"gzip then chunked", Head(post, std::string(kHost) + "Transfer-Encoding: gzip, chunked\r\n"),
       501},
      {"chunked then gzip",
       Head(post, std::string(kHost) + "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n"),
       501},
      {"chunked twice", Head(post, std::string(kHost) + "Transfer-Encoding: chunked, chunked\r\n"),
       501},
      {"length and chunked",
       Head(post, std::string(kHost) + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), 400},
      {"chunked in HTTP/1.0", Head("POST /filter HTTP/1.0", "Transfer-Encoding: chunked\r\n"), 400},
      {"obs-fold", Head(post, std::string(kHost) + "X-A: 1\r\n  continued\r\n"), 400},
      {"obs-fold with tab", Head(post, std::string(kHost) + "X-A: 1\r\n\tcontinued\r\n"), 400},
      {"space before colon", Head(post, std::string(kHost) + "Content-Length : 5\r\n"), 400},
      {"no colon", Head(post, std::string(kHost) + "NoColonHere\r\n"), 400},
      {"empty name", Head(post, std::string(kHost) + ": value\r\n"), 400},
      {"control char in value", Head(post, std::string(kHost) + "X-A: a\x01z\r\n"), 400},
      {"bare CR in value", Head(post, std::string(kHost) + "X-A: a\rz\r\n"), 400},
      {"bare LF in value", Head(post, std::string(kHost) + "X-A: a\nX-B: z\r\n"), 400},
      {"no Host", Head(post, "Content-Length: 0\r\n"), 400},
      {"two Hosts", Head(post, "Host: a\r\nHost: b\r\n"), 400},
      {"gzip body", Head(post, std::string(kHost) + "Content-Encoding: gzip\r\n"), 415},
      {"identity then br", Head(post, std::string(kHost) + "Content-Encoding: identity, br\r\n"),
       415},
      {"Expect other", Head(post, std::string(kHost) + "Expect: something\r\n"), 417},
      {"HTTP/2.0", Head("POST /filter HTTP/2.0", kHost), 505},
      {"HTTP/1.2", Head("POST /filter HTTP/1.2", kHost), 505},
      {"lower-case version", Head("POST /filter http/1.1", kHost), 400},
      {"missing version", Head("POST /filter", kHost), 400},
      {"double space", Head("POST  /filter HTTP/1.1", kHost), 400},
      {"space in target", Head("POST /fil ter HTTP/1.1", kHost), 400},
      {"relative target", Head("POST filter HTTP/1.1", kHost), 400},
      {"asterisk with GET", Head("GET * HTTP/1.1", kHost), 400},
      {"bad method", Head("PO(ST /filter HTTP/1.1", kHost), 400},
      {"empty line inside", "GET / HTTP/1.1\r\nHost: x\r\n\r\nX: y\r\n\r\n", 400},
      {"no blank line", "GET / HTTP/1.1\r\nHost: x\r\n", 400},
      {"two Content-Types",
       Head(post, std::string(kHost) + "Content-Type: a/json\r\nContent-Type: b/json\r\n"), 400},
  };
  HeadLimits limits;
  limits.max_body_bytes = 1000;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RequestHead head;
    const HeadResult r = ParseRequestHead(c.head, limits, head);
    EXPECT_EQ(r.status, c.want) << r.error;
    EXPECT_FALSE(r.error.empty());
    // Messages quote request bytes, but never raw control characters.
    for (char ch : r.error) {
      EXPECT_GE(static_cast<unsigned char>(ch), 0x20) << r.error;
    }
  }
}

TEST(HttpFramingTest, AcceptedHeadsYieldTheirFraming) {
  HeadLimits limits;
  RequestHead head;
  // The views point into the head's bytes, which must outlive them.
  const std::string bytes =
      Head("POST /labels/filter?x=1 HTTP/1.1",
           "host: x\r\ncontent-length:  42 \r\nContent-Type: application/json\r\n"
           "Content-Length: 42\r\nContent-Encoding: identity\r\nexpect: 100-Continue\r\n");
  HeadResult r = ParseRequestHead(bytes, limits, head);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(head.method, "POST");
  EXPECT_EQ(head.target, "/labels/filter?x=1");
  EXPECT_EQ(head.path, "/labels/filter");
  EXPECT_EQ(head.minor_version, 1);
  EXPECT_EQ(head.framing, BodyFraming::kContentLength);
  EXPECT_EQ(head.content_length, 42u);
  EXPECT_EQ(head.content_type, "application/json");
  EXPECT_TRUE(head.keep_alive);
  EXPECT_TRUE(head.expect_continue);

  r = ParseRequestHead(Head("POST /f HTTP/1.1",
                            "Host: x\r\nTransfer-Encoding: Chunked\r\n"
                            "Connection: keep-alive, Close\r\n"),
                       limits, head);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(head.framing, BodyFraming::kChunked);
  EXPECT_FALSE(head.keep_alive);

  // HTTP/1.0: no Host needed; keep-alive only when asked for.
  r = ParseRequestHead(Head("GET /healthz HTTP/1.0", ""), limits, head);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(head.minor_version, 0);
  EXPECT_FALSE(head.keep_alive);
  EXPECT_EQ(head.framing, BodyFraming::kNone);
  r = ParseRequestHead(Head("GET /healthz HTTP/1.0", "Connection: Keep-Alive\r\n"), limits, head);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(head.keep_alive);

  // Absolute-form targets are served by their path.
  for (const auto& [line, want] : std::vector<std::pair<std::string, std::string>>{
           {"POST http://schedext:8888/filter?a HTTP/1.1", "/filter"},
           {"GET https://schedext HTTP/1.1", "/"},
           {"GET http://schedext?x HTTP/1.1", "/"},
           {"OPTIONS * HTTP/1.1", "*"}}) {
    const std::string absolute = Head(line, kHost);
    r = ParseRequestHead(absolute, limits, head);
    ASSERT_TRUE(r.ok()) << line << ": " << r.error;
    EXPECT_EQ(head.path, want) << line;
  }
  // An empty Host value is allowed (RFC 9112 §3.2); obs-text in a value too.
  r = ParseRequestHead(Head("GET / HTTP/1.1", "Host:\r\nX-A: caf\xc3\xa9\r\n"), limits, head);
  EXPECT_TRUE(r.ok()) << r.error;
}

TEST(HttpFramingTest, HeaderLimitsAre431) {
  HeadLimits limits;
  limits.max_header_bytes = 200;
  limits.max_header_fields = 3;
  RequestHead head;
  EXPECT_EQ(
      ParseRequestHead(Head("GET / HTTP/1.1", "Host: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n"), limits, head)
          .status,
      431);
  EXPECT_TRUE(
      ParseRequestHead(Head("GET / HTTP/1.1", "Host: x\r\nA: 1\r\nB: 2\r\n"), limits, head).ok());
  EXPECT_EQ(ParseRequestHead(Head("GET / HTTP/1.1", "Host: " + std::string(300, 'x') + "\r\n"),
                             limits, head)
                .status,
            431);
}

TEST(HttpFramingTest, ScanHeadFindsTheBlankLineAndTheLimit) {
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
  HeadScan scan = ScanHead(request, 1000);
  EXPECT_EQ(scan.skip, 0u);
  EXPECT_EQ(scan.length, request.find("GET /next"));
  EXPECT_FALSE(scan.too_large);

  // Leading empty lines are skipped.
  scan = ScanHead("\r\n\r\n" + request, 1000);
  EXPECT_EQ(scan.skip, 4u);
  EXPECT_EQ(scan.length, request.find("GET /next"));

  // Incomplete: fed a byte at a time, the blank line is found exactly once the
  // last byte is there, whatever was scanned before.
  size_t scanned = 0;
  const size_t head_end = request.find("GET /next");
  for (size_t n = 1; n <= head_end; ++n) {
    scan = ScanHead(std::string_view(request).substr(0, n), 1000, scanned);
    scanned = n;
    ASSERT_EQ(scan.length, n == head_end ? head_end : 0u) << n;
    ASSERT_FALSE(scan.too_large);
  }

  // Past the limit without a blank line: too large; within it: keep reading.
  EXPECT_TRUE(ScanHead("GET / HTTP/1.1\r\nX: " + std::string(100, 'a'), 50).too_large);
  EXPECT_FALSE(ScanHead("GET / HTTP/1.1\r\nX: " + std::string(10, 'a'), 50).too_large);
  // A complete head over the limit is too large as well.
  EXPECT_TRUE(ScanHead("GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n", 50).too_large);
}

std::string Decode(ChunkedDecoder& d, std::string_view in, ChunkedDecoder::Result& last,
                   size_t piece) {
  wire::RequestBuffer body;
  size_t off = 0;
  while (off < in.size()) {
    const std::string_view part = in.substr(off, piece);
    last = d.Feed(part, body);
    off += last.consumed;
    if (last.state != ChunkedDecoder::State::kNeedMore) {
      break;
    }
    if (last.consumed != part.size()) {
      ADD_FAILURE() << "kNeedMore without consuming everything";
      break;
    }
  }
  return std::string(body.view());
}

TEST(HttpFramingTest, ChunkedBodiesDecodeInAnyPieces) {
  const std::string body =
      "3\r\nabc\r\n10;ext=\"x y\"\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\nNEXT";
  for (size_t piece : {size_t{1}, size_t{2}, size_t{7}, body.size()}) {
    SCOPED_TRACE(piece);
    ChunkedDecoder d(1000, 100);
    ChunkedDecoder::Result r;
    EXPECT_EQ(Decode(d, body, r, piece), "abc0123456789abcdef");
    EXPECT_EQ(r.state, ChunkedDecoder::State::kDone);
    EXPECT_EQ(d.body_bytes(), 19u);
  }
  // What follows the body is not consumed.
  ChunkedDecoder d(1000, 100);
  wire::RequestBuffer out;
  const ChunkedDecoder::Result r = d.Feed(body, out);
  EXPECT_EQ(r.state, ChunkedDecoder::State::kDone);
  EXPECT_EQ(body.substr(r.consumed), "NEXT");
}

// Every size line RFC 9112 §7.1.1 allows: extensions with token and quoted
// values, BWS around ';' and '=', leading zeros, a last chunk of several zeros,
// trailer fields.
TEST(HttpFramingTest, ChunkSizeLinesOfTheGrammarAreAccepted) {
  const std::vector<std::string> lines = {
      "5",
      "05",
      "0000000000000000000005",  // leading zeros are not an overflow
      "5;ext",
      "5;ext=1",
      "5;a=1;b=2;c",
      "5 ;ext",
      "5\t; ext = 1",
      "5;ext=\"x y;z\"",
      "5;ext=\"q\\\"uote\\\\\"",
      "5;ext=\"\" ;next=tok",
      "5;n=\"\xc3\xa9\"",  // obs-text in a quoted string
      "5;!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~",
  };
  for (const std::string& line : lines) {
    SCOPED_TRACE(line);
    const std::string body = line + "\r\nhello\r\n000;last=1\r\nX-Trailer: a b\r\nY:\r\n\r\nNEXT";
    for (size_t piece : {size_t{1}, size_t{3}, body.size()}) {
      ChunkedDecoder d(1000, 100);
      ChunkedDecoder::Result r;
      EXPECT_EQ(Decode(d, body, r, piece), "hello") << piece;
      EXPECT_EQ(r.state, ChunkedDecoder::State::kDone) << piece << " " << r.error;
    }
    ChunkedDecoder d(1000, 100);
    wire::RequestBuffer out;
    const ChunkedDecoder::Result r = d.Feed(body, out);
    EXPECT_EQ(body.substr(r.consumed), "NEXT");
  }
}

TEST(HttpFramingTest, BrokenChunkedBodiesAreRefused) {
  struct Case {
    std::string name;
    std::string body;
    int want;
    std::string_view error;  // the exact refusal
  };
  constexpr std::string_view kJunk =
      "junk after the chunk size: only ';' and a chunk extension may follow it";
  constexpr std::string_view kNotHex =
      "malformed chunk size: only ';' and a chunk extension may follow the hex digits";
  constexpr std::string_view kNoName = "malformed chunk extension: a name (token) must follow ';'";
  constexpr std::string_view kNoValue =
      "malformed chunk extension: '=' must be followed by a token or a quoted string";
  const std::string rest = "\r\nhello\r\n0\r\n\r\n";
  const std::vector<Case> cases = {
      {"no size", "\r\nabc\r\n0\r\n\r\n", 400, "chunk size missing"},
      {"bad size", "zz\r\nabc\r\n0\r\n\r\n", 400,
       "malformed chunk size: a chunk line must start with hex digits"},
      {"negative size", "-3\r\nabc\r\n0\r\n\r\n", 400,
       "malformed chunk size: a chunk line must start with hex digits"},
      {"0x prefix", "0x5" + rest, 400, kNotHex},
      {"size then junk after a space", "5 junk" + rest, 400, kJunk},
      {"size then junk after a tab", "5\tjunk" + rest, 400, kJunk},
      {"size then junk", "5junk" + rest, 400, kNotHex},
      {"two sizes", "5 5" + rest, 400, kJunk},
      {"size and a comma", "5,5" + rest, 400, kNotHex},
      {"trailing space", "5 " + rest, 400, "whitespace at the end of a chunk line"},
      {"space after a value", "5;a=1 " + rest, 400, "whitespace at the end of a chunk line"},
      {"space after a name", "5;a " + rest, 400, "whitespace at the end of a chunk line"},
      {"junk after a name", "5;a b" + rest, 400, "malformed chunk extension: junk after its name"},
      {"junk after a value", "5;a=b c" + rest, 400,
       "malformed chunk extension: junk after its value"},
      {"junk after a quoted value", "5;a=\"b\"c" + rest, 400,
       "malformed chunk extension: junk after its value"},
      {"empty extension", "5;" + rest, 400, kNoName},
      {"two semicolons", "5;;a" + rest, 400, kNoName},
      {"name not a token", "5;a@b" + rest, 400, "malformed chunk extension: junk after its name"},
      {"empty value", "5;a=" + rest, 400, kNoValue},
      {"value not a token", "5;a=@" + rest, 400, kNoValue},
      {"unterminated quote", "5;a=\"b" + rest, 400,
       "unterminated quoted string in a chunk extension"},
      {"control character in a quote", "5;a=\"\x01\"" + rest, 400,
       "control character in a chunk extension value"},
      {"NUL after the size", std::string("5\0", 2) + rest, 400, kNotHex},
      {"data longer than size", "2\r\nabc\r\n0\r\n\r\n", 400, "chunk data longer than its size"},
      {"bare LF after size", "3\nabc\r\n0\r\n\r\n", 400, "bare LF in a chunk line"},
      {"bare LF in an extension", "3;a=1\nabc\r\n0\r\n\r\n", 400, "bare LF in a chunk line"},
      {"bare LF after data", "3\r\nabc\n0\r\n\r\n", 400, "chunk data not followed by CRLF"},
      {"bare LF ending the body", "3\r\nabc\r\n0\r\n\n", 400, "bare LF in a chunk line"},
      {"bare CR after size", "3\rabc\r\n0\r\n\r\n", 400, "bare CR in a chunk line"},
      // 2^64: one past what 64 bits hold. Leading zeros do not count.
      {"size overflow", "10000000000000000\r\n", 400, "chunk size does not fit 64 bits"},
      {"size overflow after zeros", "0010000000000000000\r\n", 400,
       "chunk size does not fit 64 bits"},
      {"largest 64-bit size", "ffffffffffffffff\r\n", 413,
       "chunked request body too large (server.maxBodyBytes)"},
      {"over the limit", "3e9\r\n", 413, "chunked request body too large (server.maxBodyBytes)"},
      {"over the limit in sum", "200\r\n" + std::string(512, 'a') + "\r\n200\r\n", 413,
       "chunked request body too large (server.maxBodyBytes)"},
      {"long extension", "3;" + std::string(200, 'e') + "\r\nabc\r\n", 400,
       "chunk size line too long"},
      {"trailer without a colon", "0\r\nX-T\r\n\r\n", 400,
       "field without a colon in the chunked trailer section"},
      {"trailer obs-fold", "0\r\nX-T: 1\r\n 2\r\n\r\n", 400,
       "obsolete line folding in the chunked trailer section"},
      {"trailer space before the colon", "0\r\nX-T : 1\r\n\r\n", 400,
       "whitespace before the colon in the chunked trailer section"},
      {"trailer control character", "0\r\nX-T: \x01\r\n\r\n", 400,
       "control character in the chunked trailer section"},
      {"long trailer", "0\r\nX: " + std::string(200, 't') + "\r\n\r\n", 400,
       "chunked trailer section too long"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (size_t piece : {size_t{1}, c.body.size()}) {
      ChunkedDecoder d(1000, 100);
      ChunkedDecoder::Result r;
      const std::string data = Decode(d, c.body, r, piece);
      EXPECT_EQ(r.state, ChunkedDecoder::State::kError) << piece;
      EXPECT_EQ(r.status, c.want) << piece << " " << r.error;
      EXPECT_EQ(r.error, c.error) << piece;
      // A refused size line delivers none of its chunk's data.
      if (c.body.find(rest) != std::string::npos) {
        EXPECT_EQ(data, "") << piece;
      }
      // It stays failed.
      wire::RequestBuffer more;
      EXPECT_EQ(d.Feed("0\r\n\r\n", more).state, ChunkedDecoder::State::kError);
    }
  }
}

// The extensions of one body are bounded in total, not only per line: many
// tiny chunks cannot carry megabytes of extensions under the body limit.
TEST(HttpFramingTest, ChunkExtensionsAreBoundedPerBody) {
  const std::string ext(60, 'e');  // each line fits the 100-byte line bound
  std::string body;
  size_t ext_bytes = 0;
  while (ext_bytes <= ChunkedDecoder::kMaxExtensionBytes) {
    body += "1;" + ext + "\r\na\r\n";
    ext_bytes += 1 + ext.size();
  }
  body += "0\r\n\r\n";
  ChunkedDecoder d(1 << 20, 100);
  wire::RequestBuffer out;
  const ChunkedDecoder::Result r = d.Feed(body, out);
  EXPECT_EQ(r.state, ChunkedDecoder::State::kError);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.error, "chunk extensions longer than 4096 bytes in one body");
  EXPECT_LT(out.size(), ChunkedDecoder::kMaxExtensionBytes / ext.size() + 1);

  // Just under the bound is accepted.
  std::string fits;
  for (size_t i = 0; i < ChunkedDecoder::kMaxExtensionBytes / (1 + ext.size()); ++i) {
    fits += "1;" + ext + "\r\na\r\n";
  }
  fits += "0\r\n\r\n";
  ChunkedDecoder ok(1 << 20, 100);
  wire::RequestBuffer ok_out;
  EXPECT_EQ(ok.Feed(fits, ok_out).state, ChunkedDecoder::State::kDone);
}

}  // namespace
}  // namespace schedext::server::http
