// The metric formulas of WORKLOADS.md (DLIO v2.0 statscounter): AU and throughput per block, aggregation
// over accelerators (AU mean, throughput sum) and epochs, plus the percentiles Feedrate adds.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace feedrate {

// One training step of one accelerator.
struct StepRecord {
  int64_t load_ns = 0;     // waiting for the batch (stall)
  int64_t compute_ns = 0;  // emulated compute: the batch's arrival to its deadline (or the refill's end)
  int64_t barrier_ns = 0;  // step barrier (emulated all-reduce)
  uint64_t bytes = 0;      // bytes really read for the batch
};

struct BlockMetrics {
  double au = 0;                    // fraction, 0..1
  double throughput = 0;            // samples/s, DLIO v2.0: (n - 2) * batch / (T - excluded)
  double throughput_corrected = 0;  // samples/s over the steps the time window really covers
  uint64_t counted_steps = 0;
};

// DLIO v2.0 compute_metrics_train for one block of n steps:
//   AU = sum(compute[s..e]) / (T_block - sum(proc[:s]) - sum(proc[e+1:])), proc = load + compute,
//   s = exclude_start, e = n - 1 - exclude_end; throughput = (n - 2) * batch / the same denominator.
// Requires n > exclude_start + exclude_end.
BlockMetrics ComputeBlockMetrics(std::span<const StepRecord> steps, int64_t block_ns, uint64_t batch,
                                 uint64_t exclude_start, uint64_t exclude_end);

// Per accelerator and epoch, what the run summary is built from.
// One accelerator's evaluation pass after an epoch (workflow.evaluation).
struct EvalEpoch {
  bool ran = false;
  uint64_t samples = 0, bytes = 0;
  double seconds = 0;          // the pass's wall time
  double compute_seconds = 0;  // eval_time slept over its batches
};

struct AcceleratorEpoch {
  BlockMetrics block;
  uint64_t bytes = 0;
  double seconds = 0;  // block wall time
  EvalEpoch eval;
  uint64_t probed_bytes = 0, resident_bytes = 0;  // sampled page-cache residency of the reads
  double start_offset_s = 0;  // the block's start, seconds after its rank entered the training loop
};

// Evaluation figures per evaluated epoch, aggregated like training's: AU is compute over wall time of the pass
// (mean over accelerators), throughput the sum over accelerators of samples per second.
struct EvalMetrics {
  std::vector<uint64_t> epochs;  // 1-based epochs after which evaluation ran
  std::vector<double> au_pct, throughput;
  std::vector<uint64_t> bytes;
  double au_mean_pct = 0, au_stdev_pct = 0, throughput_mean = 0, throughput_stdev = 0, io_mean_mib = 0, io_stdev_mib = 0;
};

struct RunMetrics {
  std::vector<double> au_pct;                 // per epoch, mean over accelerators, percent
  std::vector<double> throughput;             // per epoch, sum over accelerators, samples/s
  std::vector<double> throughput_corrected;   // per epoch, sum
  std::vector<double> au_min_pct, au_max_pct; // per epoch, over accelerators
  std::vector<uint64_t> bytes;                // per epoch, all accelerators
  std::vector<double> epoch_seconds;          // per epoch, slowest accelerator's block time
  std::vector<uint64_t> probed_bytes, resident_bytes;  // per epoch, all accelerators (page-cache probes)
  double au_mean_pct = 0, au_stdev_pct = 0;   // over epochs (population stdev, as np.std)
  double throughput_mean = 0, throughput_stdev = 0;
  double io_mean_mib = 0, io_stdev_mib = 0;   // DLIO: throughput x nominal record length / 2^20
  double au_min_pct_overall = 0, au_max_pct_overall = 0;
  bool meets_au = false;
  EvalMetrics eval;
};

// `per_acc[a][e]`: accelerator a's epoch e. `au_bar` is metric.au (fraction). `counts_window`: throughput counts the
// steps of the AU window, (n - excluded) x batch / T', as MLPerf Storage v3.0's DLIO (f16fe43) does; else DLIO
// v2.0's (n - 2) x batch / T' (DlioEditionTraits::throughput_counts_window).
RunMetrics AggregateRun(const std::vector<std::vector<AcceleratorEpoch>>& per_acc, double record_length, double au_bar,
                        bool counts_window = false);

// numpy-style (linear interpolation) percentile of unsorted values; 0 for an empty input.
double Percentile(std::vector<double> values, double pct);
double Mean(const std::vector<double>& v);
double PopulationStdev(const std::vector<double>& v);

}  // namespace feedrate
