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

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "server/http_session.h"
#include "server/tls_context.h"
#include "server/tls_session.h"

namespace schedext::server {
namespace {

namespace beast = http::beast;
namespace net = http::net;
using tcp = net::ip::tcp;

}  // namespace

// One io_context per I/O thread, each run by that thread alone: a connection
// is given to one of them at accept (round-robin) and all its handlers run
// there. With one io_context shared by all threads (and a strand per
// connection), every completion could be taken by any thread: a request's
// reads, its timers' cancellations and its write hopped between the threads,
// each hop waking a sleeping one (~20 voluntary context switches per
// request), and a busy neighbour on the same cores made every wake-up slow.
// The listeners accept on an io_context of their own, run by a thread that
// does nothing else: however long a handler runs on an I/O thread, new
// connections are accepted and handed out.
struct HttpServer::Impl {
  Impl(const ExtenderService& service, Metrics* metrics, HttpServerOptions o)
      : options(std::move(o)),
        threads(http::ServerCore::IoThreads(options.server)),
        accept_context(1),
        iocs(MakeContexts(threads)),
        core(options.server, service, metrics, options) {}

  static std::vector<std::unique_ptr<net::io_context>> MakeContexts(int n) {
    std::vector<std::unique_ptr<net::io_context>> v;
    for (int i = 0; i < n; ++i) {
      v.push_back(std::make_unique<net::io_context>(1));  // one thread runs it
    }
    return v;
  }
  net::io_context& accept_ioc() { return accept_context; }

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
  // Before core and listeners: destroyed after them.
  net::io_context accept_context;
  std::vector<std::unique_ptr<net::io_context>> iocs;
  http::ServerCore core;
  std::vector<std::unique_ptr<Listener>> listeners;
  // Keep every io_context running while serving, also those without a
  // connection; released by Stop() after the drain has begun, so that each
  // run() returns once its last connection has closed. Touched under mu
  // (Serve) and then only on the accepting io_context (Stop's handler).
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards;
  size_t next_context = 0;  // round-robin; on the accepting io_context only
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
    tcp::resolver resolver(accept_ioc());
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      return UnavailableError("listen on " + where + ": cannot resolve the host: " +
                              (ec ? ec.message() : "no address"));
    }
    endpoint = results.begin()->endpoint();
  }
  auto l = std::make_unique<Listener>(accept_ioc(), status_only);
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
  // The new connection's socket belongs to the next I/O thread's io_context:
  // its handlers never run concurrently, without a strand.
  net::io_context& target = *iocs[next_context];
  next_context = (next_context + 1) % iocs.size();
  l.acceptor.async_accept(target, [this, &l, &target](beast::error_code ec,
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
            core, target, http::TlsStream(beast::tcp_stream(std::move(socket)), *context),
            false, std::move(context))
            ->Start();
      } else {
        std::make_shared<http::Session<beast::tcp_stream>>(
            core, target, beast::tcp_stream(std::move(socket)), l.status_only)
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

namespace {

// Runs `ioc` until it stops or runs out of work. With `spin` > 0, after each
// handler the thread keeps polling its sockets (epoll_wait without a
// timeout) for `spin` before it sleeps: a keep-alive client's next request
// usually comes within a few hundred microseconds, and on a VM a vCPU that
// went idle waits, now and then, milliseconds for the host to run it again
// (docs/benchmarks.md, issue 15's p99). The cost is that much CPU after
// each request.
void RunIoThread(net::io_context& ioc, std::chrono::microseconds spin) {
  if (spin.count() <= 0) {
    ioc.run();
    return;
  }
  using Clock = std::chrono::steady_clock;
  while (ioc.run_one() > 0) {
    auto until = Clock::now() + spin;
    while (!ioc.stopped() && Clock::now() < until) {
      if (ioc.poll() > 0) {
        until = Clock::now() + spin;
      }
    }
  }
}

}  // namespace

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
    impl_->guards.push_back(net::make_work_guard(impl_->accept_ioc()));
    for (const auto& ioc : impl_->iocs) {
      impl_->guards.push_back(net::make_work_guard(*ioc));
    }
    for (const auto& l : impl_->listeners) {
      impl_->Accept(*l);
    }
  }
  std::vector<std::thread> extra;
  const std::chrono::microseconds spin(impl_->options.server.io_spin_micros);
  for (const auto& ioc : impl_->iocs) {
    extra.emplace_back([ioc = ioc.get(), spin] { RunIoThread(*ioc, spin); });
  }
  impl_->accept_ioc().run();
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
  net::post(impl_->accept_ioc(), [impl = impl_.get()] {
    for (const auto& l : impl->listeners) {
      beast::error_code ec;
      l->acceptor.close(ec);
      l->retry.cancel();
    }
    // Every Drain() is posted to its connection's io_context before the
    // guards go: those posts are work of their own.
    impl->core.DrainAll();
    impl->guards.clear();
  });
}

}  // namespace schedext::server
