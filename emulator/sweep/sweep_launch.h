// How a sweep runs its points: each `feedrate run` as a child process (under mpirun for ranks or hosts) with its own
// results folder, read back into a SweepRun; and the storage ceiling from a `feedrate iobench` child. The search
// itself (sweep.h) takes the launcher as a SweepRunner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/sweep/sweep.h"
#include "loader/config/workload_config.h"
#include "loader/status.h"

namespace feedrate {

// Runs argv with stdout and stderr into `log` (opened O_NOFOLLOW: never through a planted symlink); the child's
// exit code (128 + signal when killed; -errno when it could not start). Ctrl-C reaches the child through the
// terminal's process group (it stops at its next step and exits 130), so the caller ignores it while waiting;
// SIGTERM sent to the caller alone is passed on. One child at a time per process.
int SpawnLogged(const std::vector<std::string>& argv, const std::string& log);

// What a user would look for first in a child's log: its last "error" line, else its first line with words (a
// launcher's banner such as mpirun's), else "no output".
std::string LastErrorLine(const std::string& log);

// The storage's sequential read MiB/s on the dataset's largest training file, through the same kind of reads as
// the runs (block = reader.transfer_size, O_DIRECT when the runs use it), from `exe iobench` writing under
// `results_dir`/ceiling. An error names why it could not be measured.
Result<double> MeasureStorageCeiling(const std::string& exe, const WorkloadConfig& cfg, bool odirect,
                                     const std::string& results_dir);

// The child run of one point: `exe run` with the workload and the forwarded options, -n per rank; with hosts named,
// run's own `--hosts h:ranks --mpirun <mpirun>` (its launcher watches mpirun: cli/launch.h), else under `mpirun -np`
// when `mode` is "ranks"; results in <results_dir>/n<total>_r<repeat>.
struct SweepPointLauncher {
  std::string exe, mode, workload, data_dir, results_dir;
  std::vector<std::string> mpirun;      // the launcher's words, e.g. {"mpirun", "--bind-to", "none"}
  std::vector<std::string> host_names;  // empty: this host only
  std::vector<std::string> forwarded;   // run options passed on to every run
  uint64_t hosts = 1;

  std::vector<std::string> Argv(uint64_t total, const std::string& run_dir) const;
  // Runs the point's `repeat`-th run and reads its summary (or names why there is none).
  SweepRun Run(uint64_t total, int repeat) const;
};

}  // namespace feedrate
