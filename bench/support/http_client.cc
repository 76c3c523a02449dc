// The benchmarks' loopback HTTP/1.1 client (http_client.h).
#include "support/http_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace schedext::bench {
namespace {

// Head bytes and chunk-size lines are received in pieces of this size; bodies
// go straight into place in reads as large as the socket gives.
constexpr size_t kFillBytes = 64 * 1024;

bool IsLoopbackAddress(const addrinfo& a) {
  if (a.ai_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a.ai_addr)->sin_addr.s_addr) >> 24) == 127;
  }
  if (a.ai_family == AF_INET6) {
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a.ai_addr)->sin6_addr);
  }
  return false;
}

// The value of header `name` (lower case, with its colon) in `head`, or empty.
std::string_view HeaderValue(std::string_view head, std::string_view name) {
  size_t line = head.find("\r\n");
  while (line != std::string_view::npos) {
    const size_t start = line + 2;
    const size_t end = std::min(head.find("\r\n", start), head.size());
    const std::string_view text = head.substr(start, end - start);
    if (text.size() >= name.size() &&
        std::equal(name.begin(), name.end(), text.begin(), [](char n, char c) {
          return n == std::tolower(static_cast<unsigned char>(c));
        })) {
      std::string_view value = text.substr(name.size());
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
        value.remove_prefix(1);
      }
      return value;
    }
    line = end < head.size() ? end : std::string_view::npos;
  }
  return {};
}

}  // namespace

bool IsLoopbackHost(std::string_view host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost";
}

int ConnectLoopback(const std::string& host, int port, int timeout_s) {
  if (!IsLoopbackHost(host)) {
    return -1;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    // "localhost" must resolve to loopback too.
    if (!IsLoopbackAddress(*a)) {
      continue;
    }
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (timeout_s > 0) {
    // A hung server fails the request instead of the benchmark.
    const timeval tv{timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool ReplyReader::Fill(int fd) {
  if (pos_ > 0) {
    pending_.erase(0, pos_);
    pos_ = 0;
  }
  const size_t had = pending_.size();
  pending_.resize(had + kFillBytes);
  ssize_t n;
  do {
    n = recv(fd, pending_.data() + had, kFillBytes, 0);
  } while (n < 0 && errno == EINTR);
  pending_.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
  return n > 0;
}

bool ReplyReader::ReadInto(int fd, char* out, size_t length) {
  const size_t buffered = std::min(length, pending_.size() - pos_);
  std::memcpy(out, pending_.data() + pos_, buffered);
  pos_ += buffered;
  for (size_t have = buffered; have < length;) {
    const ssize_t n = recv(fd, out + have, length - have, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    have += static_cast<size_t>(n);
  }
  return true;
}

bool ReplyReader::Read(int fd, int& status, std::string& body) {
  body.clear();
  size_t head_end;
  while ((head_end = std::string_view(pending_).find("\r\n\r\n", pos_)) == std::string::npos) {
    if (!Fill(fd)) {
      return false;
    }
  }
  const std::string_view head(pending_.data() + pos_, head_end - pos_);
  if (head.size() < 12 || head.substr(0, 5) != "HTTP/") {
    return false;
  }
  status = std::atoi(std::string(head.substr(9, 3)).c_str());
  const std::string length_text(HeaderValue(head, "content-length:"));
  const bool chunked = HeaderValue(head, "transfer-encoding:").starts_with("chunked");
  pos_ = head_end + 4;
  if (!length_text.empty()) {
    const size_t length = std::strtoull(length_text.c_str(), nullptr, 10);
    // Same-sized replies reuse the string's bytes as they are: no zeroing.
    body.resize(length);
    return ReadInto(fd, body.data(), length);
  }
  if (!chunked) {
    return false;  // neither: not something kube-scheduler's client reads
  }
  for (;;) {
    size_t eol;
    while ((eol = std::string_view(pending_).find("\r\n", pos_)) == std::string::npos) {
      if (!Fill(fd)) {
        return false;
      }
    }
    const size_t size = std::strtoull(pending_.c_str() + pos_, nullptr, 16);
    pos_ = eol + 2;
    const size_t at = body.size();
    body.resize(at + size);
    char crlf[2];
    if (!ReadInto(fd, body.data() + at, size) || !ReadInto(fd, crlf, 2) ||
        std::string_view(crlf, 2) != "\r\n") {
      return false;  // a chunk longer than its size line says
    }
    if (size == 0) {
      return true;
    }
  }
}

bool LoopbackConnection::Exchange(std::string_view request, int& status, std::string& body) {
  if (fd_ < 0) {
    fd_ = ConnectLoopback(host_, port_, timeout_s_);
    reader_.Reset();
    if (fd_ < 0) {
      return false;
    }
  }
  if (!SendAll(fd_, request) || !reader_.Read(fd_, status, body)) {
    Close();
    return false;
  }
  return true;
}

void LoopbackConnection::Close() {
  if (fd_ >= 0) {
    close(fd_);
  }
  fd_ = -1;
}

bool CarriesError(std::string_view body) {
  // A find() stops at every '"' (every few bytes of JSON) to compare the rest;
  // Horspool skips up to the key's length per step.
  static constexpr std::string_view kKey = "\"Error\":\"";
  const std::boyer_moore_horspool_searcher searcher(kKey.begin(), kKey.end());
  for (auto it = std::search(body.begin(), body.end(), searcher); it != body.end();
       it = std::search(it + 1, body.end(), searcher)) {
    const size_t at = static_cast<size_t>(it - body.begin());
    if (at + kKey.size() < body.size() && body[at + kKey.size()] != '"') {
      return true;
    }
  }
  return false;
}

}  // namespace schedext::bench
