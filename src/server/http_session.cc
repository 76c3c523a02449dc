// Session's member functions, and their instantiations for plain TCP and TLS;
// see http_session.h.
#include "server/http_session.h"

#include <algorithm>
#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <cstring>
#include <string_view>
#include <utility>

#include "server/tls_session.h"

namespace schedext::server::http {
namespace {

// Asio's transfer_all() caps every write at 64 KiB: a 220 KB reply went out
// in four sendmsg calls, each with its own wait and timer, where the kernel
// takes it in one (or as much as the socket buffer holds).
struct TransferAllInLargeWrites {
  size_t operator()(const beast::error_code& ec, size_t) const {
    return ec ? 0 : size_t{64} << 20;
  }
};

}  // namespace

template <class Stream>
Session<Stream>::Session(ServerCore& core, net::io_context& ioc, Stream stream, bool status_only,
                         std::shared_ptr<void> keep)
    : keep_(std::move(keep)),
      core_(core),
      ioc_(ioc),
      stream_(std::move(stream)),
      status_only_(status_only),
      exchange_(core.router, core.workers, core.config) {}

template <class Stream>
Session<Stream>::~Session() {
  exchange_.End();
  core_.Unregister(this);
}

template <class Stream>
void Session<Stream>::Start() {
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

template <class Stream>
void Session<Stream>::Drain() {
  net::post(stream_.get_executor(), [self = this->shared_from_this()] {
    if (self->state_ == State::kIdle || self->state_ == State::kHandshake) {
      self->Finish();
    }
  });
}

template <class Stream>
template <typename... Args>
void Session<Stream>::Warn(fmt::format_string<Args...> format, Args&&... args) {
  if (core_.transport_warnings.Allow()) {
    spdlog::warn("connection from {}: {}", peer_.address().to_string(),
                 fmt::format(format, std::forward<Args>(args)...));
  }
}

template <class Stream>
void Session<Stream>::OnHandshake(beast::error_code ec) {
  if (ec) {
    Warn("handshake failed: {}", LogEscape(ec.message()));
    return Finish();
  }
  state_ = State::kIdle;
  ReadHead();
}

// Room for at least one read in in_: compacts, and grows it up to what a
// head may need.
template <class Stream>
void Session<Stream>::MakeRoom() {
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

template <class Stream>
void Session<Stream>::ReadHead() {
  MakeRoom();
  Lowest().expires_at(read_deadline_);
  stream_.async_read_some(net::buffer(in_.get() + in_end_, in_cap_ - in_end_),
                          [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                            self->OnHeadRead(ec, n);
                          });
}

template <class Stream>
void Session<Stream>::OnHeadRead(beast::error_code ec, size_t n) {
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
template <class Stream>
void Session<Stream>::ProcessHead() {
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
  const HeadResult result = ParseRequestHead(Buffered().substr(0, scan.length), core_.limits, head);
  if (!result.ok()) {
    in_begin_ += scan.length;
    return Refuse(result.status, result.error);
  }
  // The head's views die with the next read into in_: the exchange takes
  // what it needs of them now.
  exchange_.Begin(head, status_only_);
  keep_alive_ = head.keep_alive;
  framing_ = head.framing;
  content_length_ = head.content_length;
  const bool expect_continue = head.expect_continue && framing_ != BodyFraming::kNone;
  in_begin_ += scan.length;
  ++requests_;
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

template <class Stream>
void Session<Stream>::StartBody() {
  wire::RequestBuffer& body = exchange_.body();
  if (framing_ == BodyFraming::kChunked) {
    decoder_.emplace(core_.limits.max_body_bytes, core_.limits.max_header_bytes);
    return FeedChunked();
  }
  body.Reserve(content_length_);
  const size_t have = std::min<size_t>(in_end_ - in_begin_, content_length_);
  body.Append(in_.get() + in_begin_, have);
  in_begin_ += have;
  remaining_ = content_length_ - have;
  ReadBody();
}

template <class Stream>
void Session<Stream>::ReadBody() {
  if (remaining_ == 0) {
    return Dispatch();
  }
  exchange_.BodyProgress(content_length_);
  Lowest().expires_at(body_deadline_);
  const size_t want = static_cast<size_t>(remaining_);
  if (want >= kBodyLowWaterBytes || receive_low_water_ > 1) {
    SetReceiveLowWater(std::min(want, kBodyLowWaterBytes));
  }
  stream_.async_read_some(net::buffer(exchange_.body().Tail(want), want),
                          [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                            if (ec) {
                              return self->BodyFailed(ec);
                            }
                            self->exchange_.body().Commit(n);
                            self->remaining_ -= n;
                            self->ReadBody();
                          });
}

// A large body is read with the socket's low-water mark at
// kBodyLowWaterBytes, or at the rest of the body when less is due, so the
// kernel wakes this thread once per MiB queued instead of once per segment
// (64 KB on loopback). Each wake-up is an interrupt round trip on a virtual
// machine: bench/ab --mode full, p50 -8.4 % at 5,000 nodes (lower in 12 of 12
// pairs), -17.9 % at 15,000; 256 KiB and 2-4 MiB did worse than 1 MiB. Never
// above what is still due, so no read waits for bytes that are not coming.
// The TLS stream declines: the ciphertext still due can be less than the
// plaintext still due (records the TLS layer has buffered), so no such bound
// holds.
template <class Stream>
void Session<Stream>::SetReceiveLowWater(size_t bytes) {
  if (bytes != receive_low_water_ && StreamOps<Stream>::SetReceiveLowWater(stream_, bytes)) {
    receive_low_water_ = bytes;
  }
}

template <class Stream>
void Session<Stream>::FeedChunked() {
  const ChunkedDecoder::Result r = decoder_->Feed(Buffered(), exchange_.body());
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

template <class Stream>
void Session<Stream>::BodyFailed(beast::error_code ec) {
  if (ec == beast::error::timeout) {
    Warn("request body not complete within {} s (server.bodyTimeoutSeconds); closed",
         core_.config.body_timeout_seconds);
  } else if (ec != net::error::operation_aborted) {
    spdlog::debug("connection from {}: closed inside a request body: {}",
                  peer_.address().to_string(), ec.message());
  }
  Finish();
}

template <class Stream>
void Session<Stream>::Dispatch() {
  state_ = State::kHandling;
  SetReceiveLowWater(1);  // the next request's head may be a few bytes
  Lowest().expires_never();
  switch (exchange_.Received()) {
    case Exchange::RunOn::kBindPool:
      if (core_.binds.TryPost(RunAwayJob())) {
        return;
      }
      Warn("{} binds waiting (server.maxPendingBinds): bind refused with 503",
           core_.config.max_pending_binds);
      exchange_.Refuse(
          503, "too many binds waiting for the Kubernetes API (server.maxPendingBinds); retry");
      return WriteReply();
    case Exchange::RunOn::kLargeVerbPool:
      // A full pool runs it here rather than refuse it.
      if (core_.large_verbs.TryPost(RunAwayJob())) {
        return;
      }
      break;
    case Exchange::RunOn::kIoThread:
      break;
  }
  exchange_.Run();
  WriteReply();
}

// A job that runs the exchange on another thread, then writes the reply from
// this connection's io_context. The io_context must not run out of work
// while the request is away. The job's reference to the session is dropped
// inside the job, before the guard (a closure member, released after the
// call): if the rest of the connection has finished meanwhile, the Session is
// destroyed while the io_context still has work, never after Serve() may have
// returned and the ServerCore gone (found by fuzz/http_session).
template <class Stream>
std::function<void()> Session<Stream>::RunAwayJob() {
  return [self = this->shared_from_this(), guard = net::make_work_guard(ioc_)]() mutable {
    const std::shared_ptr<Session> session = std::move(self);
    session->exchange_.Run();
    net::post(session->stream_.get_executor(), [session] { session->WriteReply(); });
  };
}

// Answers a refused head or body and closes.
template <class Stream>
void Session<Stream>::Refuse(int status, std::string message) {
  Warn("{} {}", status, LogEscape(message));
  exchange_.Refuse(status, message);
  keep_alive_ = false;
  WriteReply();
}

template <class Stream>
void Session<Stream>::WriteReply() {
  const bool keep =
      keep_alive_ && !core_.draining.load() && requests_ < core_.config.keep_alive_max_count;
  write_buffers_.clear();
  for (const std::string_view piece : exchange_.Reply(keep)) {
    write_buffers_.push_back(net::buffer(piece.data(), piece.size()));
  }
  state_ = State::kWriting;
  Lowest().expires_after(std::chrono::seconds(core_.config.write_timeout_seconds));
  net::async_write(stream_, write_buffers_, TransferAllInLargeWrites{},
                   [self = this->shared_from_this(), keep](beast::error_code ec, size_t) {
                     self->OnWritten(ec, keep);
                   });
}

template <class Stream>
void Session<Stream>::OnWritten(beast::error_code ec, bool keep) {
  exchange_.End();
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
// and dropped (bounded), so that closing does not reset the connection before
// the client has read the reply.
template <class Stream>
void Session<Stream>::CloseGracefully() {
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

template <class Stream>
void Session<Stream>::Linger() {
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

template <class Stream>
void Session<Stream>::Finish() {
  state_ = State::kDone;
  beast::error_code ec;
  Lowest().socket().close(ec);
}

template class Session<beast::tcp_stream>;
template class Session<TlsStream>;

}  // namespace schedext::server::http
