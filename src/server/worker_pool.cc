// WorkerPool: keeping, shrinking and freeing request buffers; see worker_pool.h.
#include "server/worker_pool.h"

#include <malloc.h>

#include <algorithm>
#include <utility>

namespace schedext::server::http {

std::unique_ptr<Worker> WorkerPool::Acquire(uint64_t body_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (body_bytes > keep_bytes_ && large_ != nullptr) {
    return std::move(large_);
  }
  if (!idle_.empty()) {
    std::unique_ptr<Worker> w = std::move(idle_.back());
    idle_.pop_back();
    return w;
  }
  return std::make_unique<Worker>(decoder_);
}

size_t WorkerPool::BufferBytes(const Worker& w) const {
  return std::max({w.body.capacity(), w.out.capacity(), DecodedBytes(w)});
}

size_t WorkerPool::DecodedBytes(const Worker& w) {
  // The objects themselves, not what their labels and lists point to: a
  // lower bound, and what a body of many tiny nodes inflates most.
  const Scratch& s = w.scratch;
  return s.args.nodes.capacity() * sizeof(model::NodeInfo) +
         s.preemption.nodes.capacity() * sizeof(wire::VictimsView) +
         s.nodes.capacity() * sizeof(const model::NodeInfo*) +
         s.resolved.capacity() * sizeof(const model::NodeInfo*) +
         s.failed.capacity() * sizeof(wire::FailedNode) +
         s.host_scores.capacity() * sizeof(wire::HostScore);
}

void WorkerPool::ReturnMemory() {
#ifdef __GLIBC__
  // glibc keeps freed memory in its arenas; a large request's hundreds of
  // MB would stay resident until the next one needed them.
  malloc_trim(0);
#endif
}

void WorkerPool::Shrink(Worker& w) const {
  w.body.ShrinkTo(keep_bytes_);
  w.scratch.decoder.ShrinkTo(keep_bytes_);
  if (w.out.capacity() > keep_bytes_) {
    std::string().swap(w.out);
  }
}

void WorkerPool::Release(std::unique_ptr<Worker> w) {
  // A request that ended before its body was decoded (a closed connection, a
  // refusal) may leave a walk of that body running: it ends before the body
  // is touched.
  w->scratch.decoder.Settle();
  w->out.clear();
  w->scratch.reply_splices.clear();
  w->head.clear();
  if (BufferBytes(*w) > keep_bytes_) {
    // Kept aside only when its decoded nodes take less than its body, as
    // real nodes' do (a 5,000-node body: 59 MB, its NodeInfos a few MB); a
    // body of many tiny nodes (600,000 in 19 MB) would keep hundreds of MB.
    if (keep_large_ && DecodedBytes(*w) <= w->body.capacity()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (large_ == nullptr || BufferBytes(*w) >= BufferBytes(*large_)) {
        std::swap(large_, w);  // `w` now holds the smaller set, if any
      }
    }
    if (w != nullptr) {
      // Freed whole, its request's scratch with it, outside the lock:
      // freeing ~150 MB takes a while.
      w.reset();
      ReturnMemory();
    }
    return;
  }
  Shrink(*w);
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < kMaxIdleWorkers) {
    idle_.push_back(std::move(w));
  }
}

}  // namespace schedext::server::http
