// Engine settings and selection: ResolveEngineOptions (the one place that turns a run's reader settings into the
// engine's effective numbers) and MakeEngine: auto (io_uring, falling back to POSIX), uring, posix.
#pragma once

#include <memory>
#include <string>

#include "loader/io/io_engine.h"
#include "loader/status.h"
#include "loader/util/choices.h"

namespace feedrate {

struct EngineChoice {
  std::unique_ptr<IoEngine> engine;
  std::string description;      // e.g. "uring (SINGLE_ISSUER|DEFER_TASKRUN, registered buffers)"
  std::string fallback_reason;  // non-empty when "auto" fell back to POSIX
};

// What a run asks of its engine: the workload's reader settings, the command line and the rank's machine.
struct EngineRequest {
  bool s3 = false;                   // the S3 engine (network GETs) instead of a file engine
  bool posix = false;                // feedrate.engine posix (with O_DIRECT its only concurrency is blocked threads)
  uint64_t transfer_size = 1 << 20;  // reader.transfer_size
  uint64_t queue_depth = 0;          // feedrate.queue_depth / --queue-depth; 0: the default for the mode
  bool odirect = false;              // reader.odirect
  uint64_t direct_align = 4096;      // the files' O_DIRECT alignment (DirectIoAlignment); used with odirect only
  uint64_t io_threads = 0;           // --io-threads; 0: reader.read_threads x accelerators, capped
  uint64_t read_threads = 1;         // reader.read_threads (DLIO's workers per accelerator)
  uint64_t accelerators = 1;         // on this rank
  uint64_t batches_in_flight = 1;    // per accelerator (WorkloadConfig::batches_in_flight)
  uint64_t batch = 1;                // reader.batch_size
  size_t cpus = 1;                   // CPUs the rank may run on
  bool memory_storage = false;       // the files live on tmpfs/ramfs: a buffered read is a copy that never waits
};

// The effective settings: the engines, the memory check, read coalescing and retained batches all use these.
struct ResolvedEngine {
  EngineOptions options;       // threads, transfer_size (rounded for O_DIRECT), queue depth and capacity, alignment
  uint64_t io_threads = 1;     // the rank's I/O threads (an S3 rank runs options.threads = min(this, CPUs) loops)
  uint64_t dlio_threads = 1;   // reader.read_threads x accelerators
  bool capped = false;         // io_threads is the cap, not dlio_threads: say so (cap_reason)
  const char* cap_reason = "";  // "4 per CPU", or "1 per CPU on memory-backed storage"
  // The most bytes one read of an extent of `length` covers: the extent, widened to alignment under O_DIRECT.
  // A sample whose window exceeds options.transfer_size is not handed over in place (checks need it retained).
  uint64_t MaxWindow(uint64_t length) const { return length + (options.odirect ? 2 * options.direct_align : 0); }
};

// Pure. transfer_size is rounded up to direct_align with O_DIRECT (the size the engines read with); queue depth is
// 1 for buffered file reads (deeper makes io_uring punt copies to workers), 16 for O_DIRECT and S3, unless given;
// I/O threads are DLIO's count capped at max(read_threads, 4 per CPU) (not for POSIX O_DIRECT, nor when given),
// at 1 per CPU for buffered reads of memory-backed files (tmpfs: every read is a copy, more threads only take turns);
// S3 runs at most one event loop per CPU; the queue holds every sample the rank's prefetchers keep in flight.
ResolvedEngine ResolveEngineOptions(const EngineRequest& r);

// `memory_storage`: the files are on memory-backed storage (the caller's one decider, IsMemoryFileSystem), where
// auto reads buffered with pread. Errors: an explicit kUring whose rings cannot be set up (with the reason).
Result<EngineChoice> MakeEngine(EngineKind kind, const FileTable& files, const EngineOptions& options,
                                bool memory_storage = false);
// Upper bound of the buffer memory an engine of `kind` takes with `options` (for the memory check).
uint64_t EngineBufferBytes(EngineKind kind, const EngineOptions& options);

}  // namespace feedrate
