// HTTP/1.1 request framing (RFC 9112), as pure functions over bytes: where a
// request head ends, whether it is acceptable and how its body is delimited,
// and the decoding of a chunked body. No I/O, no allocation beyond the error
// message, nothing that depends on the connection: the listener
// (http_session.h) drives these, the fuzz targets call them directly.
//
// The rules are strict on purpose. A server in front of a proxy, or reached by
// a hostile client, must not read a request's boundaries differently from the
// sender (request smuggling), so every ambiguity is refused instead of being
// resolved: conflicting or malformed Content-Length, Content-Length together
// with Transfer-Encoding, a transfer coding other than chunked, obs-fold
// continuation lines, whitespace before the colon, a line without a colon, a
// bare CR or LF, HTTP/1.1 without exactly one Host. A request body in a content
// coding (gzip, ...) is refused with 415: kube-scheduler never compresses, and
// the decoder reads bodies as sent.
//
// Thread-safety: free functions are thread-safe; a ChunkedDecoder has one owner.
#ifndef SCHEDEXT_SRC_SERVER_HTTP_FRAMING_H_
#define SCHEDEXT_SRC_SERVER_HTTP_FRAMING_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schedext/wire/request_buffer.h"

namespace schedext::server::http {

struct HeadLimits {
  // The header section, from the request line to the blank line inclusive.
  size_t max_header_bytes = size_t{64} << 10;
  size_t max_header_fields = 100;
  // A Content-Length above this is refused (413) before any body byte is read.
  uint64_t max_body_bytes = uint64_t{512} << 20;
};

// Where the next request head lies in `buffered` (what has been received and
// not consumed yet).
struct HeadScan {
  // Empty lines before the request line, which RFC 9112 §2.2 lets a server
  // ignore (some clients send a CRLF after a body): drop these bytes first.
  size_t skip = 0;
  // Bytes of the head after `skip`, through the blank line; 0 while the head is
  // incomplete.
  size_t length = 0;
  // The head is incomplete and already longer than max_header_bytes: 431.
  bool too_large = false;
  // A line of the head ends in a bare LF: 400 at once. RFC 9112 §2.2 lets a
  // server take LF alone as a line end, but no HTTP client kube-scheduler or
  // curl uses sends one, and waiting for a CRLF CRLF that never comes would
  // leave such a client without an answer until the header deadline.
  bool bare_lf = false;
};
// `scanned`: how many bytes of `buffered` an earlier call with the same start
// has already searched (0 the first time), so that a head arriving in many
// small pieces is not searched again from its start each time.
HeadScan ScanHead(std::string_view buffered, size_t max_header_bytes, size_t scanned = 0);

enum class BodyFraming { kNone, kContentLength, kChunked };

// A validated request head. The views point into the bytes given to
// ParseRequestHead and live as long as they do.
struct RequestHead {
  std::string_view method;
  std::string_view target;  // as sent
  std::string_view path;    // the target's path: no scheme/authority, no query
  int minor_version = 1;    // HTTP/1.<minor_version>; 0 or 1
  BodyFraming framing = BodyFraming::kNone;
  uint64_t content_length = 0;  // with kContentLength
  std::optional<std::string_view> content_type;
  // The connection may serve another request after this one (HTTP/1.1 unless
  // `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
  bool keep_alive = true;
  bool expect_continue = false;  // `Expect: 100-continue`
};

// Status 0 when the head is acceptable; else the status to answer and why.
struct HeadResult {
  int status = 0;
  std::string error;
  bool ok() const { return status == 0; }
};

// Parses and validates one request head: `head` is exactly the bytes ScanHead
// delimited (request line through the blank line). Statuses: 400 (malformed,
// ambiguous framing, missing Host), 413 (Content-Length over the limit), 415
// (Content-Encoding other than identity), 417 (an Expect other than
// 100-continue), 431 (too many or too long header fields), 501 (a transfer
// coding other than chunked), 505 (an HTTP version other than 1.0 / 1.1).
// Every refusal should close the connection: the body was not read.
HeadResult ParseRequestHead(std::string_view head, const HeadLimits& limits, RequestHead& out);

// Decodes a chunked body (RFC 9112 §7.1) fed in pieces of any size, appending
// the data to a RequestBuffer. Chunk extensions and trailer fields are checked
// against the grammar, then dropped:
//
//   size-line    = 1*HEXDIG *( BWS ";" BWS token [ BWS "=" BWS value ] ) CRLF
//   value        = token / quoted-string
//   trailer-line = token ":" *( field-vchar / SP / HTAB ) CRLF
//
// Anything else is refused with 400, in particular bytes after the size that
// do not start an extension ("5 junk"): a proxy in front that reads such a
// line differently would frame the body differently (request smuggling). A
// size line is bounded by max_line_bytes, the extensions of one body by
// kMaxExtensionBytes in total (a body of many tiny chunks cannot carry
// megabytes of extensions past the body limit), the trailer section by
// max_line_bytes; a size that does not fit 64 bits is refused as malformed.
class ChunkedDecoder {
 public:
  static constexpr size_t kMaxExtensionBytes = 4096;

