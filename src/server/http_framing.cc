// Request framing by RFC 9112; see http_framing.h for the rules and why.
#include "server/http_framing.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/text.h"

namespace schedext::server::http {
namespace {

// tchar (RFC 9110 §5.6.2).
bool IsTokenChar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
    return true;
  }
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

// field-vchar, SP or HTAB: what a field value may hold (obs-text included).
bool IsFieldValueChar(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// The value of a HEXDIG, or -1.
int HexValue(unsigned char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) {
      return false;
    }
  }
  return true;
}

// Calls fn(element) for each non-empty element of a comma-separated list
// (RFC 9110 §5.6.1), OWS trimmed.
template <typename Fn>
void ForEachListElement(std::string_view value, Fn&& fn) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view element = TrimBlanks(value.substr(0, comma));
    if (!element.empty()) {
      fn(element);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    value.remove_prefix(comma + 1);
  }
}

// A printable excerpt of request bytes for an error message: at most 64 bytes,
// anything outside printable ASCII as \xNN, so messages and logs stay one line.
std::string Excerpt(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out.append("\\x").push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (s.size() > kMax) {
    out.append("...");
  }
  return out;
}

HeadResult Refuse(int status, std::string error) { return HeadResult{status, std::move(error)}; }

// The path of a request target: origin-form "/p?q", absolute-form
// "http://host/p?q" (RFC 9112 §3.2.2: servers must accept it), or "*".
bool TargetPath(std::string_view method, std::string_view target, std::string_view& path) {
  if (target == "*") {
    path = target;
    return method == "OPTIONS";
  }
  if (target.front() != '/') {
    size_t scheme_end = target.find("://");
    if (scheme_end == std::string_view::npos ||
        !(EqualsIgnoreCase(target.substr(0, scheme_end), "http") ||
          EqualsIgnoreCase(target.substr(0, scheme_end), "https"))) {
      return false;
    }
    target.remove_prefix(scheme_end + 3);
    const size_t slash = target.find_first_of("/?");
    if (slash == 0 || target.empty()) {
      return false;  // no authority
    }
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    if (target.front() == '?') {
      path = "/";
      return true;
    }
  }
  path = target.substr(0, target.find('?'));
  return true;
}

// "HTTP/1.1" → 1; the status to answer otherwise (400 malformed, 505 other).
int ParseVersion(std::string_view v, int& minor) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || v[6] != '.' || v[5] < '0' || v[5] > '9' ||
      v[7] < '0' || v[7] > '9') {
    return 400;
  }
  if (v[5] != '1' || (v[7] != '0' && v[7] != '1')) {
    return 505;
  }
  minor = v[7] - '0';
  return 0;
}

}  // namespace

HeadScan ScanHead(std::string_view buffered, size_t max_header_bytes, size_t scanned) {
  HeadScan scan;
  while (buffered.substr(scan.skip, 2) == "\r\n") {
    scan.skip += 2;
  }
  const std::string_view rest = buffered.substr(scan.skip);
  // Resume where the last search stopped (3 bytes back: the blank line may
  // straddle it), so a head arriving a byte at a time costs linear time.
  const size_t from = scanned > scan.skip + 3 ? scanned - scan.skip - 3 : 0;
  const size_t end = rest.find("\r\n\r\n", from);
  const size_t searched_to = end == std::string_view::npos ? rest.size() : end + 4;
  for (size_t lf = rest.find('\n', from); lf < searched_to; lf = rest.find('\n', lf + 1)) {
    if (lf == 0 || rest[lf - 1] != '\r') {
      scan.bare_lf = true;
      return scan;
    }
  }
  if (end != std::string_view::npos && end + 4 <= max_header_bytes) {
    scan.length = end + 4;
  } else if (end != std::string_view::npos || rest.size() > max_header_bytes) {
    scan.too_large = true;
  }
  return scan;
}

