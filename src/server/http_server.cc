// The only file that includes httplib.h. Settings follow architecture.md §9.
#include "schedext/server/http_server.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "schedext/wire/encoder.h"

namespace schedext::server {
namespace {

struct VerbPath {
  std::string_view profile;  // "" for the default profile
  std::string_view verb;
};

bool IsVerb(std::string_view s) {
  return s == "filter" || s == "prioritize" || s == "preempt" || s == "bind";
}

// "/<verb>" or "/<profile>/<verb>", with an optional trailing slash. Profile
// names are checked against the configured ones later, so any segment goes.
std::optional<VerbPath> ParseVerbPath(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return std::nullopt;
  }
  path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') {
    path.remove_suffix(1);
  }
  const size_t slash = path.find('/');
  VerbPath out;
  if (slash == std::string_view::npos) {
    out.verb = path;
  } else {
    out.profile = path.substr(0, slash);
    out.verb = path.substr(slash + 1);
    if (out.profile.empty() || out.verb.find('/') != std::string_view::npos) {
      return std::nullopt;
    }
  }
  if (!IsVerb(out.verb)) {
    return std::nullopt;
  }
  return out;
}

// Per-worker scratch. Each keep-alive connection is served by one worker
// thread from request to reply, so the server's per-connection state lives in
// thread_locals: this, the connection's socket, and two flags below.
struct Worker {
  wire::RequestBuffer body;
  std::unique_ptr<Scratch> scratch = std::make_unique<Scratch>();  // swapped, never null
  std::string out;
};
thread_local Worker t_worker;

// The buffers of the largest recent request, kept for the next large one
// (server.keepLargeBuffers).
//
// A 5,000-node full-mode filter needs ~150 MB of body, parser and reply.
// Allocated afresh for every request, a third of its latency went on page
// faults and unmapping; kept per worker, that memory would be multiplied by
// every worker that ever served one. kube-scheduler sends one request at a
// time, so one set shared by all workers is enough: a worker borrows it when a
// large body arrives and gives it back after the reply. The lock is taken at
// those request boundaries only, and nothing is freed while it is held.
class SpareBuffers {
 public:
  SpareBuffers(bool enabled, size_t keep_bytes) : enabled_(enabled), keep_bytes_(keep_bytes) {}

