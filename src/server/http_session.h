// One HTTP/1.1 connection of the listener: a small state machine on Asio,
// generic over the stream so that plain TCP (beast::tcp_stream) and TLS
// (asio::ssl::stream<beast::tcp_stream>, see tls_session.h for why not beast::ssl_stream) share every line of the framing.
//
//   accept ─► [handshake] ─► idle ─► head ─► body ─► handling ─► writing ─┐
//                             ▲                                           │
//                             └──────────── keep-alive ◄──────────────────┘
//
// Deadlines are absolute, not per read: the header section must be complete
// within headerTimeoutSeconds of the connection's accept (first request) or
// of its first byte (later requests), the body within bodyTimeoutSeconds of
// the head, a reply written within writeTimeoutSeconds; an idle keep-alive
// connection is closed after keepAliveTimeoutSeconds. A deadline that passes
// closes the connection (beast::tcp_stream's timer). Header bytes are bounded
// by maxHeaderBytes (431), the body by maxBodyBytes from Content-Length before
// any body byte is read (413). A Content-Length body is read straight into the
// worker's padded RequestBuffer, in reads as large as the socket has data for.
// Pipelined requests are read one at a time after the previous reply, so they
// are answered in order and a client cannot queue work without limit.
//
// A refused head (framing, limits) gets its status with `Connection: close`;
// the connection then shuts down its sending side and reads and drops what
// the client still sends for a short while (a lingering close), so the client
// reads the refusal instead of a reset.
//
// A connection belongs to one I/O thread's io_context, run by that thread
// alone, so its handlers never run concurrently (no strand). Verbs run on the
// I/O thread (CPU work, latency-sensitive), except where the exchange says
// otherwise (Exchange::Received: binds, large bodies); the session then
// resumes on its io_context afterwards.
//
// The session moves bytes and keeps time; what a request means (its route,
// buffers, running it, the reply's bytes) is its Exchange's (http_exchange.h).
// The member functions are in http_session.cc, instantiated there for the two
// streams; only the listener's sources include this header (Asio and Beast).
#ifndef SCHEDEXT_SRC_SERVER_HTTP_SESSION_H_
#define SCHEDEXT_SRC_SERVER_HTTP_SESSION_H_

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/http_exchange.h"
#include "server/http_framing.h"
#include "server/server_core.h"

namespace schedext::server::http {

namespace net = boost::asio;
namespace beast = boost::beast;
using Clock = std::chrono::steady_clock;

// What differs between plain TCP and TLS, for the session template. The TLS
// listener specialises it for net::ssl::stream<beast::tcp_stream>
// (tls_session.h). Handshake and Shutdown run under the deadline already set
// on the lowest layer; SetReceiveLowWater says whether the stream took the
// mark.
template <class Stream>
struct StreamOps;

template <>
struct StreamOps<beast::tcp_stream> {
  template <class Handler>
  static void Handshake(beast::tcp_stream&, Handler&& handler) {
    handler(beast::error_code());
  }
  template <class Handler>
  static void Shutdown(beast::tcp_stream& stream, Handler&& handler) {
    beast::error_code ec;
    stream.socket().shutdown(net::socket_base::shutdown_send, ec);
    handler(ec);
  }
  // A read then completes once `bytes` have arrived (SO_RCVLOWAT), never
  // above what is still due: the session's large-body reads (ReadBody).
  static bool SetReceiveLowWater(beast::tcp_stream& stream, size_t bytes) {
    const int value = static_cast<int>(bytes);
    return ::setsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_RCVLOWAT, &value,
                        sizeof value) == 0;
  }
};

template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  // `stream` must belong to `ioc`, which one thread runs. `keep` (may be
  // null) is held as long as the connection: the TLS context the stream was
  // made with.
  Session(ServerCore& core, net::io_context& ioc, Stream stream, bool status_only,
          std::shared_ptr<void> keep = nullptr);
  ~Session() override;

  // Called once, right after construction through std::make_shared; the
  // caller has counted the connection in core.connections.
  void Start();
  void Drain() override;

 private:
  enum class State { kHandshake, kIdle, kHead, kBody, kHandling, kWriting, kClosing, kDone };
  static constexpr size_t kReadChunk = size_t{16} << 10;
  static constexpr size_t kBodyLowWaterBytes = size_t{1} << 20;  // SetReceiveLowWater
  // A lingering close reads and drops at most this much, for at most this long.
  static constexpr size_t kLingerBytes = size_t{64} << 20;
  static constexpr std::chrono::seconds kLingerTime{2};

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }
  std::string_view Buffered() const { return {in_.get() + in_begin_, in_end_ - in_begin_}; }
  template <typename... Args>
  void Warn(fmt::format_string<Args...> format, Args&&... args);

  void OnHandshake(beast::error_code ec);
  void MakeRoom();
  void ReadHead();
  void OnHeadRead(beast::error_code ec, size_t n);
  void ProcessHead();
  void StartBody();
  void ReadBody();
  void SetReceiveLowWater(size_t bytes);
  void FeedChunked();
  void BodyFailed(beast::error_code ec);
  void Dispatch();
  std::function<void()> RunAwayJob();
  void Refuse(int status, std::string message);
  void WriteReply();
  void OnWritten(beast::error_code ec, bool keep);
  void CloseGracefully();
  void Linger();
  void Finish();

  std::shared_ptr<void> keep_;  // before stream_: outlives it
  ServerCore& core_;
  net::io_context& ioc_;
  Stream stream_;
  const bool status_only_;
  net::ip::tcp::endpoint peer_;
  State state_ = State::kHandshake;
  Clock::time_point read_deadline_;
  Clock::time_point body_deadline_;

  // Received bytes not consumed yet: [in_begin_, in_end_) of in_.
  std::unique_ptr<char[]> in_;
  size_t in_cap_ = 0;
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  size_t scanned_ = 0;  // of the buffered bytes, already searched for the head's end
  size_t lingered_ = 0;

  // The request being served: its framing here, the rest in exchange_.
  Exchange exchange_;
  bool keep_alive_ = true;
  BodyFraming framing_ = BodyFraming::kNone;
  uint64_t content_length_ = 0;
  uint64_t remaining_ = 0;
  size_t receive_low_water_ = 1;  // SO_RCVLOWAT as last set on the socket
  std::optional<ChunkedDecoder> decoder_;
  size_t requests_ = 0;
  // The pieces of the reply being written, kept for the next one.
  std::vector<net::const_buffer> write_buffers_;
};

}  // namespace schedext::server::http

#endif  // SCHEDEXT_SRC_SERVER_HTTP_SESSION_H_
