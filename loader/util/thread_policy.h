// Scheduling class of the loader's I/O threads: they are throughput work that must not delay the latency-bound
// accelerator threads (compute deadlines, step barriers), whose wake-ups the metrics time.
#pragma once

namespace feedrate {

enum class IoThreadPolicy {
  kNormal,  // the default class, as every other thread
  kNice,    // nice +10: an accelerator thread that wakes preempts a copy; still ~10% of a CPU against a busy one
  kIdle,    // SCHED_IDLE: runs only when no normal-class thread wants the CPU
};

// Applies `policy` to the calling thread (Linux: per thread; lowering needs no privilege). Best effort: false
// (and nothing changed) when refused.
bool ApplyIoThreadPolicy(IoThreadPolicy policy);

// "normal", "nice" or "idle": as --io-thread-policy spells it and summary.json records it.
const char* Name(IoThreadPolicy policy);

}  // namespace feedrate
