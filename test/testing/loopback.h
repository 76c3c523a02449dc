// Test-only helpers for talking HTTP/1.1 to a server on the loopback interface
// over raw sockets, so that tests control every byte on the wire (keep-alive,
// chunked bodies, half-sent bodies, pipelining) and see every header the server
// sends back (no client-side decompression or header rewriting).
//
//   RawConnection c;
//   ASSERT_TRUE(c.Connect(port));
//   ASSERT_TRUE(c.Send(BuildRequest("POST", "/filter", body)));
//   HttpReply reply;
//   ASSERT_TRUE(c.ReadReply(reply)) << c.error();
//
// Every blocking call is bounded: sockets get send and receive timeouts, and
// reads give up at a byte limit. Header-only. Thread-safety: one RawConnection
// per thread; the free functions are thread-safe.
#ifndef SCHEDEXT_TEST_TESTING_LOOPBACK_H_
#define SCHEDEXT_TEST_TESTING_LOOPBACK_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace schedext::testing {

// Receive and send timeout of every test socket: a hung server fails the test
// instead of hanging it.
inline constexpr int kSocketTimeoutSeconds = 10;
// Replies larger than this are treated as an error.
inline constexpr size_t kMaxReplyBytes = size_t{64} << 20;

// The whole file; empty when it cannot be read.
inline std::string ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::string();
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// An HTTP request with an explicit Content-Length (unless `headers` already
// names Content-Length or Transfer-Encoding, or `body` is empty and the method
// is GET). `headers` go out in order, after Host.
inline std::string BuildRequest(std::string_view method, std::string_view target,
                                std::string_view body, const HeaderList& headers = {},
                                bool json_content_type = true) {
  std::string out;
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  out.append("Host: 127.0.0.1\r\n");
  bool has_length = false;
  bool has_type = false;
  for (const auto& [name, value] : headers) {
    has_length = has_length || EqualsIgnoreCase(name, "Content-Length") ||
                 EqualsIgnoreCase(name, "Transfer-Encoding");
    has_type = has_type || EqualsIgnoreCase(name, "Content-Type");
    out.append(name).append(": ").append(value).append("\r\n");
  }
  if (!has_type && json_content_type && !body.empty()) {
    out.append("Content-Type: application/json\r\n");
  }
  if (!has_length && !(body.empty() && (method == "GET" || method == "HEAD"))) {
    out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  out.append("\r\n");
  out.append(body);
  return out;
}

// `body` in chunks of at most `chunk` bytes, with the terminating zero chunk.
inline std::string ChunkedBody(std::string_view body, size_t chunk) {
  std::string out;
  for (size_t off = 0; off < body.size(); off += chunk) {
    const std::string_view piece = body.substr(off, chunk);
    char size[32];
    std::snprintf(size, sizeof(size), "%zx\r\n", piece.size());
    out.append(size).append(piece).append("\r\n");
  }
  out.append("0\r\n\r\n");
  return out;
}

struct HttpReply {
  int status = 0;
  std::string reason;
  HeaderList headers;  // in wire order, names as sent
  std::string body;

  // The first header named `name` (case-insensitive), if any.
  std::optional<std::string> Header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (EqualsIgnoreCase(n, name)) return v;
    }
    return std::nullopt;
  }
  size_t HeaderCount(std::string_view name) const {
    size_t count = 0;
    for (const auto& h : headers) {
      count += EqualsIgnoreCase(h.first, name) ? 1 : 0;
    }
    return count;
  }
};

// One client TCP connection to 127.0.0.1:port.
class RawConnection {
 public:
  RawConnection() = default;
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  ~RawConnection() { Close(); }

