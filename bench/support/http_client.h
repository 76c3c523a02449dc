// The benchmarks' HTTP/1.1 client side: loopback connections and a reply
// reader that costs the measurement as little as it can.
//
// A full-mode reply is ~50 MB; a reader that receives it in small pieces and
// then copies it into place adds two copies of it to every measured round
// trip, on the same two vCPUs the server runs on. ReplyReader receives a
// Content-Length body, and each chunk of a chunked one, straight into the
// caller's string.
//
// Thread-safety: none; one reader per connection.
#ifndef SCHEDEXT_BENCH_SUPPORT_HTTP_CLIENT_H_
#define SCHEDEXT_BENCH_SUPPORT_HTTP_CLIENT_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace schedext::bench {

// A TCP connection to host:port with TCP_NODELAY set, and receive and send
// timeouts when `timeout_s` > 0; -1 on failure. Only loopback: "localhost"
// must resolve to it, any other host is refused.
int ConnectLoopback(const std::string& host, int port, int timeout_s = 0);

// True when `host` names loopback (127.0.0.1, ::1, localhost).
bool IsLoopbackHost(std::string_view host);

// Writes all of `data`; false on an error or a closed peer.
bool SendAll(int fd, std::string_view data);

// Reads the replies of one connection in order.
class ReplyReader {
 public:
  // The next reply: its status and body (Content-Length or chunked). False
  // when the connection fails or the reply is not HTTP/1.1 framing we read.
  bool Read(int fd, int& status, std::string& body);
  // Forgets buffered bytes (after reconnecting).
  void Reset() { pending_.clear(); }

 private:
  bool Fill(int fd);
  // Moves the next `length` bytes of the stream to `out`: first those
  // buffered, the rest received straight into place.
  bool ReadInto(int fd, char* out, size_t length);

  std::string pending_;  // received, not yet consumed
  size_t pos_ = 0;       // consumed prefix of pending_
};

// A keep-alive connection that reconnects after a failure.
class LoopbackConnection {
 public:
  LoopbackConnection(std::string host, int port, int timeout_s = 0)
      : host_(std::move(host)), port_(port), timeout_s_(timeout_s) {}
  explicit LoopbackConnection(int port) : LoopbackConnection("127.0.0.1", port) {}
  ~LoopbackConnection() { Close(); }
  LoopbackConnection(const LoopbackConnection&) = delete;
  LoopbackConnection& operator=(const LoopbackConnection&) = delete;

  // Sends `request` (a whole HTTP request) and reads the reply. False on a
  // transport failure; the connection is then closed and the next call
  // reconnects.
  bool Exchange(std::string_view request, int& status, std::string& body);
  void Close();

 private:
  std::string host_;
  int port_;
  int timeout_s_;
  int fd_ = -1;
  ReplyReader reader_;
};

// A reply kube-scheduler would treat as failed: "Error":"<non-empty>".
bool CarriesError(std::string_view body);

}  // namespace schedext::bench

#endif  // SCHEDEXT_BENCH_SUPPORT_HTTP_CLIENT_H_
