// Rule checks: the keys and thresholds are mlpstorage v3.0's (validity.h names the files they follow).
#include "emulator/results/validity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <set>

#include "loader/format/access_pattern.h"

namespace feedrate {

namespace {

// mlpstorage v3.0 TrainingRunRulesChecker CLOSED_ALLOWED_PARAMS and OPEN_ALLOWED_PARAMS (unchanged from v2.0).
const std::set<std::string> kClosedKeys = {
    "dataset.num_files_train", "dataset.num_subfolders_train", "dataset.data_folder", "reader.read_threads",
    "reader.computation_threads", "reader.transfer_size", "reader.odirect", "reader.prefetch_size",
    "checkpoint.checkpoint_folder", "storage.storage_type", "storage.storage_root"};
const std::set<std::string> kOpenKeys = {"framework", "dataset.format", "dataset.num_samples_per_file", "reader.data_loader"};
// Feedrate's own keys that choose how bytes are read, not what is read: they keep a run CLOSED (feedrate.engine
// only where it does not replace DLIO's reader calls with coalesced reads).
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

nlohmann::json Validity::ToJson() const {
  return {{"rules_edition", "MLPerf Storage " + edition}, {"category", category}, {"reasons", reasons}};
}

namespace {

std::string ModelOf(const WorkloadConfig& cfg) {
  for (const char* m : {"unet3d", "retinanet", "resnet50", "cosmoflow", "flux", "dlrm", "bert"}) {
    if (cfg.name.starts_with(m) || cfg.model_name.find(m) != std::string::npos) return m;
  }
  return cfg.model_name;
}

std::string AcceleratorOf(const WorkloadConfig& cfg) {
  const auto us = cfg.name.rfind('_');
  return us == std::string::npos ? "" : cfg.name.substr(us + 1);
}

bool In(const std::string& x, std::initializer_list<const char*> set) {
  return std::any_of(set.begin(), set.end(), [&](const char* s) { return x == s; });
}

}  // namespace

std::string MlpstorageTrainingModel(const WorkloadConfig& cfg) { return ModelOf(cfg); }

std::string WorkloadAccelerator(const WorkloadConfig& cfg) {
  const std::string acc = AcceleratorOf(cfg);
  return In(acc, {"v100", "a100", "h100", "b200", "mi355"}) ? acc : "";
}

std::string TrainingRulesEdition(const WorkloadConfig& cfg) {
  const std::string model = ModelOf(cfg), acc = AcceleratorOf(cfg);
  if ((model == "unet3d" && acc == "b200") || (model == "retinanet" && In(acc, {"b200", "mi355"}))) return "v3.0";
  if (In(model, {"unet3d", "resnet50", "cosmoflow"}) && In(acc, {"a100", "h100"})) return "v2.0";
  return "";
}

std::string JudgedEdition(const WorkloadConfig& cfg) {
  if (cfg.rules != DlioEdition::kUpstream) return Name(cfg.rules);
  const std::string has = cfg.builtin ? TrainingRulesEdition(cfg) : "";
  return has.empty() ? "v3.0" : has;
}

namespace {

// mlpstorage v3.0 training/README.md "Supported (model, accelerator) combinations": offered by `mlpstorage whatif`
// for planning, not submittable.
bool V3WhatIf(const WorkloadConfig& cfg) {
  const std::string model = ModelOf(cfg), acc = AcceleratorOf(cfg);
  return (model == "unet3d" && acc == "a100") || (In(model, {"cosmoflow", "resnet50"}) && In(acc, {"a100", "h100"})) ||
         (In(model, {"dlrm", "flux"}) && In(acc, {"b200", "mi355"}));
}

// A built-in workload outside the judged edition's training set is INVALID, saying which edition has it.
void CheckEditionHasWorkload(const WorkloadConfig& cfg, Validity* v) {
  const std::string has = TrainingRulesEdition(cfg);
  const std::string whatif =
      v->edition == "v3.0" && V3WhatIf(cfg) ? " (v3.0 offers it as what-if only: planning, not submittable)" : "";
  if (has.empty()) {
    v->Demote("INVALID", cfg.name +
                             " is in no edition's training set (v3.0: unet3d on b200, retinanet on b200 and mi355; "
                             "v2.0: unet3d, resnet50 and cosmoflow on a100 and h100)" +
                             whatif);
  } else if (has != v->edition) {
    v->Demote("INVALID", cfg.name + " is not in " + v->edition + "'s training set" + whatif + "; " + has +
                             " had it: --rules " + has + " emulates that edition's DLIO and judges by its rules");
  }
}

}  // namespace

Validity CheckTrainingRun(const WorkloadConfig& cfg, const RunFacts& f) {
  Validity v;
  v.edition = JudgedEdition(cfg);
  if (cfg.builtin) CheckEditionHasWorkload(cfg, &v);
  if (cfg.rules == DlioEdition::kUpstream) {
    v.Demote("OPEN",
             "--rules upstream emulates upstream DLIO (argonne-lcf), which no MLPerf Storage edition runs; "
             "judged by " +
                 v.edition + "'s rules otherwise");
  }
  if (!f.injected_faults.empty()) {
    v.Demote("INVALID", "faults were injected (--inject " + f.injected_faults + "): the run measures them, not the storage alone");
  }
  if (!cfg.builtin) {
    v.Demote("OPEN", "the workload file " + cfg.source + " is not one of the built-in (MLPerf) workloads, whose YAML "
                     "CLOSED and OPEN both keep unchanged");
  }
  // An explicit engine reads coalesced extents where DLIO's reader calls would be replayed (file datasets whose
  // format has a pattern): what the storage sees is then the coalesced case's, which is OPEN.
  const bool has_pattern = DlioAccessKind(cfg.format, cfg.rules) != AccessKind::kNone && !cfg.on_s3() &&
                           (cfg.format != DataFormat::kTfRecord || cfg.data_loader == DataLoader::kTensorFlow);
  const bool engine_coalesces = cfg.engine != EngineKind::kAuto && cfg.access_pattern == "dlio" && has_pattern;
  for (const auto& key : cfg.overridden_keys) {
    if (key == "feedrate.engine" && engine_coalesces) {
      v.Demote("OPEN", "feedrate.engine=" + std::string(Name(cfg.engine)) + " reads coalesced extents, not DLIO's "
                       "reader calls (feedrate.access_pattern: coalesced, the storage's best case)");
      continue;
    }
    if (kClosedKeys.count(key) != 0 || kHowKeys.count(key) != 0) continue;
    if (key == "feedrate.rules") continue;  // which edition's DLIO runs and judges (upstream: OPEN, above)
    if (key == "feedrate.access_pattern" && cfg.access_pattern == "dlio") continue;  // DLIO's own calls
    // On JPEG/PNG it decodes each image as DLIO's PIL reader does (true) or reads it whole, Feedrate's default
    // (false): the bytes read are DLIO's either way. (Parquet's page decoding follows an earlier reader: OPEN.)
    if (key == "feedrate.decode" && IsImage(cfg.format)) continue;
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

std::string MlpstorageCheckpointModel(const WorkloadConfig& cfg) {
  for (const char* size : {"8b", "70b", "405b", "1t"}) {
    if (cfg.name == std::string("llama3_") + size || cfg.model_name == std::string("llama_") + size ||
        cfg.model_name == std::string("llama3_") + size) {
      return std::string("llama3-") + size;
    }
  }
  return "";
}

namespace {

// mlpstorage v3.0 LLM_ALLOWED_VALUES: the CLOSED job's processes per model (the subset runs 8).
uint64_t FullCheckpointRanks(const std::string& model) {
  return model == "llama3-8b" ? 8 : model == "llama3-70b" ? 64 : model == "llama3-405b" ? 512 : model == "llama3-1t" ? 1024 : 0;
}

// 4.6.1 / 4.3.5 / 4.6.4: the process count and subset mode.
void CheckCheckpointRanks(const std::string& model, const CheckpointFacts& f, Validity* v) {
  const uint64_t full = FullCheckpointRanks(model);
  const std::string n = std::to_string(f.ranks);
  if (f.mode == "subset") {
    if (model == "llama3-8b") v->Demote("INVALID", "checkpoint.mode=subset with llama3-8b, whose full job is 8 ranks (4.3.5)");
    if (f.ranks != 8) v->Demote("INVALID", "checkpoint.mode=subset with " + n + " ranks: a subset run has exactly 8 (4.3.5)");
    return;
  }
  if (f.ranks == full) return;
  if (f.ranks == 8) {
    v->Demote("OPEN", "8 ranks of " + model + " without checkpoint.mode=subset write a smaller job's layout: CLOSED runs 8 "
                      "ranks as a subset of the " + std::to_string(full) + "-rank job (4.6.1, 4.3.5)");
  } else {
    v->Demote("OPEN", n + " ranks: CLOSED runs " + model + " with 8 (subset) or " + std::to_string(full) + " (4.6.1)");
  }
}

// Table 3, 4.6.3: only the folder may change in CLOSED; the counts are 10 and 10 or one phase of a split run.
void CheckCheckpointParameters(const WorkloadConfig& cfg, const CheckpointFacts& f, Validity* v) {
  const bool counts = (f.num_write == 10 && f.num_read == 10) || (f.num_write == 10 && f.num_read == 0) ||
                      (f.num_write == 0 && f.num_read == 10);
  if (!counts) {
    v->Demote("OPEN", std::to_string(f.num_write) + " writes and " + std::to_string(f.num_read) + " reads: CLOSED writes 10 "
                      "and reads 10 (or one of the two phases of a split run)");
  }
  for (const auto& key : cfg.overridden_keys) {
    if (In(key, {"checkpoint.checkpoint_folder", "checkpoint.num_checkpoints_write", "checkpoint.num_checkpoints_read",
                 "checkpoint.mode", "model.parallelism.data", "feedrate.engine", "feedrate.queue_depth"})) {
      continue;
    }
    v->Demote("OPEN", "override of " + key + " (CLOSED allows checkpoint.checkpoint_folder only, 4.6.3)");
  }
  if (f.time_between_changed) v->Demote("OPEN", "--time-between changes checkpoint.time_between_checkpoints (4.6.3)");
  if (!f.fsync) v->Demote("INVALID", "checkpoint.fsync is off: every checkpoint write must end in an fsync (4.3.2)");
}

}  // namespace

Validity CheckCheckpointRun(const WorkloadConfig& cfg, const CheckpointFacts& f) {
  Validity v;
  const std::string model = MlpstorageCheckpointModel(cfg);
  if (model.empty()) {
    v.Demote("INVALID", "model " + cfg.model_name + " is not one of v3.0's checkpoint models (llama3-8b, -70b, -405b, -1t)");
  } else {
    CheckCheckpointRanks(model, f, &v);
  }
  if (!cfg.builtin) v.Demote("OPEN", "the workload file " + cfg.source + " is not one of the built-in (MLPerf) workloads");
  CheckCheckpointParameters(cfg, f, &v);
  if (f.scale != 1) v.Demote("INVALID", "--scale shrinks every file: not the model's checkpoint");
  if (f.odirect) v.Demote("OPEN", "--odirect: mlpstorage's checkpoints are written and read through the page cache");
  if (!f.injected_faults.empty()) v.Demote("INVALID", "faults were injected (--inject " + f.injected_faults + ")");
  const double gib = 1073741824.0;
  if (f.num_write > 0 && f.num_read > 0 && f.min_host_memory_bytes > 0 &&
      f.max_host_bytes_written < 3 * f.min_host_memory_bytes) {
    char why[320];
    std::snprintf(why, sizeof why,
                  "a client wrote %.1f GiB of checkpoints, under 3x its %.1f GiB of memory: CLOSED writes and reads in "
                  "two invocations with the cache flushed between (4.7.1); this run read back in the same invocation "
                  "after evicting its files from the page cache",
                  f.max_host_bytes_written / gib, f.min_host_memory_bytes / gib);
    v.Demote("OPEN", why);
  }
  return v;
}

}  // namespace feedrate
