// SIGINT/SIGTERM handling: a flag the training loop polls at each step barrier, so an interrupted run
// stops cleanly on every rank and says so in its results.
#pragma once

#include <atomic>

namespace feedrate {

void InstallInterruptHandlers();
bool Interrupted();
// The flag itself, for loops outside the emulator that should stop at their next step (StreamIo).
const std::atomic<bool>* InterruptFlag();

}  // namespace feedrate
