// What the listener does with one parsed request, apart from moving bytes:
// routing (decided from the head alone, before the body is read), running the
// route against the received body, and writing the reply's head. No sockets
// here, so all of it runs the same under plain TCP and TLS.
//
// Routes: POST /<verb> and /<profile>/<verb> (filter, prioritize, preempt,
// bind); GET/HEAD /healthz, /readyz, /version, /metrics and the extra
// HttpServerOptions::get_routes. A wrong method answers 405 with Allow, an
// unknown path or profile 404, a non-JSON Content-Type on a verb 415, each with
// a JSON {"Error": ...} body. The status listener serves only the four fixed
// GET routes.
//
// Thread-safety: Router is immutable after construction and its methods may
// run on any number of threads; WorkerPool is internally locked.
#ifndef SCHEDEXT_SRC_SERVER_HTTP_EXCHANGE_H_
#define SCHEDEXT_SRC_SERVER_HTTP_EXCHANGE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/model/node_fields.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "schedext/wire/request_buffer.h"

namespace schedext::server::http {

// The buffers of one request, from its head to its written reply: the body
// (straight from the socket, with simdjson's padding), the service's scratch
// (JSON parser and vectors), the reply head and body. The reply body is `out`
// with scratch.reply_splices inserted: a full-mode filter reply's nodes, and
// a names-mode one's long runs of names, are written from `body` itself,
// which therefore lives until the reply is written.
struct Worker {
  explicit Worker(const wire::DecoderOptions& decoder) : scratch(decoder) {}

  wire::RequestBuffer body;
  Scratch scratch;
  std::string head;
  std::string out;
};

// Reuses Workers across requests, so steady-state requests do not allocate.
//
// Buffers up to keep_bytes are kept with their worker. A 5,000-node full-mode
// filter needs ~150 MB of body, parser and reply; allocated afresh per request
// a third of its latency went on page faults, and kept with every worker it
// would be multiplied by every connection that ever sent one. So (keep_large)
// one worker with larger buffers is kept aside and handed to the next request
// whose Content-Length needs it; the other large ones are freed whole when
// given back, and the freed memory is handed back to the system. What stays
// is at most kMaxIdleWorkers workers of keep_bytes each, and the one large
// set.
class WorkerPool {
 public:
  WorkerPool(size_t keep_bytes, bool keep_large, const wire::DecoderOptions& decoder)
      : keep_bytes_(keep_bytes), keep_large_(keep_large), decoder_(decoder) {}
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // A worker for a request whose body is `body_bytes` long (0 when unknown).
  std::unique_ptr<Worker> Acquire(uint64_t body_bytes);
  // After the reply has been written.
  void Release(std::unique_ptr<Worker> worker);

 private:
  static constexpr size_t kMaxIdleWorkers = 64;
  // The largest of the worker's buffers and of the objects its request
  // decoded (DecodedBytes).
  size_t BufferBytes(const Worker& w) const;
  static size_t DecodedBytes(const Worker& w);
  void Shrink(Worker& w) const;
  static void ReturnMemory();

  const size_t keep_bytes_;
  const bool keep_large_;
  const wire::DecoderOptions decoder_;  // each new worker's
  std::mutex mu_;
  std::vector<std::unique_ptr<Worker>> idle_;  // guarded by mu_
  std::unique_ptr<Worker> large_;              // guarded by mu_
};

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