HeadResult ParseRequestHead(std::string_view head, const HeadLimits& limits, RequestHead& out) {
  out = RequestHead{};
  if (head.size() > limits.max_header_bytes) {
    return Refuse(431, "request header section larger than " +
                           std::to_string(limits.max_header_bytes) +
                           " bytes (server.maxHeaderBytes)");
  }
  if (head.size() < 4 || head.substr(head.size() - 4) != "\r\n\r\n") {
    return Refuse(400, "request head does not end with an empty line");
  }
  // Every line ends with CRLF; a CR or LF anywhere else is refused below, as
  // each line's bytes are checked against what the line may hold.
  size_t pos = head.find("\r\n");
  const std::string_view request_line = head.substr(0, pos);
  pos += 2;

  // request-line = method SP request-target SP HTTP-version
  const size_t sp1 = request_line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || request_line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Refuse(400, "malformed request line \"" + Excerpt(request_line) + "\"");
  }
  out.method = request_line.substr(0, sp1);
  out.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (out.method.empty() || !std::all_of(out.method.begin(), out.method.end(), [](char c) {
        return IsTokenChar(static_cast<unsigned char>(c));
      })) {
    return Refuse(400, "malformed request method \"" + Excerpt(out.method) + "\"");
  }
  if (out.target.empty() ||
      !std::all_of(out.target.begin(), out.target.end(),
                   [](char c) {
                     const auto u = static_cast<unsigned char>(c);
                     return u > 0x20 && u < 0x7f;
                   }) ||
      !TargetPath(out.method, out.target, out.path)) {
    return Refuse(400, "malformed request target \"" + Excerpt(out.target) + "\"");
  }
  const std::string_view version = request_line.substr(sp2 + 1);
  if (const int status = ParseVersion(version, out.minor_version); status != 0) {
    return Refuse(status, status == 505 ? "HTTP version \"" + Excerpt(version) +
                                              "\" not supported: use HTTP/1.1"
                                        : "malformed HTTP version \"" + Excerpt(version) + "\"");
  }

  size_t fields = 0;
  size_t hosts = 0;
  bool has_length = false;
  bool has_transfer_encoding = false;
  bool chunked_last = false;  // the last transfer coding named is chunked
  bool other_coding = false;  // a transfer coding other than one final chunked
  bool connection_close = false;
  bool connection_keep_alive = false;
  bool expect_other = false;
  std::string_view bad_content_encoding;
  size_t content_types = 0;

  while (pos < head.size() - 2) {
    const size_t eol = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) {
      return Refuse(400, "empty line inside the request head");
    }
    if (++fields > limits.max_header_fields) {
      return Refuse(
          431, "more than " + std::to_string(limits.max_header_fields) + " request header fields");
    }
    if (line.front() == ' ' || line.front() == '\t') {
      return Refuse(400, "obsolete line folding in the request header (RFC 9112 §5.2)");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Refuse(400, "request header line without a colon: \"" + Excerpt(line) + "\"");
    }
    const std::string_view name = line.substr(0, colon);
    for (char c : name) {
      if (!IsTokenChar(static_cast<unsigned char>(c))) {
        return Refuse(400, (c == ' ' || c == '\t')
                               ? "whitespace before the colon in request header \"" +
                                     Excerpt(name) + "\" (RFC 9112 §5.1)"
                               : "malformed request header name \"" + Excerpt(name) + "\"");
      }
    }
    if (name.empty()) {
      return Refuse(400, "request header with an empty name");
    }
    const std::string_view raw_value = line.substr(colon + 1);
    for (char c : raw_value) {
      if (!IsFieldValueChar(static_cast<unsigned char>(c))) {
        return Refuse(400, "control character in request header \"" + Excerpt(name) + "\"");
      }
    }
    const std::string_view value = TrimBlanks(raw_value);

    if (EqualsIgnoreCase(name, "Content-Length")) {
      // 1*DIGIT, nothing else: "+5", "-5", "5, 5", "0x5" and "" are all refused.
      if (value.empty() || value.size() > 19 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return Refuse(400, "invalid Content-Length \"" + Excerpt(value) + "\"");
      }
      uint64_t length = 0;
      for (char c : value) {
        length = length * 10 + static_cast<uint64_t>(c - '0');
      }
      if (has_length && length != out.content_length) {
        return Refuse(400, "conflicting Content-Length headers");
      }
      has_length = true;
      out.content_length = length;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      has_transfer_encoding = true;
      ForEachListElement(value, [&](std::string_view coding) {
        if (chunked_last) {
          other_coding = true;  // anything after chunked, even chunked again
        }
        if (EqualsIgnoreCase(coding, "chunked")) {
          chunked_last = true;
        } else {
          other_coding = true;
        }
      });
    } else if (EqualsIgnoreCase(name, "Host")) {
      ++hosts;
    } else if (EqualsIgnoreCase(name, "Connection")) {
      ForEachListElement(value, [&](std::string_view option) {
        connection_close = connection_close || EqualsIgnoreCase(option, "close");
        connection_keep_alive = connection_keep_alive || EqualsIgnoreCase(option, "keep-alive");
      });
    } else if (EqualsIgnoreCase(name, "Content-Encoding")) {
      ForEachListElement(value, [&](std::string_view coding) {
        if (!EqualsIgnoreCase(coding, "identity") && bad_content_encoding.empty()) {
          bad_content_encoding = coding;
        }
      });
    } else if (EqualsIgnoreCase(name, "Content-Type")) {
      ++content_types;
      out.content_type = value;
    } else if (EqualsIgnoreCase(name, "Expect")) {
      if (EqualsIgnoreCase(value, "100-continue")) {
        out.expect_continue = true;
      } else {
        expect_other = true;
      }
    }
  }

  if (out.minor_version == 1 && hosts != 1) {
    return Refuse(
        400, hosts == 0 ? "HTTP/1.1 request without a Host header" : "more than one Host header");
  }
  if (out.minor_version == 0 && hosts > 1) {
    return Refuse(400, "more than one Host header");
  }
  if (content_types > 1) {
    return Refuse(400, "more than one Content-Type header");
  }
  if (has_transfer_encoding) {
    if (out.minor_version == 0) {
      return Refuse(400, "Transfer-Encoding in an HTTP/1.0 request");
    }
    if (has_length) {
      return Refuse(400, "both Content-Length and Transfer-Encoding in the request");
    }
    if (other_coding || !chunked_last) {
      return Refuse(501,
                    "request transfer coding not supported: send Content-Length or "
                    "Transfer-Encoding: chunked");
    }
    out.framing = BodyFraming::kChunked;
  } else if (has_length) {
    out.framing = BodyFraming::kContentLength;
    if (out.content_length > limits.max_body_bytes) {
      return Refuse(413, "request body too large: " + std::to_string(out.content_length) +
                             " bytes, over " + std::to_string(limits.max_body_bytes) +
                             " (server.maxBodyBytes)");
    }
  }
  if (!bad_content_encoding.empty()) {
    return Refuse(415, "request Content-Encoding \"" + Excerpt(bad_content_encoding) +
                           "\" not supported: send the body uncompressed");
  }
  if (expect_other) {
    return Refuse(417, "only Expect: 100-continue is supported");
  }
  out.keep_alive =
      out.minor_version == 1 ? !connection_close : connection_keep_alive && !connection_close;
  return HeadResult{};
}

