// Scheduling class of the loader's I/O threads: they are throughput work that must not delay the latency-bound
// accelerator threads (compute deadlines, step barriers), whose wake-ups the metrics time.
#pragma once

namespace feedrate {

// Puts the calling thread in SCHED_IDLE (Linux, per thread, no privilege needed): it runs whenever no
// normal-class thread of the machine wants the CPU, and a normal thread that wakes (an accelerator at the end of
// its compute or released from the step barrier) takes the CPU from it at once instead of waiting behind copies.
// Best effort: false (and nothing changed) when refused.
bool RunInIdleClass();

}  // namespace feedrate
