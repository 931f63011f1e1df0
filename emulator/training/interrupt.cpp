// Async-signal-safe interrupt flag.
#include "emulator/training/interrupt.h"

#include <atomic>
#include <csignal>

namespace feedrate {
namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void OnSignal(int) { g_interrupted.store(true, std::memory_order_relaxed); }
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

}  // namespace feedrate
