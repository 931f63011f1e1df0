// SIGINT/SIGTERM handling: a flag the training loop polls at each step barrier, and waits that end at once when it
// is raised (compute sleeps, batch waits), so an interrupted run stops on every rank within a second, even inside a
// day-long compute step, and leaves its record before a launcher's SIGKILL (mpirun sends it ~2 s after SIGTERM).
#pragma once

#include <atomic>
#include <cstdint>

namespace feedrate {

void InstallInterruptHandlers();
bool Interrupted();
// The flag itself, for loops outside the emulator that should stop at their next step (StreamIo, Prefetcher).
const std::atomic<bool>* InterruptFlag();
// Sleeps until `deadline_ns` (steady clock, SleepUntil's precision) unless a signal arrives first: the handler
// wakes every such sleeper through a futex, so there is no polling. Returns false when interrupted.
bool SleepUntilUnlessInterrupted(int64_t deadline_ns, int64_t spin_ns = 50'000);

}  // namespace feedrate
