// HttpServer: the thin cpp-httplib adapter in front of ExtenderService.
//
// Routes: POST /{filter,prioritize,preempt,bind} (default profile) and
// POST /<profile>/<verb>; GET /healthz, /readyz, /version, /metrics, and the
// extra GET routes of HttpServerOptions::get_routes (main adds
// /gpushare/inspect[/<node>] when GPU sharing is on). A wrong method answers
// 405, an unknown path 404, an oversized body 413, each with a JSON
// {"Error": ...} body. Replies are never compressed.
//
// Thread-safety: Start/Stop from any one thread; Stop may be called from
// another thread than Start (the signal thread).
#ifndef SCHEDEXT_SERVER_HTTP_SERVER_H_
#define SCHEDEXT_SERVER_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/config/config.h"
#include "schedext/server/service.h"
#include "schedext/status.h"

namespace schedext::server {

struct HttpServerOptions {
  config::ServerConfig server;
  std::string version;  // answered by GET /version
  // Whether the server can answer node-cache requests yet (GET /readyz).
  std::function<bool()> ready = [] { return true; };
  // Extra GET endpoints (e.g. /gpushare/inspect): a request whose path is
  // `path` or starts with `path` + "/" goes to `handler` with the rest after
  // that "/" ("" for `path` itself); it fills a JSON body and returns the
  // HTTP status.
  struct GetRoute {
    std::string path;
    std::function<int(std::string_view rest, std::string& body)> handler;
  };
  std::vector<GetRoute> get_routes;
  // Bodies with a Content-Length of at least this many bytes are read from the
  // socket directly, in reads as large as it has data for, instead of through
  // the library's 4 KB reads, each after a poll (a 5,000-name body: ~0.5 ms of
  // CPU saved). Tests lower it to cover the path with small bodies; SIZE_MAX
  // turns it off.
  size_t direct_read_min_bytes = size_t{16} << 10;
};

class HttpServer {
 public:
  HttpServer(const ExtenderService& service, Metrics* metrics, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket. Port 0 picks a free port (see port()).
  Status Bind();
  int port() const;
  // Serves until Stop(); returns once in-flight requests have finished.
  Status Serve();
  // Stops accepting, lets in-flight requests finish, makes Serve() return.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedext::server

#endif  // SCHEDEXT_SERVER_HTTP_SERVER_H_
