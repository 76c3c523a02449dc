// ServerCore; see server_core.h.
#include "server/server_core.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

namespace schedext::server::http {

ServerCore::ServerCore(const config::ServerConfig& c, const ExtenderService& service,
                       Metrics* metrics, const HttpServerOptions& options)
    : config(c),
      router(service, metrics, options),
      workers(c.keep_buffer_bytes, c.keep_large_buffers,
              wire::DecoderOptions{.split_min_bytes = c.parallel_decode_bytes == 0
                                                          ? SIZE_MAX
                                                          : c.parallel_decode_bytes}),
      binds(c.bind_threads, static_cast<size_t>(c.max_pending_binds)),
      // A connection has at most one request in flight, so maxConnections
      // bounds the queue; a refused post runs on the I/O thread instead.
      large_verbs(IoThreads(c), static_cast<size_t>(std::max(c.max_connections, 1))),
      transport_warnings(
          LogLimiter::Options{10.0, 20, "warnings about refused or broken connections"}, metrics) {
  limits.max_header_bytes = c.max_header_bytes;
  limits.max_body_bytes = c.max_body_bytes;
}

int ServerCore::IoThreads(const config::ServerConfig& c) {
  return c.threads > 0 ? c.threads
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void ServerCore::Register(const std::shared_ptr<SessionBase>& s) {
  std::lock_guard<std::mutex> lock(mu);
  sessions.emplace(s.get(), s);
}

void ServerCore::Unregister(SessionBase* s) {
  std::lock_guard<std::mutex> lock(mu);
  sessions.erase(s);
  connections.fetch_sub(1, std::memory_order_relaxed);
}

void ServerCore::DrainAll() {
  draining.store(true);
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [raw, weak] : sessions) {
      if (std::shared_ptr<SessionBase> s = weak.lock()) {
        live.push_back(std::move(s));
      }
    }
  }
  for (const std::shared_ptr<SessionBase>& s : live) {
    s->Drain();
  }
}

}  // namespace schedext::server::http
