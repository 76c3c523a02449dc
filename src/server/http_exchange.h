// One request of a connection, apart from moving its bytes: the route
// (decided from the head alone, before any body byte is read), the request's
// buffers, running the route on the received body, and the reply's bytes.
// The session (http_session.h) reads and writes and keeps the deadlines; it
// talks to one Exchange per connection, reused request after request. No
// sockets here, so all of it runs the same under plain TCP and TLS.
//
// Routes: POST /<verb> and /<profile>/<verb> (filter, prioritize, preempt,
// bind, explain); GET/HEAD /healthz, /readyz, /version, /metrics and the
// extra HttpServerOptions::get_routes. A wrong method answers 405 with Allow,
// an unknown path or profile 404, a non-JSON Content-Type on a verb 415, each
// with a JSON {"Error": ...} body. The status listener serves only the four
// fixed GET routes.
//
// Thread-safety: Router is immutable after construction and may run on any
// number of threads. An Exchange belongs to its session: called on the
// session's io_context, except Run, which may run on a pool thread while the
// session waits for it.
#ifndef SCHEDEXT_SRC_SERVER_HTTP_EXCHANGE_H_
#define SCHEDEXT_SRC_SERVER_HTTP_EXCHANGE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/config/config.h"
#include "schedext/model/node_fields.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "schedext/wire/request_buffer.h"
#include "server/http_framing.h"
#include "server/worker_pool.h"

namespace schedext::server::http {

// The route of a request, from its method and path.
struct Route {
  enum class Kind { kVerb, kGet, kRefuse };
  Kind kind = Kind::kRefuse;
  Verb verb = Verb::kFilter;
  size_t profile = 0;
  // kVerb: what the profile decodes of full-mode nodes (offered bodies too).
  model::NodeFields node_fields = model::NodeFields::kAll;
  // kGet: which endpoint.
  enum class Get { kHealthz, kReadyz, kVersion, kMetrics, kExtra };
  Get get = Get::kHealthz;
  const HttpServerOptions::GetRoute* extra = nullptr;
  std::string extra_rest;
  // kRefuse: the status, its message and (405) the Allow header.
  int status = 0;
  std::string message;
  std::string_view allow;
  bool head_only = false;  // HEAD: the reply of GET without its body
};

// A reply's status and content type; the body is in Worker::out.
struct Outcome {
  int status = 200;
  std::string_view content_type = "application/json";
};

class Router {
 public:
  Router(const ExtenderService& service, Metrics* metrics, const HttpServerOptions& options)
      : service_(service), metrics_(metrics), options_(options) {}

  // `status_only`: the status listener's routes only.
  Route Resolve(std::string_view method, std::string_view path,
                const std::optional<std::string_view>& content_type, bool status_only) const;
  // Runs the route on the received body (in w.body); fills w.out and
  // w.scratch.reply_splices.
  Outcome Run(const Route& route, Worker& w) const;

 private:
  const ExtenderService& service_;
  Metrics* metrics_;
  const HttpServerOptions& options_;
};

// One request at a time: Begin with its head, the body read into body(),
// Received when it is complete, then Run (or Refuse), Reply, and End once the
// reply is written.
class Exchange {
 public:
  Exchange(const Router& router, WorkerPool& workers, const config::ServerConfig& config)
      : router_(router), workers_(workers), config_(config) {}
  ~Exchange() { End(); }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // A request whose head is `head` (its views are not kept): resolves the
  // route and takes buffers sized for the body its Content-Length announces.
  void Begin(const RequestHead& head, bool status_only);
  // The buffer the body is read into (after Begin).
  wire::RequestBuffer& body() { return worker_->body; }
  // More of a `content_length` body has arrived: a filter or prioritize body
  // is offered to the decoder meanwhile (RequestDecoder::DecodeWhileReceiving),
  // until it declines.
  void BodyProgress(uint64_t content_length);

  // Where Run belongs. Bind calls the Kubernetes API: ServerCore::binds. A
  // verb with a body from server.offloadBodyBytes up would hold its I/O
  // thread, and every other connection on it: ServerCore::large_verbs.
  enum class RunOn { kIoThread, kBindPool, kLargeVerbPool };
  // The body is complete (or there is none). Starts a bind's deadline
  // (server.bindDeadlineMillis): kube-scheduler's clock for the request started
  // about now, a bind's body being small.
  RunOn Received();
  // Runs the route on the received body.
  void Run();
  // Answers `status` {"Error": message} instead of running the route; also
  // for a head refused before Begin.
  void Refuse(int status, std::string_view message);
  // The reply, in pieces to write in order: status line and header fields,
  // then the body, parts of it straight from the request body (a filter
  // reply's passing nodes). Valid until End. `keep_alive` false adds
  // `Connection: close`; an HTTP/1.0 client kept alive is told so.
  const std::vector<std::string_view>& Reply(bool keep_alive);
  // The reply has been written, or the connection has failed: the buffers go
  // back to the pool.
  void End();

  int status() const { return outcome_.status; }

 private:
  const Router& router_;
  WorkerPool& workers_;
  const config::ServerConfig& config_;
  Route route_;
  Outcome outcome_;
  bool http10_ = false;
  // A filter or prioritize body still offered to the decoder as it arrives.
  bool offer_body_ = false;
  std::unique_ptr<Worker> worker_;
  std::vector<std::string_view> reply_;  // Reply's pieces, kept for the next one
};

// {"Error": message}\n into `out`.
void ErrorBody(std::string_view message, std::string& out);

// Appends a reply's status line and header fields, through the blank line.
// `keep_alive` false adds `Connection: close`; `http10_keep_alive` adds
// `Connection: keep-alive` (an HTTP/1.0 client asked to keep the connection).
void AppendReplyHead(int status, std::string_view content_type, size_t content_length,
                     bool keep_alive, bool http10_keep_alive, std::string_view allow,
                     std::string& out);

}  // namespace schedext::server::http

#endif  // SCHEDEXT_SRC_SERVER_HTTP_EXCHANGE_H_
