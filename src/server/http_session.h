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
// I/O thread (CPU work, latency-sensitive), except those with large bodies,
// which run on ServerCore::large_verbs so that no request holds up the other
// connections of its thread; bind calls the Kubernetes API, so it runs on
// ServerCore::binds. Either way the session resumes on its io_context
// afterwards.
//
// Only http_server.cc (and the TLS listener's .cc) include this header: it
// pulls in Asio and Beast.
#ifndef SCHEDEXT_SRC_SERVER_HTTP_SESSION_H_
#define SCHEDEXT_SRC_SERVER_HTTP_SESSION_H_

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "schedext/config/config.h"
#include "schedext/wire/encoder.h"
#include "server/blocking_pool.h"
#include "server/http_exchange.h"
#include "server/http_framing.h"
#include "server/request_log.h"

namespace schedext::server::http {

namespace net = boost::asio;
namespace beast = boost::beast;
using Clock = std::chrono::steady_clock;

// What differs between plain TCP and TLS, for the session template. The TLS
// listener specialises it for net::ssl::stream<beast::tcp_stream> (tls_session.h): Handshake
// runs async_handshake (server side), Shutdown async_shutdown; both under the
// deadline already set on the lowest layer.
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
};

// Asio's transfer_all() caps every write at 64 KiB: a 220 KB reply went out
// in four sendmsg calls, each with its own wait and timer, where the kernel
// takes it in one (or as much as the socket buffer holds).
struct TransferAllInLargeWrites {
  size_t operator()(const beast::error_code& ec, size_t) const {
    return ec ? 0 : size_t{64} << 20;
  }
};

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // From any thread: closes the connection if it is between requests; a
  // request being read or handled finishes and is answered with
  // `Connection: close` (ServerCore::draining).
  virtual void Drain() = 0;
};

// What all connections of one HttpServer share.
struct ServerCore {
  ServerCore(const config::ServerConfig& c, const ExtenderService& service, Metrics* metrics,
             const HttpServerOptions& options)
      : config(c),
        router(service, metrics, options),
        workers(c.keep_buffer_bytes, c.keep_large_buffers,
                wire::DecoderOptions{.split_min_bytes = c.parallel_decode_bytes == 0
                                                            ? SIZE_MAX
                                                            : c.parallel_decode_bytes}),
        binds(c.bind_threads, static_cast<size_t>(c.max_pending_binds)),
        // A connection has at most one request in flight, so maxConnections
        // bounds the queue; a refused post runs on the I/O thread instead.
        large_verbs(IoThreads(c), static_cast<size_t>(std::max(c.max_connections, 1))),
        transport_warnings(
            LogLimiter::Options{10.0, 20, "warnings about refused or broken connections"}, metrics) {
    limits.max_header_bytes = c.max_header_bytes;
    limits.max_body_bytes = c.max_body_bytes;
  }

  // server.threads, 0 meaning one per core: the I/O threads, and as many
  // for large verbs.
  static int IoThreads(const config::ServerConfig& c) {
    return c.threads > 0 ? c.threads
                         : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }

  void Register(const std::shared_ptr<SessionBase>& s) {
    std::lock_guard<std::mutex> lock(mu);
    sessions.emplace(s.get(), s);
  }
  void Unregister(SessionBase* s) {
    std::lock_guard<std::mutex> lock(mu);
    sessions.erase(s);
    connections.fetch_sub(1, std::memory_order_relaxed);
  }
  // Drain: every connection closes once it is between requests.
  void DrainAll() {
    draining.store(true);
    std::vector<std::shared_ptr<SessionBase>> live;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& [raw, weak] : sessions) {
        if (std::shared_ptr<SessionBase> s = weak.lock()) {
          live.push_back(std::move(s));
        }
      }
    }
    for (const std::shared_ptr<SessionBase>& s : live) {
      s->Drain();
    }
  }

  const config::ServerConfig& config;
  HeadLimits limits;
  Router router;
  WorkerPool workers;
  BlockingPool binds;
  // Verbs with bodies from config.offload_body_bytes up (Session::Dispatch).
  BlockingPool large_verbs;
  LogLimiter transport_warnings;
  std::atomic<bool> draining{false};
  std::atomic<int> connections{0};  // accepted and not yet destroyed
  std::mutex mu;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;  // guarded by mu
};

