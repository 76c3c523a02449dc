// The TLS half of the listener: how a Session (http_session.h) handshakes and
// shuts down over TLS (TlsStream below). The context comes from
// TlsContextProvider::Current() per accepted connection and is held by the
// session (its `keep`), so a rotation never touches a running connection.
//
// Before the handshake the first bytes are read off the TCP stream: a TLS
// connection starts with a handshake record (content type 0x16), and those
// bytes go to the handshake as already received. A client that sent a plain
// HTTP request instead (a scheduler config with enableHTTPS false, curl on
// http://) gets a plain `400` saying so and the connection closes, as Go's
// net/http does, rather than a handshake failure with nothing to read. Any
// other first byte closes the connection at once.
//
// Every step runs under the deadline the session has set on the lowest layer:
// the first read and the handshake under the head deadline (a silent or slow
// client is cut off as for plain HTTP), the shutdown under the lingering-close
// time (async_shutdown sends close_notify and waits for the peer's at most
// that long); the plain-HTTP refusal lingers as a refused head does.
//
// Only the listener (http_server.cc, http_session.cc) includes this header:
// it pulls in Asio SSL and Beast.
#ifndef SCHEDEXT_SRC_SERVER_TLS_SESSION_H_
#define SCHEDEXT_SRC_SERVER_TLS_SESSION_H_

#include <array>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/system/error_category.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "server/http_exchange.h"
#include "server/http_session.h"

namespace schedext::server::http {

// Asio's SSL stream, not beast::ssl_stream: Beast 1.81's flat_stream, which
// beast::ssl_stream writes through, turns a buffer sequence that starts with an
// empty buffer into a zero-byte write, and net::async_write takes a zero-byte
// write as the end. That is exactly what async_write hands down after writing
// a reply's head when the body does not fit one TLS record (head + body over
// 16 KiB), so the body was never sent. Asio's stream skips empty buffers.
using TlsStream = net::ssl::stream<beast::tcp_stream>;

// Why a connection to the TLS port ended before a handshake: what the
// session's "handshake failed: ..." warning says.
enum class NotTls { kPlainHttp = 1, kOther = 2 };

// Boost's error_category has a protected non-virtual destructor by design
// (categories are never deleted through the base); -Wnon-virtual-dtor does not
// know that.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class NotTlsCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "schedext.tls"; }
  std::string message(int value) const override {
    return value == static_cast<int>(NotTls::kPlainHttp)
               ? "client sent a plain HTTP request to the HTTPS port (answered 400)"
               : "client did not start a TLS handshake";
  }
};
#pragma GCC diagnostic pop

inline beast::error_code MakeError(NotTls e) {
  static const NotTlsCategory category;  // stateless; error_code keeps a pointer to it
  return beast::error_code(static_cast<int>(e), category);
}

// The plain-HTTP refusal: a whole HTTP/1.1 reply, Connection: close.
inline std::string PlainHttpOnTlsPortReply() {
  std::string body;
  ErrorBody("client sent a plain HTTP request to the HTTPS port", body);
  std::string reply;
  AppendReplyHead(400, "application/json", body.size(), /*keep_alive=*/false,
                  /*http10_keep_alive=*/false, "", reply);
  return reply + body;
}

template <>
struct StreamOps<TlsStream> {
  // The first read: a ClientHello's first record usually fits it whole; all
  // of it goes to the handshake.
  using FirstBytes = std::array<char, 4096>;
  // After the plain-HTTP refusal: what the client still sends is read and
  // dropped, at most this much for at most this long, so that the close does
  // not reset the connection before the client has read the 400.
  static constexpr size_t kLingerBytes = size_t{1} << 20;
  static constexpr std::chrono::seconds kLingerTime{2};

  template <class Handler>
  static void Handshake(TlsStream& stream, Handler&& handler) {
    auto first = std::make_shared<FirstBytes>();
    beast::tcp_stream& tcp = stream.next_layer();
    tcp.async_read_some(net::buffer(*first), [&stream, first,
                                              handler = std::forward<Handler>(handler)](
                                                 beast::error_code ec, size_t n) mutable {
      if (ec) {
        return handler(ec);
      }
      const auto type = static_cast<unsigned char>((*first)[0]);
      if (type == 0x16) {
        // `first` lives in this handler until the handshake completes.
        return stream.async_handshake(net::ssl::stream_base::server, net::buffer(first->data(), n),
                                      [first, handler = std::move(handler)](
                                          beast::error_code e, size_t) mutable { handler(e); });
      }
      if (type < 'A' || type > 'Z') {
        return handler(MakeError(NotTls::kOther));  // not a request method either
      }
      RefusePlainHttp(stream.next_layer(), std::move(first), std::move(handler));
    });
  }

  template <class Handler>
  static void Shutdown(TlsStream& stream, Handler&& handler) {
    stream.async_shutdown(std::forward<Handler>(handler));
  }
  // Declined: the ciphertext still due can be less than the plaintext still
  // due (records the TLS layer has buffered), so no low-water bound is safe.
  static bool SetReceiveLowWater(TlsStream&, size_t) { return false; }

 private:
  template <class Handler>
  static void RefusePlainHttp(beast::tcp_stream& tcp, std::shared_ptr<FirstBytes> buffer,
                              Handler&& handler) {
    auto reply = std::make_shared<const std::string>(PlainHttpOnTlsPortReply());
    net::async_write(
        tcp, net::buffer(*reply),
        [&tcp, reply, buffer = std::move(buffer), handler = std::forward<Handler>(handler)](
            beast::error_code ec, size_t) mutable {
          if (ec) {
            return handler(MakeError(NotTls::kPlainHttp));
          }
          tcp.socket().shutdown(net::socket_base::shutdown_send, ec);
          tcp.expires_after(kLingerTime);
          Discard(tcp, std::move(buffer), kLingerBytes, std::move(handler));
        });
  }

  // Reads and drops until the peer closes, the linger time passes or `left`
  // bytes have come; then the handler, with the plain-HTTP error.
  template <class Handler>
  static void Discard(beast::tcp_stream& tcp, std::shared_ptr<FirstBytes> buffer, size_t left,
                      Handler&& handler) {
    tcp.async_read_some(net::buffer(*buffer),
                        [&tcp, buffer, left, handler = std::forward<Handler>(handler)](
                            beast::error_code ec, size_t n) mutable {
                          if (ec || n >= left) {
                            return handler(MakeError(NotTls::kPlainHttp));
                          }
                          Discard(tcp, std::move(buffer), left - n, std::move(handler));
                        });
  }
};

}  // namespace schedext::server::http

#endif  // SCHEDEXT_SRC_SERVER_TLS_SESSION_H_