  // Before a body of `length` bytes is read into `w`: gives `w` the spare body
  // buffer, scratch (parser) and reply when its own body buffer is too small
  // and the spare one is larger. The spare slot takes `w`'s smaller ones.
  void Lend(Worker& w, size_t length) {
    if (!enabled_ || length <= keep_bytes_ || length + wire::kJsonPadding <= w.body.capacity()) {
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (body_.capacity() > w.body.capacity()) {
      std::swap(body_, w.body);
      std::swap(scratch_, w.scratch);
    }
    if (reply_.capacity() > w.out.capacity()) {
      reply_.swap(w.out);
    }
  }
  // After the reply is built: keeps `w`'s body buffer and scratch when they
  // are larger than the spare ones; the caller then frees what `w` holds over
  // keepBufferBytes, outside the lock.
  void ReturnInput(Worker& w) {
    if (!enabled_ || w.body.capacity() <= keep_bytes_) {
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (w.body.capacity() > body_.capacity()) {
      std::swap(body_, w.body);
      std::swap(scratch_, w.scratch);
    }
  }
  // Once a reply has been written: keeps its string when it is larger than
  // the spare one; `reply` is left with the smaller one, which its owner frees.
  void ReturnReply(std::string& reply) {
    if (!enabled_ || reply.capacity() <= keep_bytes_) {
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (reply.capacity() > reply_.capacity()) {
      reply_.swap(reply);
      reply_.clear();
    }
  }

 private:
  const bool enabled_;
  const size_t keep_bytes_;
  std::mutex mu_;
  wire::RequestBuffer body_;                                          // guarded by mu_
  std::unique_ptr<Scratch> scratch_ = std::make_unique<Scratch>();  // guarded by mu_
  std::string reply_;                                                 // guarded by mu_
};

std::optional<Verb> ParseVerb(std::string_view s) {
  if (s == "filter") return Verb::kFilter;
  if (s == "prioritize") return Verb::kPrioritize;
  if (s == "preempt") return Verb::kPreempt;
  if (s == "bind") return Verb::kBind;
  return std::nullopt;
}

// Replies are plain bodies (Response::body), not content providers: once
// stop() has been called, 0.11.4 writes nothing of a provider's body, so every
// reply in flight during a SIGTERM drain went out as headers only. Compression
// is prevented by DisableCompression instead.
//
// 0.11.4 gzips (or brotli-compresses) a JSON or text body whenever the request's
// Accept-Encoding allows it, and has no switch for it; so the header is removed
// from the request before any reply is made. The handlers get the library's own
// (non-const) Request object by const reference, so the cast is well-defined.
void DisableCompression(const httplib::Request& req) {
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
}

void ReplyOwned(std::string body, const char* content_type, httplib::Response& res) {
  res.body = std::move(body);
  res.set_header("Content-Type", content_type);
}

void ReplyError(int status, std::string_view message, httplib::Response& res) {
  std::string body;
  wire::AppendErrorBody(message, body);
  body.push_back('\n');
  res.status = status;
  ReplyOwned(std::move(body), "application/json", res);
}

std::string NoRouteMessage(const httplib::Request& req,
                           const std::vector<HttpServerOptions::GetRoute>& routes) {
  std::string message = "no route for " + req.method + " " + req.path +
                        " (POST /filter, /prioritize, /preempt, /bind or /<profile>/<verb>; GET "
                        "/healthz, /readyz, /version, /metrics";
  for (const HttpServerOptions::GetRoute& route : routes) {
    message += ", " + route.path + "[/...]";
  }
  message += ")";
  return message;
}

// The extra route serving `path`, with the rest after its "/" in `rest`.
const HttpServerOptions::GetRoute* FindGetRoute(
    const std::vector<HttpServerOptions::GetRoute>& routes, std::string_view path,
    std::string_view& rest) {
  for (const HttpServerOptions::GetRoute& route : routes) {
    if (!path.starts_with(route.path)) {
      continue;
    }
    const std::string_view after = path.substr(route.path.size());
    if (after.empty()) {
      rest = after;
      return &route;
    }
    if (after.front() == '/') {
      rest = after.substr(1);
      return &route;
    }
  }
  return nullptr;
}

// Methods whose body the library reads (or hands to a content reader).
bool HasBodyMethod(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

bool IsJsonContentType(std::string_view type) {
  const size_t semicolon = type.find(';');
  if (semicolon != std::string_view::npos) {
    type = type.substr(0, semicolon);
  }
  while (!type.empty() && type.back() == ' ') {
    type.remove_suffix(1);
  }
  auto lower_equals = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
    }
    return true;
  };
  return lower_equals(type, "application/json") ||
         (type.size() > 5 && lower_equals(type.substr(type.size() - 5), "+json"));
}

// The port a socket is bound to locally, or -1.
int LocalPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  if (addr.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return -1;
}

// Calls fn(fd) for every open file descriptor of this process (from
// /proc/self/fd) until it returns true.
template <typename Fn>
void ForEachOpenFd(Fn&& fn) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) {
    return;
  }
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) {
      continue;
    }
    if (fn(static_cast<int>(fd))) {
      break;
    }
  }
  closedir(dir);
}

// Shuts down the read side of every connection accepted on `port`.
//
// cpp-httplib 0.11.4 notices stop() in a keep-alive connection only when the
// client sends again or the keep-alive timeout ends, and it offers no access to
// the accepted sockets. kube-scheduler keeps its connections open, so without
// this a SIGTERM would wait for the whole grace period. Called only once no
// request is in flight; a worker waiting for the next request then reads EOF
// and closes, while a reply still being written is unaffected (SHUT_RD).
// Accepted sockets are the only ones whose local port is the listening port.
int ShutDownIdleConnections(int port) {
  int closed = 0;
  ForEachOpenFd([&](int fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
      return false;
    }
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    // Bytes waiting to be read are a request arriving: leave that connection
    // to finish it (the library closes it after the reply, being stopped).
    int pending = 0;
    if (LocalPort(fd) == port && getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 &&
        ioctl(fd, FIONREAD, &pending) == 0 && pending == 0 && shutdown(fd, SHUT_RD) == 0) {
      ++closed;
    }
    return false;
  });
  return closed;
}

// The address a socket's peer has, as cpp-httplib formats Request::remote_addr.
bool PeerOf(int fd, std::string& addr, int& port) {
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
    return false;
  }
  if (peer.ss_family == AF_INET) {
    port = ntohs(reinterpret_cast<sockaddr_in*>(&peer)->sin_port);
  } else if (peer.ss_family == AF_INET6) {
    port = ntohs(reinterpret_cast<sockaddr_in6*>(&peer)->sin6_port);
  } else {
    return false;
  }
  char host[NI_MAXHOST] = {};
  if (getnameinfo(reinterpret_cast<sockaddr*>(&peer), len, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return false;
  }
  addr = host;
  return true;
}