ChunkedDecoder::Result ChunkedDecoder::Fail(int status, std::string_view error, size_t consumed) {
  step_ = Step::kError;
  last_status_ = status;
  last_error_ = error;
  return Result{State::kError, consumed, status, error};
}

static_assert(ChunkedDecoder::kMaxExtensionBytes == 4096, "the refusal below names the bound");

const char* ChunkedDecoder::SizeLineByte(unsigned char c) {
  const bool bws = c == ' ' || c == '\t';
  const int digit = HexValue(c);
  // Every byte after the digits is extension, whitespace included.
  if ((ext_ != Ext::kDigits || digit < 0) && ++ext_bytes_ > kMaxExtensionBytes) {
    return "chunk extensions longer than 4096 bytes in one body";
  }
  switch (ext_) {
    case Ext::kDigits:
      if (digit >= 0) {
        if (chunk_left_ > (std::numeric_limits<uint64_t>::max() >> 4)) {
          return "chunk size does not fit 64 bits";
        }
        chunk_left_ = chunk_left_ * 16 + static_cast<uint64_t>(digit);
        ++size_digits_;
        return nullptr;
      }
      if (size_digits_ == 0) {
        return "malformed chunk size: a chunk line must start with hex digits";
      }
      if (c == ';') {
        ext_ = Ext::kBeforeName;
        return nullptr;
      }
      if (bws) {
        ext_ = Ext::kBeforeSemi;
        return nullptr;
      }
      return "malformed chunk size: only ';' and a chunk extension may follow the hex digits";
    case Ext::kBeforeSemi:
    case Ext::kValueBws:
      if (bws) {
        return nullptr;
      }
      if (c == ';') {
        ext_ = Ext::kBeforeName;
        return nullptr;
      }
      return ext_ == Ext::kBeforeSemi
                 ? "junk after the chunk size: only ';' and a chunk extension may follow it"
                 : "malformed chunk extension: junk after its value";
    case Ext::kBeforeName:
      if (bws) {
        return nullptr;
      }
      if (IsTokenChar(c)) {
        ext_ = Ext::kName;
        return nullptr;
      }
      return "malformed chunk extension: a name (token) must follow ';'";
    case Ext::kName:
    case Ext::kAfterName:
      if (ext_ == Ext::kName && IsTokenChar(c)) {
        return nullptr;
      }
      if (bws) {
        ext_ = Ext::kAfterName;
        return nullptr;
      }
      if (c == '=') {
        ext_ = Ext::kBeforeValue;
        return nullptr;
      }
      if (c == ';') {
        ext_ = Ext::kBeforeName;
        return nullptr;
      }
      return "malformed chunk extension: junk after its name";
    case Ext::kBeforeValue:
      if (bws) {
        return nullptr;
      }
      if (c == '"') {
        ext_ = Ext::kQuoted;
        return nullptr;
      }
      if (IsTokenChar(c)) {
        ext_ = Ext::kToken;
        return nullptr;
      }
      return "malformed chunk extension: '=' must be followed by a token or a quoted string";
    case Ext::kToken:
    case Ext::kAfterQuoted:
      if (ext_ == Ext::kToken && IsTokenChar(c)) {
        return nullptr;
      }
      if (bws) {
        ext_ = Ext::kValueBws;
        return nullptr;
      }
      if (c == ';') {
        ext_ = Ext::kBeforeName;
        return nullptr;
      }
      return "malformed chunk extension: junk after its value";
    case Ext::kQuoted:
      // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
      if (c == '"') {
        ext_ = Ext::kAfterQuoted;
        return nullptr;
      }
      if (c == '\\') {
        ext_ = Ext::kQuotedPair;
        return nullptr;
      }
      return IsFieldValueChar(c) ? nullptr : "control character in a chunk extension value";
    case Ext::kQuotedPair:
      ext_ = Ext::kQuoted;
      return IsFieldValueChar(c) ? nullptr : "control character in a chunk extension value";
  }
  return "malformed chunk line";
}

