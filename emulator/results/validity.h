// MLPerf Storage v3.0 rule checks (mlcommons/storage mlpstorage: rules/run_checkers/training.py @b681029,
// rules/utils.py and submission_checker/checks/training_checks.py @4234cd9): the dataset-size rule, which
// parameter overrides CLOSED and OPEN allow, O_DIRECT only for unet3d, equal accelerators per host; plus what
// Feedrate itself does differently from DLIO. A result is CLOSED, OPEN or INVALID with the reasons.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loader/config/workload_config.h"

namespace feedrate {

// The dataset-size rule: at least 5x the clients' total memory and 500 steps per epoch,
//   files >= max(5 * total_client_memory_bytes / (nspf * record_length), 500 * accelerators * batch / nspf)
// rounded up: the run checker (rules/utils.py) floors both quotients, the submission checker compares the files
// with the unrounded quotients, so only the rounded-up count passes both. A Parquet config without
// record_length_bytes takes the record length from its columns as mlpstorage does (8 bytes for float64/int64, 1
// for uint8/bool, 4 for any other dtype, times the column's size).
struct DatasetMinimum {
  uint64_t files = 0, by_memory = 0, by_steps = 0;  // rounded up
  uint64_t files_rounded_down = 0;                   // what `mlpstorage training datasize` prints
  double record_length = 0;  // the rule's bytes per sample (Parquet without record_length_bytes: its columns')
};
DatasetMinimum TrainingDatasetMinimum(const WorkloadConfig& cfg, double total_client_memory_bytes, uint64_t accelerators);

struct Validity {
  std::string edition = "v3.0";     // the MLPerf Storage rules judged by (JudgedEdition; checkpoints: v3.0)
  std::string category = "CLOSED";  // CLOSED, OPEN or INVALID
  std::vector<std::string> reasons;  // why it is not CLOSED (empty for CLOSED)
  // Lowers the category to `to` (never raises it) and records why.
  void Demote(const std::string& to, const std::string& reason);
  nlohmann::json ToJson() const;
};

struct RunFacts {
  uint64_t accelerators = 0;                     // total
  std::vector<uint64_t> accelerators_per_host;   // one entry per host
  double client_memory_bytes = 0;                // all hosts together
  std::string injected_faults;                   // --inject rules ("" = none)
};

// The edition whose training set has a workload: "v3.0" for unet3d on b200 and retinanet on b200 and mi355
// (mlpstorage v3.0 training/README.md's combinations; MODELS_CLOSED x ACCELERATORS_CLOSED with a workload file),
// "v2.0" for unet3d, resnet50 and cosmoflow on a100 and h100, "" for neither (flux, dlrm, bert, v100, ...). From a
// built-in workload's model and the accelerator its name ends with.
std::string TrainingRulesEdition(const WorkloadConfig& cfg);
// The edition a training run is judged by: its --rules (feedrate.rules) edition, the one whose DLIO it emulates;
// under --rules upstream (no edition's DLIO) the edition that has the workload, else v3.0.
std::string JudgedEdition(const WorkloadConfig& cfg);
// mlpstorage's name of a training workload's model (unet3d, retinanet, resnet50, ...) and the accelerator its
// built-in name ends with (b200, h100, ...; "" when it names none).
std::string MlpstorageTrainingModel(const WorkloadConfig& cfg);
std::string WorkloadAccelerator(const WorkloadConfig& cfg);

// The checks mlpstorage runs on a training run, by JudgedEdition's rules: a built-in workload outside that
// edition's training set is INVALID, saying which edition had it (v3.0's what-if combinations named as such);
// --rules upstream is OPEN. Plus Feedrate's own departures from DLIO's behaviour.
Validity CheckTrainingRun(const WorkloadConfig& cfg, const RunFacts& facts);

// A checkpoint run as the v3.0 rules see it (Rules.md 4.3-4.7; mlpstorage v3.0 LLM_ALLOWED_VALUES).
struct CheckpointFacts {
  uint64_t ranks = 0;
  std::string mode = "default";       // checkpoint.mode
  uint64_t num_write = 0, num_read = 0;
  bool fsync = true, odirect = false;
  double scale = 1;                   // --scale
  bool time_between_changed = false;  // --time-between other than the workload's
  std::string injected_faults;        // --inject rules ("" = none)
  double max_host_bytes_written = 0;  // over hosts: the checkpoint bytes its ranks wrote in this run
  double min_host_memory_bytes = 0;   // over the same hosts
};
// mlpstorage's name of a llama3 checkpoint workload ("llama3-8b", ...; "" for another model): from a built-in name
// (llama3_8b) or model.name (DLIO's llama_8b).
std::string MlpstorageCheckpointModel(const WorkloadConfig& cfg);
// The process counts (8 or the full job; subset only at 8 ranks and not for 8b), 10 writes and 10 reads (or one
// phase of a split run), only checkpoint.checkpoint_folder changed, fsync on, the cache-flush rule (checkpoints per
// client under 3x its memory: write and read as two invocations), plus Feedrate's --scale, --odirect, --inject.
Validity CheckCheckpointRun(const WorkloadConfig& cfg, const CheckpointFacts& facts);

}  // namespace feedrate
