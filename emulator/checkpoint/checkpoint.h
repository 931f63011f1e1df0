// `feedrate checkpoint`: MLPerf Storage v2.0 checkpoint emulation on every rank of the job. Each rank writes the
// files DLIO's layout gives it (checkpoint_layout.h) from a few reused buffers, fsyncs them, and later reads them
// back with the page cache emptied or bypassed; a checkpoint's duration is its slowest rank's (the v2.0 rules).
#pragma once

#include <cstdint>
#include <string>

#include "emulator/host/comm.h"
#include "loader/config/workload_config.h"

namespace feedrate {

struct DlioInvocation;

struct CheckpointOptions {
  std::string dir;                 // checkpoint folder ("" = the workload's checkpoint.checkpoint_folder)
  int64_t num_write = -1;          // checkpoints to write (-1: checkpoint.num_checkpoints_write)
  int64_t num_read = -1;           // checkpoints to read back (-1: checkpoint.num_checkpoints_read)
  double time_between = -1;        // seconds idle before each checkpoint (-1: checkpoint.time_between_checkpoints)
  double scale = 1.0;              // every file's size times this (0 < scale <= 1), for tests and demos
  std::string results_dir;         // "" = feedrate-results/<timestamp>_<workload>
  EngineKind engine = EngineKind::kAuto;  // io_uring, else pread/pwrite | uring | posix
  bool odirect = false;            // O_DIRECT writes and reads
  std::string read_cache = "drop"; // before reading: drop (evict each rank's files) | keep; O_DIRECT needs neither
  bool drop_system_caches = false; // also /proc/sys/vm/drop_caches before reading (root), once per host
  uint64_t queue_depth = 8;        // requests in flight per rank
  uint64_t block = 4 << 20;        // bytes per request
  bool verify = false;             // write the verifiable pattern and check every byte read back
  std::string inject;              // --inject write faults (docs/faults.md)
  std::string version, command_line;
  bool quiet = false;
  const DlioInvocation* dlio = nullptr;  // started as DLIO (`feedrate dlio`): DLIO's files too (dlio_output.h)
};

// Exit codes: 0 done, 2 error, 130 interrupted (SIGINT/SIGTERM: the file being written is dropped, summary.json says
// "interrupted" with the checkpoints completed); a result claiming success is never written then.
int RunCheckpoint(const WorkloadConfig& cfg, const CheckpointOptions& options, Comm& comm);

}  // namespace feedrate
