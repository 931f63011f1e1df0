// SIGINT/SIGTERM handling: a flag the training loop polls at each step barrier, so an interrupted run
// stops cleanly on every rank and says so in its results.
#pragma once

namespace feedrate {

void InstallInterruptHandlers();
bool Interrupted();

}  // namespace feedrate
