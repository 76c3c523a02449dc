// Allocation and lock counting for the hot-loop tests: replaces the global
// operator new and interposes pthread_mutex_lock, counting only on the thread
// inside CountAllocationsAndLocks. Defines those functions, so include it in
// exactly one source file of an executable of its own. Under AddressSanitizer
// (which owns operator new) nothing is replaced and SCHEDEXT_COUNTING_HOOKS is
// left undefined: the tests skip there.
#ifndef SCHEDEXT_TEST_TESTING_COUNTING_HOOKS_H_
#define SCHEDEXT_TEST_TESTING_COUNTING_HOOKS_H_

#include <dlfcn.h>
#include <pthread.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace schedext::testing {
namespace counting_internal {
inline thread_local bool armed = false;
inline thread_local size_t allocations = 0;
inline thread_local size_t locks = 0;
}  // namespace counting_internal

struct AllocationAndLockCounts {
  size_t allocations = 0;
  size_t locks = 0;
};

// What fn() allocated and locked on this thread.
template <typename Fn>
AllocationAndLockCounts CountAllocationsAndLocks(Fn&& fn) {
  namespace c = counting_internal;
  c::allocations = 0;
  c::locks = 0;
  c::armed = true;
  fn();
  c::armed = false;
  return {c::allocations, c::locks};
}
}  // namespace schedext::testing

#if !defined(__SANITIZE_ADDRESS__)
#define SCHEDEXT_COUNTING_HOOKS 1
// Replaceable allocation functions: every other form (array, nothrow, sized
// delete) forwards to these in libstdc++. g++ 12 takes malloc/free inside a
// replaced operator new/delete for a mismatch once they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t size) {
  if (schedext::testing::counting_internal::armed) {
    ++schedext::testing::counting_internal::allocations;
  }
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t /*size*/) noexcept { std::free(p); }
#pragma GCC diagnostic pop

// std::mutex::lock and every pthread-based lock end here.
extern "C" int pthread_mutex_lock(pthread_mutex_t* mutex) {
  using Lock = int (*)(pthread_mutex_t*);
  static const Lock real = reinterpret_cast<Lock>(dlsym(RTLD_NEXT, "pthread_mutex_lock"));
  if (schedext::testing::counting_internal::armed) {
    ++schedext::testing::counting_internal::locks;
  }
  return real(mutex);
}
#endif

#endif  // SCHEDEXT_TEST_TESTING_COUNTING_HOOKS_H_
