// The TLS half of the listener: how a Session (http_session.h) handshakes and
// shuts down over TLS (TlsStream below). The context comes from
// TlsContextProvider::Current() per accepted connection and is held by the
// session (its `keep`), so a rotation never touches a running connection.
//
// Both operations run under the deadline the session has set on the lowest
// layer: the handshake under the head deadline (a silent or slow client is
// cut off as for plain HTTP), the shutdown under the lingering-close time
// (async_shutdown sends close_notify and waits for the peer's at most that
// long).
//
// Only http_server.cc includes this header: it pulls in Asio SSL and Beast.
#ifndef SCHEDEXT_SRC_SERVER_TLS_SESSION_H_
#define SCHEDEXT_SRC_SERVER_TLS_SESSION_H_

#include <utility>

#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "server/http_session.h"

namespace schedext::server::http {

// Asio's SSL stream, not beast::ssl_stream: Beast 1.81's flat_stream, which
// beast::ssl_stream writes through, turns a buffer sequence that starts with an
// empty buffer into a zero-byte write, and net::async_write takes a zero-byte
// write as the end. That is exactly what async_write hands down after writing
// a reply's head when the body does not fit one TLS record (head + body over
// 16 KiB), so the body was never sent. Asio's stream skips empty buffers.
using TlsStream = net::ssl::stream<beast::tcp_stream>;

template <> struct StreamOps<TlsStream> {
  template <class Handler>
  static void Handshake(TlsStream &stream, Handler &&handler) {
    stream.async_handshake(net::ssl::stream_base::server,
                           std::forward<Handler>(handler));
  }
  template <class Handler>
  static void Shutdown(TlsStream &stream, Handler &&handler) {
    stream.async_shutdown(std::forward<Handler>(handler));
  }
};

} // namespace schedext::server::http

#endif // SCHEDEXT_SRC_SERVER_TLS_SESSION_H_