const char* ChunkedDecoder::SizeLineEnd() const {
  switch (ext_) {
    case Ext::kDigits:
      return size_digits_ == 0 ? "chunk size missing" : nullptr;
    case Ext::kName:
    case Ext::kToken:
    case Ext::kAfterQuoted:
      return nullptr;
    case Ext::kBeforeSemi:
    case Ext::kAfterName:
    case Ext::kValueBws:
      return "whitespace at the end of a chunk line";
    case Ext::kBeforeName:
      return "malformed chunk extension: a name (token) must follow ';'";
    case Ext::kBeforeValue:
      return "malformed chunk extension: '=' must be followed by a token or a quoted string";
    case Ext::kQuoted:
    case Ext::kQuotedPair:
      return "unterminated quoted string in a chunk extension";
  }
  return "malformed chunk line";
}

const char* ChunkedDecoder::TrailerByte(unsigned char c) {
  switch (trailer_) {
    case Trailer::kLineStart:
      if (c == ' ' || c == '\t') {
        return "obsolete line folding in the chunked trailer section";
      }
      if (!IsTokenChar(c)) {
        return "malformed field name in the chunked trailer section";
      }
      trailer_ = Trailer::kName;
      return nullptr;
    case Trailer::kName:
      if (c == ':') {
        trailer_ = Trailer::kValue;
        return nullptr;
      }
      if (c == ' ' || c == '\t') {
        return "whitespace before the colon in the chunked trailer section";
      }
      return IsTokenChar(c) ? nullptr : "malformed field name in the chunked trailer section";
    case Trailer::kValue:
      return IsFieldValueChar(c) ? nullptr : "control character in the chunked trailer section";
  }
  return "malformed chunked trailer section";
}

