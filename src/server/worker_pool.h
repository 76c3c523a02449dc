// Worker: the buffers of one request; WorkerPool: reuses them across requests.
//
// Thread-safety: WorkerPool is internally locked; a Worker belongs to one
// request at a time.
#ifndef SCHEDEXT_SRC_SERVER_WORKER_POOL_H_
#define SCHEDEXT_SRC_SERVER_WORKER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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

}  // namespace schedext::server::http

#endif  // SCHEDEXT_SRC_SERVER_WORKER_POOL_H_