bool IsConnectionSocket(int fd, int local_port, const std::string& remote_addr,
                        int remote_port) {
  std::string addr;
  int port = 0;
  return LocalPort(fd) == local_port && PeerOf(fd, addr, port) && port == remote_port &&
         addr == remote_addr;
}

// The accepted socket of the connection this worker thread serves, or -1.
//
// cpp-httplib 0.11.4 gives handlers no access to it. It is the one socket
// whose local port is the server's and whose peer is the request's: a TCP
// connection's addresses are unique while it is open, and only this thread
// closes it. The last one found is remembered, so a keep-alive connection
// pays the search once.
thread_local int t_connection_socket = -1;
int ConnectionSocket(int local_port, const std::string& remote_addr, int remote_port) {
  if (t_connection_socket >= 0 &&
      IsConnectionSocket(t_connection_socket, local_port, remote_addr, remote_port)) {
    return t_connection_socket;
  }
  t_connection_socket = -1;
  ForEachOpenFd([&](int fd) {
    if (!IsConnectionSocket(fd, local_port, remote_addr, remote_port)) {
      return false;
    }
    t_connection_socket = fd;
    return true;
  });
  return t_connection_socket;
}

// Reads `remaining` body bytes from `fd` into `into`, each read taking all the
// socket has (up to what is left). False on EOF, error, or `timeout_seconds`
// without data.
bool ReadFromSocket(int fd, size_t remaining, wire::RequestBuffer& into, int timeout_seconds) {
  char* tail = into.Tail(remaining);
  size_t got = 0;
  while (got < remaining) {
    const ssize_t n = recv(fd, tail + got, remaining - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, timeout_seconds * 1000);
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      break;
    }
  }
  into.Commit(got);
  return got == remaining;
}

// A connection whose body was not read to its end: its read side is shut
// once the reply has been written, or -1.
thread_local int t_close_after_reply = -1;

// Whether this worker thread is between the headers of a request and the end
// of its reply (set by the pre-routing handler, cleared by the logger, which
// the library calls once the reply is written).
thread_local bool t_in_request = false;

}  // namespace

struct HttpServer::Impl {
  Impl(const ExtenderService& s, Metrics* m, HttpServerOptions o)
      : service(s),
        metrics(m),
        options(std::move(o)),
        spare(options.server.keep_large_buffers, options.server.keep_buffer_bytes) {}

  void Configure();
  bool IsGetRoute(const std::string& path) const {
    std::string_view rest;
    return path == "/healthz" || path == "/readyz" || path == "/version" ||
           path == "/metrics" || FindGetRoute(options.get_routes, path, rest) != nullptr;
  }
  void HandleVerb(const httplib::Request& req, httplib::Response& res,
                  const httplib::ContentReader& reader);
  // Answers a method or path that has no handler, after reading its body.
  void HandleUnrouted(const httplib::Request& req, httplib::Response& res,
                      const httplib::ContentReader& reader);
  // Reads the whole body, keeping it in `into` unless that is null: a refused
  // request's body is read too, or the keep-alive connection would take it for
  // the next request. 0.11.4 enforces the payload limit for Content-Length
  // bodies only; a chunked body over the limit is read to its end but not kept.
  // 0 when read, else the status to answer (413, or 400 for a broken body).
  int ReadBody(const httplib::ContentReader& reader, const httplib::Response& res,
               wire::RequestBuffer* into) const;
  // ReadBody for a body of `length` bytes announced by Content-Length: past
  // direct_read_min_bytes, everything after the library's first read comes
  // straight from the socket.
  int ReadBodyOfLength(const httplib::Request& req, const httplib::ContentReader& reader,
                       const httplib::Response& res, size_t length, wire::RequestBuffer& into);
  // After a request: gives buffers over keepBufferBytes to `spare`, or frees them.
  void ReleaseBuffers(Worker& w);

  const ExtenderService& service;
  Metrics* metrics;
  HttpServerOptions options;
  SpareBuffers spare;
  httplib::Server server;
  int port = 0;
  // Worker threads with a request between headers and written reply.
  std::atomic<int> requests_in_flight{0};
  void MarkInFlight() {
    // A reply whose write failed never reached the logger; this thread's count
    // is still held, so it is not taken twice.
    if (!t_in_request) {
      t_in_request = true;
      requests_in_flight.fetch_add(1);
    }
  }

