// Reading result directories back: Feedrate runs (summary.json, per_epoch.csv, steps.csv), Feedrate sweeps
// (sweep.json and the run dirs it lists) and DLIO's own run dirs (summary.json, {rank}_output.json, Hydra config).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loader/status.h"

namespace feedrate {

struct EpochRow {
  double epoch = 0, au_pct = 0, au_min_pct = 0, au_max_pct = 0, samples_per_s = 0, read_mib_per_s = 0;
};

struct StepRow {
  int accelerator = 0, epoch = 0, step = 0;
  double stall_seconds = 0;  // Feedrate: time the accelerator waited for its batch; DLIO: its per-step "load" time
};

// One interval of timeseries.csv's totals (rank "all").
struct TimeSeriesPoint {
  double time_s = 0, read_mib_per_s = 0, stall_pct = 0;
};

struct ReportInput {
  std::string dir;
  std::string kind;  // "feedrate run", "dlio run" or "feedrate sweep"
  nlohmann::json summary;  // runs: summary.json
  nlohmann::json sweep;    // sweeps: sweep.json
  nlohmann::json dlio_workload;   // DLIO runs: the `workload` tree of the Hydra config.yaml, when present
  nlohmann::json dlio_overrides;  // DLIO runs: Hydra's overrides.yaml (e.g. "workload=unet3d_h100"), when present
  std::vector<EpochRow> epochs;  // Feedrate: per_epoch.csv; DLIO: from the ranks' {rank}_output.json
  std::vector<StepRow> steps;    // Feedrate: steps.csv; DLIO: each rank's per-step load times
  int dlio_rank_files = 0;       // DLIO runs: how many {rank}_output.json were read
  std::vector<TimeSeriesPoint> timeseries;  // Feedrate: timeseries.csv's "all" rows, when present
};

// Reads a result directory: sweep.json (a sweep), else summary.json (a run; DLIO's when it has no "feedrate"
// object). Errors name the directory and what is missing or unreadable.
Result<ReportInput> LoadResultDir(const std::string& dir);

// One rank's training figures for one epoch, from DLIO's {rank}_output.json.
struct DlioRankEpoch {
  int rank = 0, epoch = 0;
  double au_pct = 0, samples_per_s = 0;
};

// DLIO's per-rank output ({epoch: {au: {block<k>: %}, throughput: {block<k>: samples/s}, load: {block<k>: [s]},
// proc: {block<k>: [s]}}, hostname}): per epoch, AU and throughput weighted by steps across blocks ("eval" is
// not training); each step's load time becomes a step row.
void ReadDlioRankOutput(int rank, const nlohmann::json& output, std::vector<DlioRankEpoch>& epochs,
                        std::vector<StepRow>& steps);
// Per epoch over ranks: mean/min/max AU, samples/s summed, MiB/s from `bytes_per_sample` (0: unknown).
std::vector<EpochRow> DlioEpochRows(const std::vector<DlioRankEpoch>& ranks, double bytes_per_sample);

// The result directories under `root` (one holding summary.json or sweep.json), walked depth-first in name order
// without descending into one found (an mlpstorage tree, a folder of runs); `root` itself when it is one.
std::vector<std::string> FindResultDirs(const std::string& root);

// The run directories behind an input: the run itself, or every run a sweep recorded (relative paths resolved
// against the sweep dir).
std::vector<std::string> RunDirsOf(const ReportInput& in);

}  // namespace feedrate