template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  // `stream` must belong to `ioc`, which one thread runs. `keep` (may be
  // null) is held as long as the connection: the TLS context the stream was
  // made with.
  Session(ServerCore& core, net::io_context& ioc, Stream stream, bool status_only,
          std::shared_ptr<void> keep = nullptr)
      : keep_(std::move(keep)),
        core_(core),
        ioc_(ioc),
        stream_(std::move(stream)),
        status_only_(status_only) {}

  ~Session() override {
    if (worker_ != nullptr) {
      core_.workers.Release(std::move(worker_));
    }
    core_.Unregister(this);
  }

  // Called once, right after construction through std::make_shared; the
  // caller has counted the connection in core.connections.
  void Start() {
    core_.Register(this->shared_from_this());
    beast::error_code ec;
    peer_ = Lowest().socket().remote_endpoint(ec);
    Lowest().socket().set_option(net::ip::tcp::no_delay(true), ec);
    read_deadline_ = Clock::now() + std::chrono::seconds(core_.config.header_timeout_seconds);
    // Everything from here on runs on the connection's io_context.
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      self->Lowest().expires_at(self->read_deadline_);
      StreamOps<Stream>::Handshake(self->stream_,
                                   [self](beast::error_code e) { self->OnHandshake(e); });
    });
  }

  void Drain() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->state_ == State::kIdle || self->state_ == State::kHandshake) {
        self->Finish();
      }
    });
  }

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
  void Warn(fmt::format_string<Args...> format, Args&&... args) {
    // TODO(request_log): once service.cc logs peers the same way, share one
    // limiter for all client-triggered warnings.
    if (core_.transport_warnings.Allow()) {
      spdlog::warn("connection from {}: {}", peer_.address().to_string(),
                   fmt::format(format, std::forward<Args>(args)...));
    }
  }

  void OnHandshake(beast::error_code ec) {
    if (ec) {
      Warn("handshake failed: {}", LogEscape(ec.message()));
      return Finish();
    }
    state_ = State::kIdle;
    ReadHead();
  }

  // Room for at least one read in in_: compacts, and grows it up to what a
  // head may need.
  void MakeRoom() {
    if (in_begin_ == in_end_) {
      in_begin_ = in_end_ = 0;
    }
    if (in_ == nullptr) {
      in_cap_ = kReadChunk;
      in_.reset(new char[in_cap_]);
    }
    if (in_cap_ - in_end_ >= kReadChunk / 4) {
      return;
    }
    if (in_begin_ > 0) {
      std::memmove(in_.get(), in_.get() + in_begin_, in_end_ - in_begin_);
      in_end_ -= in_begin_;
      in_begin_ = 0;
    }
    if (in_cap_ - in_end_ < kReadChunk / 4) {
      const size_t grown = in_cap_ * 2;
      std::unique_ptr<char[]> bigger(new char[grown]);
      std::memcpy(bigger.get(), in_.get(), in_end_);
      in_ = std::move(bigger);
      in_cap_ = grown;
    }
  }

  void ReadHead() {
    MakeRoom();
    Lowest().expires_at(read_deadline_);
    stream_.async_read_some(net::buffer(in_.get() + in_end_, in_cap_ - in_end_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->OnHeadRead(ec, n);
                            });
  }

  void OnHeadRead(beast::error_code ec, size_t n) {
    if (ec) {
      if (ec == beast::error::timeout && state_ == State::kHead) {
        Warn("request head not complete within {} s (server.headerTimeoutSeconds); closed",
             core_.config.header_timeout_seconds);
      } else if (state_ == State::kHead && ec != net::error::operation_aborted) {
        spdlog::debug("connection from {}: closed inside a request head: {}",
                      peer_.address().to_string(), ec.message());
      }
      return Finish();
    }
    in_end_ += n;
    if (state_ == State::kIdle) {
      // A request has begun: its head is due within headerTimeoutSeconds (of
      // the accept for the first request, so a silent connection is cut too).
      state_ = State::kHead;
      read_deadline_ = std::min(
          read_deadline_, Clock::now() + std::chrono::seconds(core_.config.header_timeout_seconds));
    }
    ProcessHead();
  }

  // Looks for a complete head in what is buffered; reads more when there is none.
  void ProcessHead() {
    const HeadScan scan = ScanHead(Buffered(), core_.limits.max_header_bytes, scanned_);
    in_begin_ += scan.skip;
    if (scan.bare_lf) {
      return Refuse(400, "a line of the request head ends in LF without CR");
    }
    if (scan.too_large) {
      return Refuse(431, "request header section larger than " +
                             std::to_string(core_.limits.max_header_bytes) +
                             " bytes (server.maxHeaderBytes)");
    }
    if (scan.length == 0) {
      scanned_ = in_end_ - in_begin_;
      return ReadHead();
    }
    scanned_ = 0;
    RequestHead head;
    const HeadResult result =
        ParseRequestHead(Buffered().substr(0, scan.length), core_.limits, head);
    if (!result.ok()) {
      in_begin_ += scan.length;
      return Refuse(result.status, result.error);
    }
    // The head's views die with the next read into in_: keep copies.
    method_.assign(head.method);
    path_.assign(head.path);
    content_type_.reset();
    if (head.content_type) {
      content_type_.emplace(*head.content_type);
    }
    keep_alive_ = head.keep_alive;
    http10_ = head.minor_version == 0;
    framing_ = head.framing;
    content_length_ = head.content_length;
    const bool expect_continue = head.expect_continue && framing_ != BodyFraming::kNone;
    in_begin_ += scan.length;
    ++requests_;

    route_ = core_.router.Resolve(
        method_, path_,
        content_type_ ? std::optional<std::string_view>(*content_type_) : std::nullopt,
        status_only_);
    route_.head_only = method_ == "HEAD";
    worker_ = core_.workers.Acquire(content_length_);
    if (framing_ == BodyFraming::kNone) {
      return Dispatch();
    }
    state_ = State::kBody;
    body_deadline_ = Clock::now() + std::chrono::seconds(core_.config.body_timeout_seconds);
    if (expect_continue) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      Lowest().expires_at(body_deadline_);
      return net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                              [self = this->shared_from_this()](beast::error_code ec, size_t) {
                                if (ec) {
                                  return self->Finish();
                                }
                                self->StartBody();
                              });
    }
    StartBody();
  }

  void StartBody() {
    wire::RequestBuffer& body = worker_->body;
    body.Clear();
    if (framing_ == BodyFraming::kChunked) {
      decoder_.emplace(core_.limits.max_body_bytes, core_.limits.max_header_bytes);
      return FeedChunked();
    }
    body.Reserve(content_length_);
    const size_t have = std::min<size_t>(in_end_ - in_begin_, content_length_);
    body.Append(in_.get() + in_begin_, have);
    in_begin_ += have;
    remaining_ = content_length_ - have;
    offer_body_ = route_.kind == Route::Kind::kVerb &&
                  (route_.verb == Verb::kFilter || route_.verb == Verb::kPrioritize);
    ReadBody();
  }

  void ReadBody() {
    if (remaining_ == 0) {
      return Dispatch();
    }
    if (offer_body_) {
      offer_body_ = worker_->scratch.decoder.DecodeWhileReceiving(worker_->body, content_length_,
                                                                  route_.node_fields);
    }
    Lowest().expires_at(body_deadline_);
    const size_t want = static_cast<size_t>(remaining_);
    if (want >= kBodyLowWaterBytes || receive_low_water_ > 1) {
      SetReceiveLowWater(std::min(want, kBodyLowWaterBytes));
    }
    stream_.async_read_some(net::buffer(worker_->body.Tail(want), want),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) {
                                return self->BodyFailed(ec);
                              }
                              self->worker_->body.Commit(n);
                              self->remaining_ -= n;
                              self->ReadBody();
                            });
  }

  // A large body is read with the socket's low-water mark at
  // kBodyLowWaterBytes, or at the rest of the body when less is due, so the
  // kernel wakes this thread once per MiB queued instead of once per segment
  // (64 KB on loopback). Each wake-up is an interrupt round trip on a
  // virtual machine: bench/ab --mode full, p50 -8.4 % at 5,000 nodes (lower
  // in 12 of 12 pairs), -17.9 % at 15,000; 256 KiB and 2-4 MiB did worse
  // than 1 MiB. Never above what is still due, so no read waits for bytes
  // that are not coming. Plain TCP only: under TLS the ciphertext still due
  // can be less than the plaintext still due (records the TLS layer has
  // buffered), so no such bound holds.
  void SetReceiveLowWater(size_t bytes) {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      if (bytes == receive_low_water_) {
        return;
      }
      const int value = static_cast<int>(bytes);
      if (::setsockopt(Lowest().socket().native_handle(), SOL_SOCKET, SO_RCVLOWAT, &value,
                       sizeof value) == 0) {
        receive_low_water_ = bytes;
      }
    }
  }

  void FeedChunked() {
    const ChunkedDecoder::Result r = decoder_->Feed(Buffered(), worker_->body);
    in_begin_ += r.consumed;
    switch (r.state) {
      case ChunkedDecoder::State::kDone:
        return Dispatch();
      case ChunkedDecoder::State::kError:
        return Refuse(r.status, std::string(r.error));
      case ChunkedDecoder::State::kNeedMore:
        break;
    }
    MakeRoom();
    Lowest().expires_at(body_deadline_);
    stream_.async_read_some(net::buffer(in_.get() + in_end_, in_cap_ - in_end_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) {
                                return self->BodyFailed(ec);
                              }
                              self->in_end_ += n;
                              self->FeedChunked();
                            });
  }

  void BodyFailed(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      Warn("request body not complete within {} s (server.bodyTimeoutSeconds); closed",
           core_.config.body_timeout_seconds);
    } else if (ec != net::error::operation_aborted) {
      spdlog::debug("connection from {}: closed inside a request body: {}",
                    peer_.address().to_string(), ec.message());
    }
    Finish();
  }

  void Dispatch() {
    state_ = State::kHandling;
    SetReceiveLowWater(1);  // the next request's head may be a few bytes
    Lowest().expires_never();
    if (route_.kind == Route::Kind::kVerb && route_.verb == Verb::kBind) {
      // kube-scheduler's clock for this request started about now (a bind's
      // body is small); past the deadline it has given up on the answer.
      worker_->scratch.bind_not_after =
          std::chrono::steady_clock::now() +
          std::chrono::milliseconds(core_.config.bind_deadline_millis);
      if (core_.binds.TryPost(RunAwayJob())) {
        return;
      }
      Warn("{} binds waiting (server.maxPendingBinds): bind refused with 503",
           core_.config.max_pending_binds);
      outcome_ = Outcome{503, "application/json"};
      ErrorBody("too many binds waiting for the Kubernetes API (server.maxPendingBinds); retry",
                worker_->out);
      return WriteReply();
    }
    // A large body would hold this I/O thread, and every other connection on
    // it, for as long as it takes to decode and decide; a full pool runs it
    // here rather than refuse it.
    if (route_.kind == Route::Kind::kVerb &&
        worker_->body.size() >= core_.config.offload_body_bytes &&
        core_.large_verbs.TryPost(RunAwayJob())) {
      return;
    }
    outcome_ = core_.router.Run(route_, *worker_);
    WriteReply();
  }

  // A job that runs the route on another thread, then writes the reply from
  // this connection's io_context. The io_context must not run out of work
  // while the request is away. The job's reference to the session is
  // dropped inside the job, before the guard (a closure member, released
  // after the call): if the rest of the connection has finished meanwhile,
  // the Session is destroyed while the io_context still has work, never
  // after Serve() may have returned and the ServerCore gone (found by
  // fuzz/http_session).
  std::function<void()> RunAwayJob() {
    return [self = this->shared_from_this(), guard = net::make_work_guard(ioc_)]() mutable {
      const std::shared_ptr<Session> session = std::move(self);
      session->outcome_ = session->core_.router.Run(session->route_, *session->worker_);
      net::post(session->stream_.get_executor(), [session] { session->WriteReply(); });
    };
  }

  // Answers a refused head or body and closes.
  void Refuse(int status, std::string message) {
    Warn("{} {}", status, LogEscape(message));
    if (worker_ == nullptr) {
      worker_ = core_.workers.Acquire(0);
    }
    route_ = Route{};
    outcome_ = Outcome{status, "application/json"};
    ErrorBody(message, worker_->out);
    keep_alive_ = false;
    WriteReply();
  }

  void WriteReply() {
    const bool keep =
        keep_alive_ && !core_.draining.load() && requests_ < core_.config.keep_alive_max_count;
    Worker& w = *worker_;
    const std::vector<wire::ReplySplice>& splices = w.scratch.reply_splices;
    w.head.clear();
    AppendReplyHead(outcome_.status, outcome_.content_type, wire::SplicedSize(w.out, splices),
                    keep, keep && http10_, route_.allow, w.head);
    state_ = State::kWriting;
    Lowest().expires_after(std::chrono::seconds(core_.config.write_timeout_seconds));
    auto on_written = [self = this->shared_from_this(), keep](beast::error_code ec, size_t) {
      self->OnWritten(ec, keep);
    };
    if (splices.empty() || route_.head_only) {
      const std::array<net::const_buffer, 2> buffers = {
          net::buffer(w.head), route_.head_only ? net::const_buffer() : net::buffer(w.out)};
      return net::async_write(stream_, buffers, TransferAllInLargeWrites{}, std::move(on_written));
    }
    // A filter reply: the envelope from `out`, the passing nodes (or long
    // runs of passing names) from the request body (one buffer per run of
    // adjacent ones), gathered by the kernel instead of copied into `out`
    // first.
    write_buffers_.clear();
    write_buffers_.push_back(net::buffer(w.head));
    size_t from = 0;
    for (const wire::ReplySplice& splice : splices) {
      if (splice.at > from) {
        write_buffers_.push_back(net::buffer(w.out.data() + from, splice.at - from));
      }
      write_buffers_.push_back(net::buffer(splice.bytes.data(), splice.bytes.size()));
      from = splice.at;
    }
    if (w.out.size() > from) {
      write_buffers_.push_back(net::buffer(w.out.data() + from, w.out.size() - from));
    }
    net::async_write(stream_, write_buffers_, TransferAllInLargeWrites{}, std::move(on_written));
  }

  void OnWritten(beast::error_code ec, bool keep) {
    core_.workers.Release(std::move(worker_));
    if (ec) {
      if (ec == beast::error::timeout) {
        Warn("reply not written within {} s (server.writeTimeoutSeconds); closed",
             core_.config.write_timeout_seconds);
      }
      return Finish();
    }
    if (!keep) {
      return CloseGracefully();
    }
    if (in_end_ > in_begin_) {
      // A pipelined request: its head is due from now.
      state_ = State::kHead;
      read_deadline_ = Clock::now() + std::chrono::seconds(core_.config.header_timeout_seconds);
      return ProcessHead();
    }
    if (core_.draining.load()) {
      return CloseGracefully();  // bytes the client sent meanwhile must not reset the reply
    }
    state_ = State::kIdle;
    read_deadline_ = Clock::now() + std::chrono::seconds(core_.config.keep_alive_timeout_seconds);
    if (in_cap_ > kReadChunk) {
      in_.reset();  // an idle connection keeps no large buffer
      in_cap_ = 0;
    }
    ReadHead();
  }

  // After a final reply: no more writes; what the client still sends is read
  // and dropped (bounded), so that closing does not reset the connection
  // before the client has read the reply.
  void CloseGracefully() {
    state_ = State::kClosing;
    Lowest().expires_after(kLingerTime);
    StreamOps<Stream>::Shutdown(stream_, [self = this->shared_from_this()](beast::error_code ec) {
      if (ec) {
        return self->Finish();
      }
      self->in_begin_ = self->in_end_ = 0;
      self->Linger();
    });
  }

  void Linger() {
    MakeRoom();
    stream_.async_read_some(net::buffer(in_.get(), in_cap_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (ec || self->lingered_ > kLingerBytes) {
                                return self->Finish();
                              }
                              self->Linger();
                            });
  }

  void Finish() {
    state_ = State::kDone;
    beast::error_code ec;
    Lowest().socket().close(ec);
  }

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

  // The request being served.
  std::string method_;
  std::string path_;
  std::optional<std::string> content_type_;
  bool keep_alive_ = true;
  bool http10_ = false;
  BodyFraming framing_ = BodyFraming::kNone;
  uint64_t content_length_ = 0;
  uint64_t remaining_ = 0;
  size_t receive_low_water_ = 1;  // SO_RCVLOWAT as last set on the socket
  // A filter or prioritize body still offered to the decoder as it arrives
  // (RequestDecoder::DecodeWhileReceiving).
  bool offer_body_ = false;
  std::optional<ChunkedDecoder> decoder_;
  size_t requests_ = 0;
  Route route_;
  Outcome outcome_;
  std::unique_ptr<Worker> worker_;
  // The pieces of a spliced reply (WriteReply), kept for the next one.
  std::vector<net::const_buffer> write_buffers_;
};

}  // namespace schedext::server::http

#endif  // SCHEDEXT_SRC_SERVER_HTTP_SESSION_H_