  // Stop() may come before Serve() has started, or before the library's accept
  // loop runs, when its stop() does nothing: both are handled through these.
  enum class ServeState { kNotStarted, kServing, kDone };
  std::mutex mu;
  bool stop_requested = false;                       // guarded by mu
  ServeState serve_state = ServeState::kNotStarted;  // guarded by mu
};

void HttpServer::Impl::Configure() {
  const config::ServerConfig& c = options.server;
  server.set_tcp_nodelay(true);
  const size_t threads = static_cast<size_t>(c.threads > 0 ? c.threads : 32);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_keep_alive_max_count(c.keep_alive_max_count);
  server.set_keep_alive_timeout(c.keep_alive_timeout_seconds);
  server.set_read_timeout(c.header_timeout_seconds, 0);
  server.set_write_timeout(c.write_timeout_seconds, 0);
  server.set_payload_max_length(c.max_body_bytes);
  // SO_REUSEADDR only: the library default adds SO_REUSEPORT, with which a
  // second instance on the same port binds silently and steals connections.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  // Refuses here only requests without a body to read; the others are refused
  // by HandleVerb / HandleUnrouted once their body has been read.
  server.set_logger([this](const httplib::Request&, const httplib::Response& res) {
    // The reply has been written: its string (HandleVerb's reply buffer) goes
    // back to this worker, or to `spare` when large. The library's own
    // non-const Response is passed here by const reference, so taking the
    // string back is well-defined.
    std::string& body = const_cast<httplib::Response&>(res).body;
    spare.ReturnReply(body);
    if (body.capacity() <= options.server.keep_buffer_bytes &&
        body.capacity() > t_worker.out.capacity()) {
      t_worker.out.swap(body);
    }
    if (t_close_after_reply >= 0) {
      shutdown(t_close_after_reply, SHUT_RD);
      t_close_after_reply = -1;
    }
    if (t_in_request) {
      t_in_request = false;
      requests_in_flight.fetch_sub(1);
    }
  });
  // A request is in flight from its headers on: the library answers
  // `Expect: 100-continue` before the pre-routing handler runs, so both mark it.
  server.set_expect_100_continue_handler([this](const httplib::Request&, httplib::Response&) {
    MarkInFlight();
    return 100;
  });
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    MarkInFlight();
    DisableCompression(req);
    if (HasBodyMethod(req.method)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (ParseVerbPath(req.path).has_value()) {
      res.set_header("Allow", "POST");
      ReplyError(405, "method " + req.method + " not allowed on " + req.path + ": use POST", res);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (IsGetRoute(req.path) && req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET");
      ReplyError(405, "method " + req.method + " not allowed on " + req.path + ": use GET", res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Every POST comes here; HandleVerb answers 404 for what is not a verb path.
  server.Post(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res,
                                 const httplib::ContentReader& reader) {
    HandleVerb(req, res, reader);
  });
  // Everything else with a body: registered after the verb route, so it only
  // sees what that did not match.
  const auto unrouted = [this](const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& reader) {
    HandleUnrouted(req, res, reader);
  };
  server.Post(".*", unrouted);
  server.Put(".*", unrouted);
  server.Patch(".*", unrouted);
  server.Delete(".*", unrouted);
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    ReplyOwned("ok\n", "text/plain", res);
  });
  server.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (options.ready()) {
      ReplyOwned("ok\n", "text/plain", res);
    } else {
      res.status = 503;
      ReplyOwned("not ready: the cluster cache has not synced\n", "text/plain", res);
    }
  });
  server.Get("/version", [this](const httplib::Request&, httplib::Response& res) {
    std::string body = "{\"version\":";
    wire::AppendJsonString(options.version, body);
    body.append("}\n");
    ReplyOwned(std::move(body), "application/json", res);
  });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string body;
    if (metrics != nullptr) {
      metrics->Render(body);
    }
    ReplyOwned(std::move(body), "text/plain; version=0.0.4", res);
  });
  // The extra routes, after the fixed ones; a GET that matches none of them
  // gets the error handler's 404.
  server.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    std::string_view rest;
    const HttpServerOptions::GetRoute* route = FindGetRoute(options.get_routes, req.path, rest);
    if (route == nullptr) {
      res.status = 404;
      return;
    }
    std::string body;
    res.status = route->handler(rest, body);
    ReplyOwned(std::move(body), "application/json", res);
  });

  // Called for every reply with status >= 400; fills a JSON body only where
  // nothing else did (unknown path, 413 from the payload limit, ...).
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
    DisableCompression(req);  // errors raised before the pre-routing handler ran
    if (!res.body.empty() || res.content_length_ != 0) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    std::string message;
    switch (res.status) {
      case 404:
        message = NoRouteMessage(req, options.get_routes);
        break;
      case 413:
        message = "request body too large (server.maxBodyBytes)";
        break;
      default:
        message = "HTTP " + std::to_string(res.status);
        break;
    }
    ReplyError(res.status, message, res);
    return httplib::Server::HandlerResponse::Handled;
  }));

  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("{} {}: unhandled exception: {}", req.method, req.path, what);
        DisableCompression(req);
        ReplyError(500, "internal error (see the schedext log)", res);
      });
}

