// Rule checks: the keys and thresholds are mlpstorage v3.0's (validity.h names the files they follow).
#include "emulator/results/validity.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace feedrate {

namespace {

// mlpstorage v3.0 TrainingRunRulesChecker CLOSED_ALLOWED_PARAMS and OPEN_ALLOWED_PARAMS (unchanged from v2.0).
const std::set<std::string> kClosedKeys = {
    "dataset.num_files_train", "dataset.num_subfolders_train", "dataset.data_folder", "reader.read_threads",
    "reader.computation_threads", "reader.transfer_size", "reader.odirect", "reader.prefetch_size",
    "checkpoint.checkpoint_folder", "storage.storage_type", "storage.storage_root"};
const std::set<std::string> kOpenKeys = {"framework", "dataset.format", "dataset.num_samples_per_file", "reader.data_loader"};
// Feedrate's own keys that choose how bytes are read, not what is read: they keep a run CLOSED.
const std::set<std::string> kHowKeys = {"feedrate.engine", "feedrate.queue_depth", "feedrate.coalesce_reads"};

int Rank(const std::string& c) { return c == "CLOSED" ? 0 : c == "OPEN" ? 1 : 2; }

// mlpstorage's record length for the size rule: record_length_bytes, or for Parquet its columns' dtypes.
double RuleRecordLength(const WorkloadConfig& c) {
  if (c.record_length_given || c.format != DataFormat::kParquet || c.parquet_columns.empty()) return c.record_length;
  double bytes = 0;
  for (const auto& col : c.parquet_columns) {
    const double each = col.dtype == "float64" || col.dtype == "int64" ? 8 : col.dtype == "uint8" || col.dtype == "bool" ? 1 : 4;
    bytes += each * static_cast<double>(col.size);
  }
  return bytes;
}

}  // namespace

DatasetMinimum TrainingDatasetMinimum(const WorkloadConfig& c, double total_mem, uint64_t accelerators) {
  DatasetMinimum m;
  const double nspf = static_cast<double>(std::max<uint64_t>(1, c.num_samples_per_file));
  m.record_length = RuleRecordLength(c);
  const double memory = 5 * total_mem / (nspf * std::max(1.0, m.record_length));
  const double steps = 500.0 * static_cast<double>(accelerators * c.batch_size) / nspf;
  m.by_memory = static_cast<uint64_t>(std::ceil(memory));
  m.by_steps = static_cast<uint64_t>(std::ceil(steps));
  m.files = std::max(m.by_memory, m.by_steps);
  m.files_rounded_down = static_cast<uint64_t>(std::max(std::floor(memory), std::floor(steps)));
  return m;
}

void Validity::Demote(const std::string& to, const std::string& reason) {
  if (Rank(to) > Rank(category)) category = to;
  reasons.push_back(to + ": " + reason);
}

nlohmann::json Validity::ToJson() const { return {{"category", category}, {"reasons", reasons}}; }

Validity CheckTrainingRun(const WorkloadConfig& cfg, const RunFacts& f) {
  Validity v;
  if (!f.injected_faults.empty()) {
    v.Demote("INVALID", "faults were injected (--inject " + f.injected_faults + "): the run measures them, not the storage alone");
  }
  if (!cfg.builtin) {
    v.Demote("OPEN", "the workload file " + cfg.source + " is not one of the built-in (MLPerf) workloads, whose YAML "
                     "CLOSED and OPEN both keep unchanged");
  }
  for (const auto& key : cfg.overridden_keys) {
    if (kClosedKeys.count(key) != 0 || kHowKeys.count(key) != 0) continue;
    if (key == "feedrate.access_pattern" && cfg.access_pattern == "dlio") continue;  // DLIO's own calls
    if (kOpenKeys.count(key) != 0) {
      v.Demote("OPEN", "override of " + key + " (allowed in OPEN only)");
    } else if (key.starts_with("feedrate.")) {
      v.Demote("OPEN", "override of " + key + " (changes what Feedrate reads or checks compared with DLIO)");
    } else {
      v.Demote("INVALID", "override of " + key + " (mlpstorage allows it in neither CLOSED nor OPEN)");
    }
  }
  if (f.client_memory_bytes > 0 && f.accelerators > 0) {
    const DatasetMinimum m = TrainingDatasetMinimum(cfg, f.client_memory_bytes, f.accelerators);
    if (cfg.num_files_train < m.files) {
      v.Demote("INVALID", "dataset.num_files_train=" + std::to_string(cfg.num_files_train) + " is below the " +
                              std::to_string(m.files) + " files the dataset-size rule asks (5x client memory: " +
                              std::to_string(m.by_memory) + "; 500 steps: " + std::to_string(m.by_steps) +
                              "; feedrate datasize)");
    }
  }
  const bool unet3d = cfg.model_name.find("unet3d") != std::string::npos || cfg.name.starts_with("unet3d");
  if (cfg.odirect && !unet3d) v.Demote("INVALID", "reader.odirect is allowed for unet3d only");
  if (unet3d && !cfg.do_checkpoint) v.Demote("INVALID", "unet3d runs must keep workflow.checkpoint: True");
  if (unet3d && cfg.do_checkpoint) {
    v.Demote("OPEN", "unet3d's workflow.checkpoint is on, but Feedrate does not write checkpoints during training yet");
  }
  if (f.accelerators_per_host.size() > 1 &&
      std::adjacent_find(f.accelerators_per_host.begin(), f.accelerators_per_host.end(), std::not_equal_to<>()) !=
          f.accelerators_per_host.end()) {
    v.Demote("INVALID", "hosts run different accelerator counts (the rules require the same count on every host)");
  }
  return v;
}

}  // namespace feedrate
