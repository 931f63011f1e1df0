// Timed waits on a 32-bit atomic (Linux futex): std::atomic::wait has no timeout, and a wait that cannot end
// (a read that never completes) must be able to give up and say so. Pair FutexWait with FutexWakeAll, not with
// std::atomic::notify_all (libstdc++ may skip its wake when it saw no std::atomic::wait waiter).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

namespace feedrate {

static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free);

// Blocks while `word` holds `expected`, at most `timeout_ns` (< 0: no limit). Returns false only when the time ran
// out; true when woken, when `word` no longer held `expected`, or on a signal (callers re-check `word` in a loop).
inline bool FutexWait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns) {
  timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  const long r = syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
                         timeout_ns < 0 ? nullptr : &ts, nullptr, 0);
  return !(r == -1 && errno == ETIMEDOUT);
}

// Wakes every thread in FutexWait on `word` (one syscall; call it after the store that ends their wait).
inline void FutexWakeAll(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace feedrate