void HttpServer::Impl::HandleVerb(const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& reader) {
  Worker& w = t_worker;
  const std::optional<VerbPath> path = ParseVerbPath(req.path);
  if (!path) {
    HandleUnrouted(req, res, reader);  // 405 for the GET routes, else 404
    return;
  }
  const std::optional<Verb> verb = ParseVerb(path->verb);
  const int profile = service.FindProfile(path->profile);
  int refuse = 0;
  std::string message;
  if (!verb || profile < 0) {
    refuse = 404;
    message = "no profile \"" + std::string(path->profile) + "\" for " + req.path;
  } else if (req.has_header("Content-Type") &&
             !IsJsonContentType(req.get_header_value("Content-Type"))) {
    refuse = 415;
    message = "content type \"" + req.get_header_value("Content-Type") +
              "\" is not supported: send application/json (with curl: -H "
              "'Content-Type: application/json')";
  }
  if (refuse != 0) {
    if (const int status = ReadBody(reader, res, nullptr); status != 0) {
      res.status = status;  // the error handler writes the message
      return;
    }
    ReplyError(refuse, message, res);
    return;
  }

  size_t length = 0;  // from Content-Length; 0 for a chunked body
  if (req.has_header("Content-Length")) {
    const std::string text = req.get_header_value("Content-Length");
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
    if (ec != std::errc() || length > options.server.max_body_bytes) {
      length = 0;
    }
  }
  spare.Lend(w, length);
  w.body.Clear();  // after Lend: a lent buffer still holds the body it last served
  w.body.Reserve(length);
  if (length > options.server.keep_buffer_bytes) {
    // A full-mode reply is at most the body plus its envelope. Reserving that
    // once costs no resident memory until written, where growing by doubling
    // would copy and briefly hold both the old and the new buffer.
    w.out.reserve(length + (size_t{64} << 10));
  }
  const int status = length > 0 ? ReadBodyOfLength(req, reader, res, length, w.body)
                                 : ReadBody(reader, res, &w.body);
  if (status != 0) {
    res.status = status;  // the error handler writes the message
    ReleaseBuffers(w);
    return;
  }

  RequestSummary summary;
  res.status = service.Handle(*verb, static_cast<size_t>(profile), w.body, *w.scratch, w.out,
                              summary);
  w.out.push_back('\n');
  // Handed over without a copy; the logger takes it back once written.
  res.body.swap(w.out);
  res.set_header("Content-Type", "application/json");
  ReleaseBuffers(w);
}

void HttpServer::Impl::ReleaseBuffers(Worker& w) {
  const size_t keep = options.server.keep_buffer_bytes;
  spare.ReturnInput(w);
  w.body.ShrinkTo(keep);
  w.scratch->decoder.ShrinkTo(keep);
  spare.ReturnReply(w.out);
  if (w.out.capacity() > keep) {
    std::string().swap(w.out);
  }
}

void HttpServer::Impl::HandleUnrouted(const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) {
  if (const int status = ReadBody(reader, res, nullptr); status != 0) {
    res.status = status;  // the error handler writes the message
    return;
  }
  if (ParseVerbPath(req.path).has_value()) {
    res.set_header("Allow", "POST");
    ReplyError(405, "method " + req.method + " not allowed on " + req.path + ": use POST", res);
  } else if (IsGetRoute(req.path)) {
    res.set_header("Allow", "GET");
    ReplyError(405, "method " + req.method + " not allowed on " + req.path + ": use GET", res);
  } else {
    ReplyError(404, NoRouteMessage(req, options.get_routes), res);
  }
}

