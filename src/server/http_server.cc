// HttpServer: the listening sockets, the I/O threads and the drain. The
// per-connection work is in http_session.h; routing in http_exchange.h.
#include "schedext/server/http_server.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>

#include "server/http_session.h"
#include "server/tls_context.h"
#include "server/tls_session.h"

namespace schedext::server {
namespace {

namespace beast = http::beast;
namespace net = http::net;
using tcp = net::ip::tcp;

int IoThreads(const config::ServerConfig& c) {
  if (c.threads > 0) {
    return c.threads;
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace

struct HttpServer::Impl {
  Impl(const ExtenderService& service, Metrics* metrics, HttpServerOptions o)
      : options(std::move(o)),
        threads(IoThreads(options.server)),
        ioc(threads),
        core(options.server, service, metrics, options, ioc) {}

  struct Listener {
    explicit Listener(net::io_context& io, bool status) : acceptor(io), retry(io), status_only(status) {}
    tcp::acceptor acceptor;
    net::steady_timer retry;  // after an accept error (e.g. out of file descriptors)
    bool status_only;
    int port = 0;
  };

  Status Listen(const std::string& host, int port, bool status_only);
  void Accept(Listener& l);

  HttpServerOptions options;
  const int threads;
  net::io_context ioc;
  http::ServerCore core;
  std::vector<std::unique_ptr<Listener>> listeners;
  // Set by Bind() when server.tls is configured: the main listener's contexts.
  std::unique_ptr<TlsContextProvider> tls;

  std::mutex mu;
  bool stop_requested = false;  // guarded by mu
  bool serving = false;         // guarded by mu
};

Status HttpServer::Impl::Listen(const std::string& host, int port, bool status_only) {
  const std::string where = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                            std::to_string(port);
  beast::error_code ec;
  tcp::endpoint endpoint;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, static_cast<unsigned short>(port));
  } else {
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      return UnavailableError("listen on " + where + ": cannot resolve the host: " +
                              (ec ? ec.message() : "no address"));
    }
    endpoint = results.begin()->endpoint();
  }
  auto l = std::make_unique<Listener>(ioc, status_only);
  // SO_REUSEADDR only, never SO_REUSEPORT: a second instance on the same port
  // must fail to bind rather than silently share the connections.
  l->acceptor.open(endpoint.protocol(), ec);
  if (!ec) l->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) l->acceptor.bind(endpoint, ec);
  if (!ec) l->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return UnavailableError("listen on " + where + ": cannot bind (" + ec.message() +
                            "; address in use, or not an address of this host)");
  }
  l->port = l->acceptor.local_endpoint().port();
  listeners.push_back(std::move(l));
  return OkStatus();
}

void HttpServer::Impl::Accept(Listener& l) {
  // Each connection gets its own strand: its handlers never run concurrently,
  // while different connections run on all I/O threads.
  l.acceptor.async_accept(net::make_strand(ioc), [this, &l](beast::error_code ec,
                                                            tcp::socket socket) {
    if (ec == net::error::operation_aborted || !l.acceptor.is_open()) {
      return;  // Stop() closed the listener
    }
    if (ec) {
      if (core.transport_warnings.Allow()) {
        spdlog::warn("accept on port {}: {}; retrying in 100 ms", l.port, ec.message());
      }
      l.retry.expires_after(std::chrono::milliseconds(100));
      l.retry.async_wait([this, &l](beast::error_code) {
        if (l.acceptor.is_open()) Accept(l);
      });
      return;
    }
    if (core.connections.load(std::memory_order_relaxed) >= options.server.max_connections) {
      // Closed at once: a flood of connections costs a descriptor for a moment.
      if (core.transport_warnings.Allow()) {
        spdlog::warn("{} connections open (server.maxConnections): closed a new one from {}",
                     options.server.max_connections,
                     socket.remote_endpoint(ec).address().to_string());
      }
      socket.close(ec);
    } else {
      core.connections.fetch_add(1, std::memory_order_relaxed);
      if (tls != nullptr && !l.status_only) {
        // The session keeps the context it was made with: a rotation only
        // changes what later connections get.
        std::shared_ptr<net::ssl::context> context = tls->Current();
        std::make_shared<http::Session<http::TlsStream>>(
            core, http::TlsStream(beast::tcp_stream(std::move(socket)), *context), false,
            std::move(context))
            ->Start();
      } else {
        std::make_shared<http::Session<beast::tcp_stream>>(
            core, beast::tcp_stream(std::move(socket)), l.status_only)
            ->Start();
      }
    }
    Accept(l);
  });
}

HttpServer::HttpServer(const ExtenderService& service, Metrics* metrics,
                       HttpServerOptions options)
    : impl_(std::make_unique<Impl>(service, metrics, std::move(options))) {}

HttpServer::~HttpServer() = default;

Status HttpServer::Bind() {
  const config::ServerConfig& c = impl_->options.server;
  if (c.tls.enabled()) {
    SCHEDEXT_ASSIGN_OR_RETURN(impl_->tls, TlsContextProvider::Create(c.tls));
  }
  SCHEDEXT_RETURN_IF_ERROR(impl_->Listen(c.host, c.port, /*status_only=*/false));
  if (c.status_port >= 0) {
    SCHEDEXT_RETURN_IF_ERROR(
        impl_->Listen(c.status_host, c.status_port, /*status_only=*/true).WithContext(
            "server.statusListen"));
  }
  return OkStatus();
}

int HttpServer::port() const {
  return impl_->listeners.empty() ? -1 : impl_->listeners.front()->port;
}

int HttpServer::status_port() const {
  return impl_->listeners.size() < 2 ? -1 : impl_->listeners[1]->port;
}

Status HttpServer::Serve() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stop_requested) {
      return OkStatus();
    }
    if (impl_->listeners.empty()) {
      return FailedPreconditionError("serve: Bind() first");
    }
    impl_->serving = true;
    for (const auto& l : impl_->listeners) {
      impl_->Accept(*l);
    }
  }
  std::vector<std::thread> extra;
  for (int i = 1; i < impl_->threads; ++i) {
    extra.emplace_back([this] { impl_->ioc.run(); });
  }
  impl_->ioc.run();
  for (std::thread& t : extra) {
    t.join();
  }
  return OkStatus();
}

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stop_requested) {
      return;
    }
    impl_->stop_requested = true;
    if (!impl_->serving) {
      return;  // Serve() returns at once when it starts
    }
  }
  net::post(impl_->ioc, [impl = impl_.get()] {
    for (const auto& l : impl->listeners) {
      beast::error_code ec;
      l->acceptor.close(ec);
      l->retry.cancel();
    }
    impl->core.DrainAll();
  });
}

}  // namespace schedext::server