  // Connects to 127.0.0.1:port. False (see error()) when the connection is refused.
  bool Connect(int port) {
    Close();
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      return Fail("socket");
    }
    timeval tv{kSocketTimeoutSeconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int yes = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      Fail("connect");
      Close();
      return false;
    }
    buffer_.clear();
    return true;
  }

  bool connected() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

  void Close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  // Half-closes the sending side (the server sees EOF).
  void ShutdownWrite() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
  }

  // Closes with a TCP reset (SO_LINGER 0) instead of a FIN: a client that
  // vanishes mid-request.
  void Reset() {
    if (fd_ >= 0) {
      linger l{1, 0};
      ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      Close();
    }
  }

  // Sends `size` bytes of `fill`, in pieces of at most 64 KiB, without
  // holding them all in memory (header floods). False once the peer stops
  // taking them (reset, closed), which a flood expects.
  bool SendRepeated(char fill, size_t size) {
    const std::string piece(std::min(size, size_t{64} << 10), fill);
    for (size_t sent = 0; sent < size;) {
      const size_t n = std::min(piece.size(), size - sent);
      if (!Send(std::string_view(piece).substr(0, n))) {
        return false;
      }
      sent += n;
    }
    return true;
  }

  bool Send(std::string_view data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return Fail("send");
      }
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads one reply: status line, headers, then the body by Content-Length or
  // chunked framing (or until EOF when neither is given).
  bool ReadReply(HttpReply& reply) {
    reply = HttpReply{};
    std::string head;
    if (!ReadUntil("\r\n\r\n", head)) {
      return false;
    }
    // Status line.
    size_t eol = head.find("\r\n");
    const std::string status_line = head.substr(0, eol);
    if (status_line.rfind("HTTP/1.1 ", 0) != 0 && status_line.rfind("HTTP/1.0 ", 0) != 0) {
      error_ = "bad status line: " + status_line;
      return false;
    }
    reply.status = std::atoi(status_line.c_str() + 9);
    if (status_line.size() > 13) reply.reason = status_line.substr(13);
    size_t pos = eol + 2;
    while (pos < head.size()) {
      size_t end = head.find("\r\n", pos);
      if (end == std::string::npos) end = head.size();
      const std::string line = head.substr(pos, end - pos);
      pos = end + 2;
      if (line.empty()) continue;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) {
        error_ = "bad header line: " + line;
        return false;
      }
      size_t vstart = colon + 1;
      while (vstart < line.size() && line[vstart] == ' ') ++vstart;
      reply.headers.emplace_back(line.substr(0, colon), line.substr(vstart));
    }
    if ((reply.status >= 100 && reply.status < 200) || reply.status == 204 ||
        reply.status == 304) {
      return true;  // never a body
    }
    if (auto te = reply.Header("Transfer-Encoding"); te && EqualsIgnoreCase(*te, "chunked")) {
      return ReadChunked(reply.body);
    }
    if (auto cl = reply.Header("Content-Length")) {
      const size_t length = std::strtoull(cl->c_str(), nullptr, 10);
      if (length > kMaxReplyBytes) {
        error_ = "reply too large";
        return false;
      }
      return ReadExactly(length, reply.body);
    }
    // No framing: the body runs to EOF.
    while (Fill()) {
    }
    reply.body = std::move(buffer_);
    buffer_.clear();
    return eof_;
  }

  // Everything the server sends until it closes the connection (what is left
  // after earlier replies included). False on a timeout or reset.
  bool ReadToEnd(std::string& out) {
    while (Fill()) {
    }
    out = std::move(buffer_);
    buffer_.clear();
    return eof_;
  }

  // True when the server has closed the connection (EOF or reset) within
  // `timeout_ms`, with no unread data pending.
  bool PeerClosedWithin(int timeout_ms) {
    if (!buffer_.empty()) return false;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, timeout_ms);
    if (r <= 0) return false;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

 private:
  bool Fail(const char* what) {
    error_ = std::string(what) + ": " + std::strerror(errno);
    return false;
  }

  // Appends what one recv() returns to buffer_; false on EOF, error or timeout.
  bool Fill() {
    if (fd_ < 0) {
      error_ = "not connected";
      return false;
    }
    if (buffer_.size() > kMaxReplyBytes) {
      error_ = "reply too large";
      return false;
    }
    char chunk[65536];
    for (int attempt = 0; attempt < 100; ++attempt) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n > 0) {
        buffer_.append(chunk, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) {
        eof_ = true;
        error_ = "connection closed by the server";
        return false;
      }
      if (errno == EINTR) continue;
      return Fail("recv");
    }
    error_ = "recv interrupted too often";
    return false;
  }

  bool ReadUntil(std::string_view delimiter, std::string& out) {
    for (;;) {
      const size_t at = buffer_.find(delimiter);
      if (at != std::string::npos) {
        out = buffer_.substr(0, at + delimiter.size());
        buffer_.erase(0, at + delimiter.size());
        return true;
      }
      if (!Fill()) return false;
    }
  }

  bool ReadExactly(size_t n, std::string& out) {
    while (buffer_.size() < n) {
      if (!Fill()) return false;
    }
    out.append(buffer_, 0, n);
    buffer_.erase(0, n);
    return true;
  }

  bool ReadChunked(std::string& out) {
    for (;;) {
      std::string size_line;
      if (!ReadUntil("\r\n", size_line)) return false;
      const size_t size = std::strtoull(size_line.c_str(), nullptr, 16);
      if (size > kMaxReplyBytes) {
        error_ = "chunk too large";
        return false;
      }
      if (size == 0) {
        std::string trailer;
        return ReadUntil("\r\n", trailer);  // no trailers expected
      }
      if (!ReadExactly(size, out)) return false;
      std::string crlf;
      if (!ReadExactly(2, crlf)) return false;
    }
  }

  int fd_ = -1;
  std::string buffer_;
  std::string error_;
  bool eof_ = false;
};

// One request on a fresh connection; status 0 and the error in `reply.reason`
// when the exchange fails.
inline HttpReply Exchange(int port, std::string_view request) {
  RawConnection c;
  HttpReply reply;
  if (!c.Connect(port) || !c.Send(request) || !c.ReadReply(reply)) {
    reply.status = 0;
    reply.reason = c.error();
  }
  return reply;
}

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_LOOPBACK_H_