int HttpServer::Impl::ReadBody(const httplib::ContentReader& reader,
                               const httplib::Response& res, wire::RequestBuffer* into) const {
  const size_t limit = options.server.max_body_bytes;
  size_t total = 0;
  const bool received = reader([&](const char* data, size_t length) {
    total += length;
    if (into != nullptr && total <= limit) {
      into->Append(data, length);
    }
    return true;
  });
  if (!received) {
    // The library has set the status: 413 over the limit, 400 on a broken body.
    return res.status >= 400 ? res.status : 400;
  }
  return total > limit ? 413 : 0;
}

int HttpServer::Impl::ReadBodyOfLength(const httplib::Request& req,
                                       const httplib::ContentReader& reader,
                                       const httplib::Response& res, size_t length,
                                       wire::RequestBuffer& into) {
  const int fd = length >= options.direct_read_min_bytes && !req.has_header("Transfer-Encoding")
                     ? ConnectionSocket(port, req.remote_addr, req.remote_port)
                     : -1;
  if (fd < 0) {
    return ReadBody(reader, res, &into);
  }
  // The library's first read hands over what it buffered along with the
  // headers (all of it: its buffer is one read's size) or one fresh read, so
  // refusing the second leaves the rest of the body in the socket, unread.
  // Its reader then reports a failure and sets no status that is kept: the
  // reply below overwrites it.
  size_t first = 0;
  reader([&](const char* data, size_t n) {
    into.Append(data, n);
    first += n;
    return false;
  });
  if (first == 0) {
    return 400;  // nothing arrived: the client went away
  }
  if (first < length &&
      !ReadFromSocket(fd, length - first, into, options.server.header_timeout_seconds)) {
    // Part of the body may still be on its way; it must not be taken for the
    // next request. The logger shuts the read side once the reply is written
    // (not before: the library checks that the peer can still be read from
    // before it writes), so the library reads end-of-file next and closes.
    t_close_after_reply = fd;
    return 400;
  }
  return 0;
}

HttpServer::HttpServer(const ExtenderService& service, Metrics* metrics,
                       HttpServerOptions options)
    : impl_(std::make_unique<Impl>(service, metrics, std::move(options))) {
  impl_->Configure();
}

HttpServer::~HttpServer() = default;

Status HttpServer::Bind() {
  const config::ServerConfig& c = impl_->options.server;
  if (c.port == 0) {
    const int port = impl_->server.bind_to_any_port(c.host);
    if (port <= 0) {
      return UnavailableError("listen on " + c.host + ":0: cannot bind");
    }
    impl_->port = port;
  } else {
    if (!impl_->server.bind_to_port(c.host, c.port)) {
      return UnavailableError("listen on " + c.host + ":" + std::to_string(c.port) +
                              ": cannot bind (address in use, or not an address of this host)");
    }
    impl_->port = c.port;
  }
  return OkStatus();
}

int HttpServer::port() const { return impl_->port; }

Status HttpServer::Serve() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stop_requested) {
      return OkStatus();
    }
    impl_->serve_state = Impl::ServeState::kServing;
  }
  const bool ok = impl_->server.listen_after_bind();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->serve_state = Impl::ServeState::kDone;
  }
  if (!ok) {
    return InternalError("serve: the listening socket failed");
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
    if (impl_->serve_state == Impl::ServeState::kNotStarted) {
      return;  // Serve() returns at once when it starts
    }
  }
  // Serve() has started; the library's stop() acts only once its accept loop
  // runs, which is a few instructions away.
  for (;;) {
    if (impl_->server.is_running()) {
      impl_->server.stop();
      // Let requests in flight finish (bounded: a reply whose write failed
      // leaves its count behind), then release the idle keep-alive ones.
      const auto deadline =
          std::chrono::steady_clock::now() +
          std::chrono::seconds(impl_->options.server.header_timeout_seconds +
                               impl_->options.server.write_timeout_seconds);
      while (impl_->requests_in_flight.load() > 0 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      const int closed = ShutDownIdleConnections(impl_->port);
      if (closed > 0) {
        spdlog::info("closed {} idle keep-alive connection(s)", closed);
      }
      return;
    }
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      if (impl_->serve_state == Impl::ServeState::kDone) {
        return;
      }
    }
    std::this_thread::yield();
  }
}

}  // namespace schedext::server
