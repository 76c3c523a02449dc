// HttpServer: the HTTP/1.1 listener in front of ExtenderService, event-driven
// on Boost.Asio/Beast: a few I/O threads (server.threads, default one per
// core) serve every connection, so idle, slow or silent clients cost memory,
// not threads. A thread of its own accepts connections, and verbs with large
// bodies (server.offloadBodyBytes) run on a pool of their own, so a slow
// request holds up neither new connections nor its I/O thread's others.
// Limits, deadlines and framing rules: src/server/http_session.h and
// http_framing.h.
//
// Routes: POST /{filter,prioritize,preempt,bind} (default profile) and
// POST /<profile>/<verb>; GET /healthz, /readyz, /version, /metrics, and the
// extra GET routes of HttpServerOptions::get_routes (main adds
// /gpushare/inspect[/<node>] when GPU sharing is on). A wrong method answers
// 405, an unknown path 404, an oversized body 413, each with a JSON
// {"Error": ...} body. Replies are never compressed. With
// server.statusListen, a second plain listener serves only GET /healthz,
// /readyz, /version and /metrics.
//
// Thread-safety: Bind, then Serve on one thread; Stop from any thread (the
// signal thread), before or during Serve.
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
  // Leader election: "" while this replica may serve the verbs, else why not
  // (e.g. "lease schedext-system/schedext is held by <pod>_<pid>"). Then
  // every verb is answered 503 {"Error":"not the leader: <why>"} without
  // being run, and /readyz 503. Empty function: always serving. Called once
  // per request: keep it cheap and lock-free.
  std::function<std::string()> not_serving;
  // Extra GET endpoints (e.g. /gpushare/inspect): a request whose path is
  // `path` or starts with `path` + "/" goes to `handler` with the rest after
  // that "/" ("" for `path` itself); it fills a JSON body and returns the
  // HTTP status.
  struct GetRoute {
    std::string path;
    std::function<int(std::string_view rest, std::string& body)> handler;
  };
  std::vector<GetRoute> get_routes;
};

class HttpServer {
 public:
  HttpServer(const ExtenderService& service, Metrics* metrics, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket(s). Port 0 picks a free port (see port()).
  Status Bind();
  int port() const;
  // The status listener's port; -1 without one.
  int status_port() const;
  // Serves until Stop(); returns once every connection has closed.
  Status Serve();
  // The drain: stops accepting, closes connections that are between requests,
  // lets requests being read or handled finish and answers them with
  // `Connection: close`; Serve() returns once the last connection has closed.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedext::server

#endif  // SCHEDEXT_SERVER_HTTP_SERVER_H_
