// Engine selection with the io_uring -> POSIX fallback.
#include "loader/io/engine_factory.h"


#include <algorithm>
#include <cstdlib>

#include "loader/io/direct_io.h"
#include "loader/io/posix_engine.h"
#include "loader/io/uring_engine.h"

namespace feedrate {
Result<EngineChoice> MakeEngine(EngineKind kind, const FileTable& files, const EngineOptions& requested,
                                bool memory_storage) {
  EngineChoice c;
  EngineOptions options = requested;
  // tmpfs files do not take io_uring's non-blocking buffered reads, so every read is handed to an io-wq worker
  // thread: measured on the 2-core VM, 2.5 KB records ran at 486 MiB/s with uring against 2763 MiB/s with
  // pread, and large samples 0.9-1.0x. "auto" therefore reads buffered memory-backed data with pread.
  if (kind == EngineKind::kAuto && !options.odirect && memory_storage) {
    c.engine = std::make_unique<PosixEngine>(files, options);
    c.description = "posix (auto: buffered reads from memory-backed storage, where io_uring completes every read in a "
                    "worker thread)";
    return c;
  }
  if (kind != EngineKind::kPosix) {
    auto u = UringEngine::Create(files, options);
    if (u.ok()) {
      c.description = std::string("uring (") + (*u)->setup_description() + ")";
      c.engine = std::move(*u);
      return c;
    }
    if (kind == EngineKind::kUring) return u.status().WithContext("--engine uring: io_uring is unavailable");
    c.fallback_reason = u.status().ToString();
  }
  c.engine = std::make_unique<PosixEngine>(files, options);
  c.description = c.fallback_reason.empty() ? "posix" : "posix (io_uring unavailable: " + c.fallback_reason + ")";
  return c;
}

ResolvedEngine ResolveEngineOptions(const EngineRequest& r) {
  ResolvedEngine e;
  const uint64_t cpus = std::max<size_t>(1, r.cpus);
  // DLIO runs reader.read_threads workers per accelerator. Feedrate's I/O threads serve all of a rank's
  // accelerators; beyond a few per CPU they only fight over the cores (measured: 10 emulated A100s on 2 CPUs
  // kept 97% AU with 4-10 threads, 71% with 40). No cap for POSIX O_DIRECT reads, whose only concurrency is
  // blocked threads.
  // On tmpfs a buffered read never waits: it is a copy, and threads beyond the CPUs only take turns at them,
  // each switch bringing another thread's buffer into the caches (full-size unet3d_a100 at 8 accelerators on 2
  // CPUs, 40 steps, alternated: 2 threads 10.1-10.9 GiB/s, 8 threads 9.9-10.1, fio psync 2 jobs 9.8-10.7 between).
  e.dlio_threads = std::max<uint64_t>(1, r.read_threads * r.accelerators);
  const bool copies_only = r.memory_storage && !r.odirect && !r.s3;
  const uint64_t cap = copies_only ? cpus : std::max<uint64_t>(r.read_threads, 4 * cpus);
  e.cap_reason = copies_only ? "1 per CPU on memory-backed storage, where every read is a copy" : "4 per CPU";
  e.capped = r.io_threads == 0 && !(r.posix && r.odirect) && e.dlio_threads > cap;
  e.io_threads = r.io_threads > 0 ? r.io_threads : (e.capped ? cap : e.dlio_threads);

  EngineOptions& o = e.options;
  o.odirect = r.odirect;
  o.direct_align = r.odirect ? std::max<uint64_t>(1, r.direct_align) : o.direct_align;
  o.transfer_size = r.odirect ? AlignUp(r.transfer_size, o.direct_align) : r.transfer_size;
  // Cached (buffered) reads are CPU-bound copies: depth beyond 1 makes io_uring punt them to worker threads
  // (measured on tmpfs, 5 emulated H100s: qd 1 91.9% AU at 0.135 CPU s/GiB, qd 2 74% at 0.17). O_DIRECT needs
  // depth to keep a device busy; GETs wait on the network, not on a copy.
  o.queue_depth = r.queue_depth > 0 ? r.queue_depth : (r.odirect || r.s3 ? 16 : 1);
  o.threads = r.s3 ? std::min(e.io_threads, cpus) : e.io_threads;  // S3: an event loop drives many requests
  o.queue_capacity = r.accelerators * std::max<uint64_t>(1, r.batches_in_flight) * r.batch + 16;
  return e;
}

uint64_t EngineBufferBytes(EngineKind kind, const EngineOptions& o) {
  uint64_t per_thread = o.transfer_size * (kind == EngineKind::kPosix ? 1 : o.queue_depth);
  return per_thread * o.threads;
}

}  // namespace feedrate
