// What every iobench cell runner shares (internal to loader/iobench): the offset streams, the verify pattern, the
// accounting of one completed I/O, and the threads of a cell with their results merged.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <string>

#include "loader/iobench/iobench.h"

namespace feedrate::iobench {

// The verify pattern: every 8-byte word is a function of (seed, its file offset), so any block can be checked.
void FillPattern(char* p, uint64_t len, uint64_t offset, uint64_t seed);
// False (and *bad = the first wrong word's offset) when p does not hold the pattern.
bool CheckPattern(const char* p, uint64_t len, uint64_t offset, uint64_t seed, uint64_t* bad);

// Per-thread offset stream: sequential over the thread's slice of the file, or uniformly random blocks.
struct Offsets {
  bool random;
  uint64_t bs, begin, end, cur;
  std::mt19937_64 rng;
  uint64_t Next() {
    if (random) return begin + (rng() % ((end - begin) / bs)) * bs;
    if (cur + bs > end) cur = begin;
    uint64_t o = cur;
    cur += bs;
    return o;
  }
};

// The cell's shared state: its window, and what the threads merge into it when they finish.
struct Shared {
  Shared(const IoBenchOptions& opts, const IoBenchCell& cell) : o(opts), c(cell) {}
  const IoBenchOptions& o;
  const IoBenchCell& c;
  int64_t measure_start = 0, stop = 0;
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> first_done{false};
  uint64_t first_done_bytes = 0;
  int64_t first_done_ns = 0;
  std::mutex mu;  // merging results and the first error (once per thread)
  Status error;
  LatencyHistogram latency;
  uint64_t read_bytes = 0, write_bytes = 0, ios = 0;
};

struct ThreadStats {
  LatencyHistogram lat;
  uint64_t read_bytes = 0, write_bytes = 0, ios = 0;
};

// Whether the next I/O of the cell is a read (randrw draws it).
bool IsRead(const IoBenchCell& c, int rwmixread, std::mt19937_64& rng);

// Accounts one completed I/O of `res` bytes (negative: -errno) started at `started`; `buf` holds a read's bytes in
// host memory for --verify. Errors: a failed, short or (with --verify) wrong read or write, naming path and offset.
Status Complete(Shared& s, ThreadStats& t, bool read, int64_t res, uint64_t off, const char* buf, int64_t started);

// One thread's part of a cell: I/Os from `off` until s.stop, accounted with Complete into `t`.
using StreamBody = std::function<Status(Shared& s, uint32_t thread, Offsets& off, ThreadStats& t, std::mt19937_64& mix)>;

// Runs c.threads threads of `body` over the cell's window (ramp, then runtime) and merges their figures; the first
// thread error fails the cell. `engine` is what the result says served it (IoBenchResult::engine).
Result<IoBenchResult> RunCellThreads(const IoBenchOptions& o, const IoBenchCell& c, const std::string& engine,
                                     const StreamBody& body);

// The cell's GPU transfer modes (gdsio's): loader/iobench/gpu_xfer.cpp.
Result<IoBenchResult> RunGpuXferCell(const IoBenchOptions& o, const IoBenchCell& c);

}  // namespace feedrate::iobench