  ChunkedDecoder(uint64_t max_body_bytes, size_t max_line_bytes)
      : max_body_bytes_(max_body_bytes), max_line_bytes_(max_line_bytes) {}

  enum class State { kNeedMore, kDone, kError };
  struct Result {
    State state = State::kNeedMore;
    size_t consumed = 0;     // bytes of the input used; the rest follows the body
    int status = 0;          // with kError: 400 (malformed) or 413 (too large)
    std::string_view error;  // a static message
  };
  // Consumes what it can of `in`. After kDone or kError, further calls return
  // the same state and consume nothing.
  Result Feed(std::string_view in, wire::RequestBuffer& body);

  uint64_t body_bytes() const { return total_; }

 private:
  enum class Step { kSizeLine, kData, kDataCr, kDataLf, kTrailer, kDone, kError };
  // Where a size line is, after its digits: which byte may come next.
  enum class Ext : uint8_t {
    kDigits,       // in the hex digits
    kBeforeSemi,   // after whitespace following the size: BWS or ';'
    kBeforeName,   // after ';'
    kName,         // in an extension name
    kAfterName,    // whitespace after a name: BWS, '=' or ';'
    kBeforeValue,  // after '='
    kToken,        // in a token value
    kQuoted,       // in a quoted-string value
    kQuotedPair,   // after a backslash in a quoted string
    kAfterQuoted,  // after the closing quote
    kValueBws,     // whitespace after a value: BWS or ';'
  };
  enum class Trailer : uint8_t { kLineStart, kName, kValue };

  Result Fail(int status, std::string_view error, size_t consumed);
  // One byte of a size line other than CR and LF; nullptr or why it is refused.
  const char* SizeLineByte(unsigned char c);
  // The CRLF ending a size line: nullptr or why the line is refused.
  const char* SizeLineEnd() const;
  const char* TrailerByte(unsigned char c);

  const uint64_t max_body_bytes_;
  const size_t max_line_bytes_;
  Step step_ = Step::kSizeLine;
  Ext ext_ = Ext::kDigits;
  Trailer trailer_ = Trailer::kLineStart;
  uint64_t chunk_left_ = 0;
  uint64_t total_ = 0;
  size_t line_bytes_ = 0;  // of the current size line, or of the trailer section
  size_t ext_bytes_ = 0;   // of all chunk extensions so far (after the digits)
  int size_digits_ = 0;    // hex digits of the current chunk size
  bool saw_cr_ = false;    // the line's CR has been read; LF must follow
  int last_status_ = 0;
  std::string_view last_error_;
};

}  // namespace schedext::server::http

#endif  // SCHEDEXT_SRC_SERVER_HTTP_FRAMING_H_
