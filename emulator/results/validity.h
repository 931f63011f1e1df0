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

// The checks mlpstorage v3.0 runs on a training run, plus Feedrate's own departures from DLIO's behaviour.
Validity CheckTrainingRun(const WorkloadConfig& cfg, const RunFacts& facts);

}  // namespace feedrate
