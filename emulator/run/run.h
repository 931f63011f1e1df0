// `feedrate run`: from a resolved workload to results on disk, on every rank of the job.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/host/cache_control.h"
#include "emulator/host/comm.h"
#include "loader/config/workload_config.h"
#include "loader/util/choices.h"
#include "loader/util/exit_codes.h"
#include "loader/util/thread_policy.h"

namespace feedrate {

struct DlioInvocation;

struct RunOptions {
  uint64_t accelerators = 1;     // per rank
  uint64_t io_threads = 0;       // per rank; 0 = reader.read_threads x accelerators
  std::string results_dir;       // "" = feedrate-results/<timestamp>_<workload>
  bool retain_batches = false;
  std::string version;
  bool quiet = false;            // no progress output (the final result is still printed)
  bool json_events = false;      // progress, epochs and the result as JSON lines on stdout
  std::string inject;            // --inject fault rules for the training reads (fault_injection.h); "" = none
  // --cache keep|drop|drop-once|direct (cache_control.h; direct needs reader.odirect); none = what the emulated DLIO
  // does (run_setup.h ChooseCache: MLPerf Storage v3.0's drops on rank 0's host before every epoch).
  std::optional<CacheMode> cache;
  bool drop_system_caches = false;  // with drop modes: also /proc/sys/vm/drop_caches, once per host
  double timeseries_interval = 1.0;  // seconds between time-series samples (timeseries.csv); 0: none
  // --metrics-listen HOST:PORT: each rank serves Prometheus metrics there (a host's ranks on PORT, PORT+1, ...;
  // docs/metrics.md); "" = none. --metrics-hold: seconds the run waits at its end for a scrape of its final figures.
  std::string metrics_listen;
  // --metrics-textfile DIR: each rank's figures in DIR/feedrate_rank<R>.prom, rewritten every second (node_exporter's
  // textfile collector); "" = none.
  std::string metrics_textfile;
  double metrics_hold = 60;
  std::string command_line;      // the command as given, for the run manifest
  bool residency = true;  // --residency sample|off: the sampled page-cache probe of the reads
  double verify = 0;             // --verify: fraction of each sample's payload checked against the pattern (0: off)
  IoThreadPolicy io_thread_policy = IoThreadPolicy::kNice;  // --io-thread-policy (loader/util/thread_policy.h)
  double io_timeout = 600;       // --io-timeout: seconds a batch wait may pass without one read completing (0: forever)
  int barrier_calibration_rounds = 200;  // step agreements timed per mode before training (multi-rank runs)
  // --accelerator-memory: where a batch must be before it is delivered (host: today's; pinned; device, through
  // pinned bounce buffers and a copy per read on a stream per accelerator). Anything but host retains batches.
  AcceleratorMemory accelerator_memory = AcceleratorMemory::kHost;
  std::vector<int> gpus;         // --gpus: GPU ordinals the accelerators map onto, round-robin (empty: all visible)
  // --gds, with device memory: cuFile reads straight into it (on), the bounce path (off), or cuFile where it can
  // serve the run, else the bounce path with the reason recorded (auto).
  GdsMode gds = GdsMode::kAuto;
  // Started as DLIO (`feedrate dlio`): the results folder also gets DLIO's files (emulator/results/dlio_output.h).
  // Outlives the run; nullptr otherwise.
  const DlioInvocation* dlio = nullptr;
  // mlpstorage's --client-host-memory-in-gb: the memory per host the rules' dataset-size check counts (0: MemTotal).
  double client_memory_gib = 0;
  // mlpstorage's --closed / --open: "CLOSED" or "OPEN" refuses, before the first step, a run the rules judge lower
  // (unless allow_invalid_params); "" checks nothing before the run.
  std::string declared_category;
  bool allow_invalid_params = false;
};

// Exit codes (loader/util/exit_codes.h): 0 AU bar met, 3 completed and missed it, 2 error, 130 interrupted. Same on
// every rank.

int RunTraining(const WorkloadConfig& cfg, const RunOptions& options, Comm& comm);

// Whether batches land in per-slot memory: asked for, or needed to hand them to an accelerator's memory.
inline bool RetainsBatches(const RunOptions& o) {
  return o.retain_batches || o.accelerator_memory != AcceleratorMemory::kHost;
}

}  // namespace feedrate
