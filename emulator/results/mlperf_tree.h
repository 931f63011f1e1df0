// mlpstorage's results tree, written by Feedrate's own commands (--mlperf-root): where each record goes, the
// v3.0 metadata file beside DLIO's files, each workload's results.json, and a draft systems/<system>.yaml
// (docs/mlpstorage.md "A tree of Feedrate's own").
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "loader/status.h"

namespace feedrate {

// --mlperf-root ROOT --division closed|open --org ORG --system SYSTEM.
struct MlperfTree {
  std::string root, division, org, system;
  bool enabled() const { return !root.empty(); }
  // ROOT/<division>/<org>/results/<system>/<mode>/<model>: mode "training" or "checkpointing", model as
  // mlpstorage names it (unet3d, llama3-8b).
  std::string WorkloadDir(const std::string& mode, const std::string& model) const;
  std::string SystemsFile() const;  // ROOT/<division>/<org>/systems/<system>.yaml
};

// A new folder `parent`/YYYYmmdd_HHMMSS (local time, mlpstorage's name for a run): the parents created; when that
// second's folder exists already (back-to-back runs), the next second's, waiting for it. Returns the stamp.
Result<std::string> NewTimestampDir(const std::string& parent);

// What mlpstorage v3.0 writes as <mode>_<stamp>_metadata.json (benchmarks/base.py `metadata`): the keys its
// report generator and submission checker read.
struct MlperfMetadata {
  std::string mode;      // "training" | "checkpointing"
  std::string command;   // "run" | "datagen" | "datasize"
  std::string model;     // mlpstorage's name
  std::string accelerator;
  std::string stamp;     // YYYYmmdd_HHMMSS
  std::string dir;       // the run's folder
  uint64_t num_processes = 0;
  nlohmann::json parameters = nlohmann::json::object();           // the workload after overrides
  nlohmann::json override_parameters = nlohmann::json::object();  // "key": "value" as given
  nlohmann::json system_info;   // ClusterInformation.as_dict-like (hosts, memory, cores), or null
  double runtime_seconds = 0;
  std::string verification;     // "closed" | "open" | "invalid" (lower case, as mlpstorage writes it)
  std::string executed_command, stdout_log, stderr_log;
  nlohmann::json args = nlohmann::json::object();  // the command's options, mlpstorage's names where it has them
};
Status WriteMlperfMetadata(const MlperfMetadata& m);

// The overrides as mlpstorage records them: "key": "value", without Hydra's prefixes.
nlohmann::json OverrideParameters(const std::vector<std::string>& overrides);

// `dir`/results.json: one row per run folder directly under `runs_dir` (mlpstorage's reportgen rows, through
// MlperfRunRow), for the checker's one-results.json-per-workload rule. Folders that are not runs are left out.
Status WriteWorkloadResults(const std::string& runs_dir, const std::string& dir);

// The draft systems/<system>.yaml (v3.0's schema, system_description/schema.yaml) from what Feedrate knows of the
// client hosts (`hosts`: each host's facts, as CheckpointHost() or a run's rank facts give them: hostname,
// host_memory_GB, host_cpu_count, host_processor_name), every field only the submitter knows marked "TODO";
// never overwrites an existing file. Returns whether it wrote one.
Result<bool> WriteSystemsDraft(const MlperfTree& tree, const std::vector<nlohmann::json>& hosts);

}  // namespace feedrate
