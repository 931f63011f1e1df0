// Async-signal-safe interrupt flag, and sleeps the signal handler wakes (a futex word it bumps and wakes).
#include "emulator/training/interrupt.h"

#include <atomic>
#include <cerrno>
#include <csignal>

#include "loader/util/clock.h"
#include "loader/util/futex.h"

namespace feedrate {
namespace {
std::atomic<bool> g_interrupted{false};
std::atomic<uint32_t> g_wake{0};  // bumped by each signal; sleepers wait on it
extern "C" void OnSignal(int) {
  const int saved = errno;  // FutexWakeAll is a raw syscall (async-signal-safe) that may set errno
  g_interrupted.store(true, std::memory_order_relaxed);
  g_wake.fetch_add(1, std::memory_order_release);
  FutexWakeAll(g_wake);
  errno = saved;
}
}  // namespace

void InstallInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool Interrupted() { return g_interrupted.load(std::memory_order_relaxed); }
const std::atomic<bool>* InterruptFlag() { return &g_interrupted; }

bool SleepUntilUnlessInterrupted(int64_t deadline_ns, int64_t spin_ns) {
  for (;;) {
    const uint32_t seen = g_wake.load(std::memory_order_acquire);  // before the check: a signal after it wakes us
    if (Interrupted()) return false;
    const int64_t left = deadline_ns - spin_ns - NowNs();
    if (left <= 0) break;
    FutexWait(g_wake, seen, left);
  }
  while (NowNs() < deadline_ns) {
    if (Interrupted()) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  return true;
}

}  // namespace feedrate
