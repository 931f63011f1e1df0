// DLIO's own output files, for a run started as DLIO (`feedrate dlio`, the `dlio_benchmark` launcher): the Hydra
// folder, dlio.log, {rank}_output.json and {rank}_per_epoch_stats.json, with DLIO's names, units and time format,
// so mlpstorage and its submission checker read a Feedrate run as they read DLIO's (docs/mlpstorage.md).
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "loader/status.h"

namespace feedrate {

struct RunRecord;

// What DLIO's command line said (Hydra's words): the workload chosen, its overrides as given, where outputs go.
struct DlioInvocation {
  std::string workload;                      // workload=NAME
  std::vector<std::string> task_overrides;   // overrides.yaml: workload=NAME and every workload override, in order
  std::vector<std::string> hydra_overrides;  // ++hydra.run.dir=..., ++hydra.output_subdir=...
  std::string run_dir;                       // hydra.run.dir: every output goes here
  std::string output_subdir = ".hydra";      // hydra.output_subdir; "" (Hydra's null): no Hydra folder
  std::vector<std::string> config_dirs;      // --config-dir, searched for workload/NAME.yaml
  std::string workload_source;               // the YAML read (a file), or "built-in"
  std::vector<std::string> earlier_log;      // dlio.log lines of an earlier workflow of the same run (datagen's)
};

// Local time with microseconds and no zone, "2026-12-05T03:29:23.576840": what DLIO writes in summary.json's
// start/end and in every dlio.log line (datetime.now().isoformat()).
std::string DlioTime(double unix_seconds);
double UnixNow();

// This host as DLIO describes it (/proc/cpuinfo's fields, the last processor's values winning, as DLIO's parse does;
// /proc/meminfo's lines as "<value> kB" strings): {"host_cpuinfo": {...}, "host_meminfo": {...}}.
nlohmann::json DlioHostFacts();

// The Hydra output folder (run_dir/output_subdir): config.yaml (the workload under `workload:`), overrides.yaml,
// hydra.yaml (run dir, output subdir, overrides, choices). Rank 0, before the workflow runs, as Hydra does.
Status WriteDlioHydraFolder(const DlioInvocation& inv, const YAML::Node& workload_tree);

// dlio.log from its lines (each "[OUTPUT] <time> text" or "[METRIC] text"), through the safe writer.
Status WriteDlioLog(const std::string& run_dir, const std::vector<std::string>& lines);
// DLIO's datagen log: start, generation start, done.
std::vector<std::string> DlioDatagenLogLines(int ranks, double start_unix, double generation_unix, double end_unix);

// A completed training run's DLIO files: {a}_output.json and {a}_per_epoch_stats.json for every accelerator a (a
// Feedrate rank emulating several accelerators writes one DLIO rank's files for each), and dlio.log.
Status WriteDlioRunFiles(const RunRecord& r);

// summary.json's DLIO parts for a run started as DLIO: start/end in DlioTime, host_cpuinfo/host_meminfo of rank 0's
// host. (DLIO's save_checkpoint_* metrics are NaN in a run that wrote no checkpoint; JSON has no NaN and Feedrate's
// own readers refuse it, so they are left out: mlpstorage reads them only for checkpointing.)
void AddDlioSummaryFields(const RunRecord& r, nlohmann::json* summary);

// A checkpoint run (`feedrate checkpoint`, or the checkpoint workflow of `feedrate dlio`), one rank's part.
struct DlioCheckpointRank {
  std::vector<double> save_start_unix, save_seconds, load_start_unix, load_seconds;  // per checkpoint
  nlohmann::json host;  // CheckpointHost(): hostname, memory, CPUs, processor (+ DLIO's /proc facts when started as DLIO)
};
// This host as a checkpoint rank reports it; `dlio`: with DlioHostFacts().
nlohmann::json CheckpointHost(bool dlio);
// DLIO's host keys of summary.json from every rank's CheckpointHost() (one entry per host, in first-rank order):
// num_hosts, host_cpu_count[], host_memory_GB[], host_processor_name[], hostname (mlpstorage's reportgen and the
// v3.0 checker read them).
void AddDlioHostKeys(const std::vector<DlioCheckpointRank>& ranks, nlohmann::json* summary);

struct DlioCheckpointRecord {
  const DlioInvocation* inv = nullptr;
  std::string run_dir, version;
  double start_unix = 0, end_unix = 0, size_gb = 0;  // size: the whole checkpoint, GiB as DLIO counts it
  std::vector<DlioCheckpointRank> ranks;
  nlohmann::json metric;  // summary.json's metric
};
// {rank}_output.json, {rank}_per_epoch_stats.json (save_ckptK / load_ckptK with start, end, duration, throughput)
// and dlio.log, as DLIO's checkpointing workflow writes them.
Status WriteDlioCheckpointFiles(const DlioCheckpointRecord& r);

}  // namespace feedrate
