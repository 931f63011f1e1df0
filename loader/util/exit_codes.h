// The exit codes every command shares (README "Exit codes"): one header, so no command writes a literal.
#pragma once

namespace feedrate {

inline constexpr int kExitPass = 0;          // done (run, sweep: the AU bar met; checkpoint, datagen, ...: done)
inline constexpr int kExitError = 2;         // bad input or a failure, named in one line; never a success-shaped record
inline constexpr int kExitMissedAu = 3;      // run: completed and missed the AU bar; sweep: the minimum count missed it
inline constexpr int kExitInterrupted = 130;  // SIGINT or SIGTERM: stopped on every rank, recorded as interrupted

}  // namespace feedrate
