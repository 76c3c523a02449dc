// ServerCore: what all connections of one HttpServer share (configuration,
// router, buffers, pools, the set of live sessions for the drain), and
// SessionBase, what the drain needs of a connection.
//
// Thread-safety: Register, Unregister and DrainAll from any thread; the rest
// is immutable after construction or internally synchronised.
#ifndef SCHEDEXT_SRC_SERVER_SERVER_CORE_H_
#define SCHEDEXT_SRC_SERVER_SERVER_CORE_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "schedext/config/config.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "server/blocking_pool.h"
#include "server/http_exchange.h"
#include "server/http_framing.h"
#include "server/request_log.h"
#include "server/worker_pool.h"

namespace schedext::server::http {

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // From any thread: closes the connection if it is between requests; a
  // request being read or handled finishes and is answered with
  // `Connection: close` (ServerCore::draining).
  virtual void Drain() = 0;
};

struct ServerCore {
  ServerCore(const config::ServerConfig& c, const ExtenderService& service, Metrics* metrics,
             const HttpServerOptions& options);

  // server.threads, 0 meaning one per core: the I/O threads, and as many
  // for large verbs.
  static int IoThreads(const config::ServerConfig& c);

  // A session's first and last acts: the drain reaches the registered ones.
  void Register(const std::shared_ptr<SessionBase>& s);
  void Unregister(SessionBase* s);
  // Drain: every connection closes once it is between requests.
  void DrainAll();

  const config::ServerConfig& config;
  HeadLimits limits;
  Router router;
  WorkerPool workers;
  BlockingPool binds;
  // Verbs with bodies from config.offload_body_bytes up (Exchange::Received).
  BlockingPool large_verbs;
  LogLimiter transport_warnings;
  std::atomic<bool> draining{false};
  std::atomic<int> connections{0};  // accepted and not yet destroyed
  std::mutex mu;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;  // guarded by mu
};

}  // namespace schedext::server::http

#endif  // SCHEDEXT_SRC_SERVER_SERVER_CORE_H_