ChunkedDecoder::Result ChunkedDecoder::Feed(std::string_view in, wire::RequestBuffer& body) {
  size_t i = 0;
  while (i < in.size()) {
    switch (step_) {
      case Step::kDone:
        return Result{State::kDone, i, 0, {}};
      case Step::kError:
        return Result{State::kError, i, last_status_, last_error_};
      case Step::kData: {
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>(chunk_left_, static_cast<uint64_t>(in.size() - i)));
        body.Append(in.data() + i, n);
        i += n;
        chunk_left_ -= n;
        if (chunk_left_ == 0) {
          step_ = Step::kDataCr;
        }
        continue;
      }
      case Step::kDataCr:
        if (in[i] != '\r') {
          return Fail(
              400,
              in[i] == '\n' ? "chunk data not followed by CRLF" : "chunk data longer than its size",
              i);
        }
        ++i;
        step_ = Step::kDataLf;
        continue;
      case Step::kDataLf:
        if (in[i] != '\n') {
          return Fail(400, "chunk data not followed by CRLF", i);
        }
        ++i;
        step_ = Step::kSizeLine;
        ext_ = Ext::kDigits;
        chunk_left_ = 0;
        size_digits_ = 0;
        line_bytes_ = 0;
        continue;
      case Step::kSizeLine:
      case Step::kTrailer:
        break;
    }
    // A line: the chunk size (with extensions) or a trailer field.
    const unsigned char c = static_cast<unsigned char>(in[i++]);
    if (++line_bytes_ > max_line_bytes_) {
      return Fail(
          400,
          step_ == Step::kTrailer ? "chunked trailer section too long" : "chunk size line too long",
          i);
    }
    if (saw_cr_) {
      if (c != '\n') {
        return Fail(400, "bare CR in a chunk line", i);
      }
      saw_cr_ = false;
      if (step_ == Step::kTrailer) {
        if (trailer_ == Trailer::kLineStart) {
          step_ = Step::kDone;
          return Result{State::kDone, i, 0, {}};
        }
        if (trailer_ == Trailer::kName) {
          return Fail(400, "field without a colon in the chunked trailer section", i);
        }
        trailer_ = Trailer::kLineStart;
        continue;
      }
      if (const char* error = SizeLineEnd(); error != nullptr) {
        return Fail(400, error, i);
      }
      if (chunk_left_ == 0) {
        step_ = Step::kTrailer;
        trailer_ = Trailer::kLineStart;
        line_bytes_ = 0;
        continue;
      }
      if (chunk_left_ > max_body_bytes_ - total_) {
        return Fail(413, "chunked request body too large (server.maxBodyBytes)", i);
      }
      total_ += chunk_left_;
      step_ = Step::kData;
      continue;
    }
    if (c == '\r') {
      saw_cr_ = true;
      continue;
    }
    if (c == '\n') {
      return Fail(400, "bare LF in a chunk line", i);
    }
    const char* error = step_ == Step::kTrailer ? TrailerByte(c) : SizeLineByte(c);
    if (error != nullptr) {
      return Fail(400, error, i);
    }
  }
  switch (step_) {
    case Step::kDone:
      return Result{State::kDone, i, 0, {}};
    case Step::kError:
      return Result{State::kError, i, last_status_, last_error_};
    default:
      return Result{State::kNeedMore, i, 0, {}};
  }
}

}  // namespace schedext::server::http
