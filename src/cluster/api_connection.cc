// The API client's connections; see api_connection.h.
#include "cluster/api_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

namespace schedext::cluster {
namespace {

using Clock = std::chrono::steady_clock;

// Plain connections read the socket in chunks of this size (the library's
// own reads are 4 KB, each after a poll).
constexpr size_t kReadChunk = 256 * 1024;

// The plain connection's stream, over the socket the library opened: reads
// the socket in large chunks and counts what arrives. The library's own
// stream asks for 4 KB at a time (a poll and a recv each, two syscalls per
// 4 KB of a LIST page); served from `buffer` instead, a 2.8 MB page takes ~11
// recv calls when the data is there. Bytes are only read ahead within the
// current response's process_socket call (no pipelining, so nothing follows
// the response). Each wait for the socket is bounded by the client's read or
// write timeout, as the library's stream's are.
class PlainSocketStream final : public httplib::Stream {
 public:
  PlainSocketStream(socket_t fd, std::chrono::microseconds read_timeout,
                    std::chrono::microseconds write_timeout, ConnectionProbe& probe,
                    std::vector<char>& buffer)
      : fd_(fd),
        read_timeout_(read_timeout),
        write_timeout_(write_timeout),
        probe_(probe),
        buffer_(buffer) {}

  bool is_readable() const override { return begin_ < end_ || Wait(POLLIN, read_timeout_); }
  bool is_writable() const override { return Wait(POLLOUT, write_timeout_); }
  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      if (!Wait(POLLIN, read_timeout_)) {
        return -1;
      }
      if (buffer_.size() < kReadChunk) {
        buffer_.resize(kReadChunk);
      }
      ssize_t n;
      do {
        n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) {
        return n;
      }
      probe_.response_bytes += static_cast<uint64_t>(n);
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t take = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_.data() + begin_, take);
    begin_ += take;
    return static_cast<ssize_t>(take);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!Wait(POLLOUT, write_timeout_)) {
      return -1;
    }
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  // Whether the socket is ready for `events` within `timeout`.
  bool Wait(short events, std::chrono::microseconds timeout) const {
    pollfd p{.fd = fd_, .events = events, .revents = 0};
    const auto until = Clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
      const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      if (r > 0) {
        return (p.revents & (events | POLLHUP | POLLERR)) != 0;
      }
      if (r == 0 || errno != EINTR) {
        return false;
      }
    }
  }
  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      port = ntohs(in->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      port = ntohs(in6->sin6_port);
    }
    ip = text;
  }

  const socket_t fd_;
  const std::chrono::microseconds read_timeout_;
  const std::chrono::microseconds write_timeout_;
  ConnectionProbe& probe_;
  std::vector<char>& buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// Plain HTTP: the library's client over a PlainSocketStream of ours, given to
// it through process_socket, the hook the library gives subclasses for the
// stream a request runs on.
class PlainClient final : public httplib::ClientImpl, public Probed {
 public:
  PlainClient(const std::string& host, int port) : httplib::ClientImpl(host, port) {}
  bool SocketOpen() const override {
    std::lock_guard<std::mutex> lock(socket_mutex_);
    return socket_.is_open();
  }

 private:
  bool process_socket(const Socket& socket,
                      std::function<bool(httplib::Stream& strm)> callback) override {
    using std::chrono::microseconds;
    using std::chrono::seconds;
    PlainSocketStream stream(socket.sock,
                             seconds(read_timeout_sec_) + microseconds(read_timeout_usec_),
                             seconds(write_timeout_sec_) + microseconds(write_timeout_usec_),
                             probe, read_buffer_);
    return callback(stream);
  }

  std::vector<char> read_buffer_;  // kept for the connection's next requests
};

// TLS: SSLClient keeps its stream private, so OpenSSL's message callback
// counts decrypted application-data records instead (a close_notify alert or
// a post-handshake session ticket is not a response byte).
void OnTlsMessage(int write_p, int /*version*/, int content_type, const void* buf, size_t len,
                  SSL* ssl, void* arg) {
  if (write_p != 0 || arg == nullptr || len < 1) {
    return;
  }
  const unsigned char type = *static_cast<const unsigned char*>(buf);
  // TLS 1.3 hides the real type inside the encrypted record (reported once
  // decrypted); TLS 1.2 shows it in the record header.
  const bool app_data =
      SSL_version(ssl) == TLS1_3_VERSION
          ? content_type == SSL3_RT_INNER_CONTENT_TYPE && type == SSL3_RT_APPLICATION_DATA
          : content_type == SSL3_RT_HEADER && type == SSL3_RT_APPLICATION_DATA;
  if (app_data) {
    ++static_cast<ConnectionProbe*>(arg)->response_bytes;
  }
}

class TlsClient final : public httplib::SSLClient, public Probed {
 public:
  TlsClient(const std::string& host, int port) : httplib::SSLClient(host, port) {
    if (SSL_CTX* ctx = ssl_context()) {
      SSL_CTX_set_msg_callback(ctx, OnTlsMessage);
      SSL_CTX_set_msg_callback_arg(ctx, &probe);
    }
  }
  bool SocketOpen() const override {
    std::lock_guard<std::mutex> lock(socket_mutex_);
    return socket_.is_open();
  }
};

}  // namespace

std::unique_ptr<httplib::ClientImpl> NewPlainClient(const std::string& host, int port,
                                                    Probed** probed) {
  auto client = std::make_unique<PlainClient>(host, port);
  *probed = client.get();
  return client;
}

std::unique_ptr<httplib::SSLClient> NewTlsClient(const std::string& host, int port,
                                                 Probed** probed) {
  auto client = std::make_unique<TlsClient>(host, port);
  *probed = client.get();
  return client;
}

}  // namespace schedext::cluster
