// One command's record in an mlpstorage results tree (--mlperf-root): its timestamped folder, the copies of its
// output mlpstorage keeps (<mode>_<command>.stdout.log / .stderr.log), the Hydra folder DLIO writes, and at the end
// the v3.0 metadata file, the workload's results.json and the systems draft. Used by run, datagen, datasize and
// checkpoint on every rank of the job.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "emulator/host/comm.h"
#include "emulator/results/dlio_output.h"
#include "emulator/results/mlperf_tree.h"
#include "emulator/results/output_tee.h"
#include "loader/config/workload_config.h"

namespace feedrate {

class MlperfRecord {
 public:
  struct Spec {
    std::string mode;     // "training" | "checkpointing"
    std::string command;  // "run" | "datagen" | "datasize"
    std::string model;    // mlpstorage's name (unet3d, llama3-8b)
    std::string accelerator;
    bool hydra = true;    // the command runs DLIO's workflow (run, datagen, checkpointing): a Hydra folder
    std::vector<std::string> overrides;  // as given (key=value, ++workload.key=value)
    std::string command_line;
    nlohmann::json args = nlohmann::json::object();  // the command's options (mlpstorage's names where it has them)
  };

  // Collective: rank 0 makes the folder (tree/<mode>/<model>[/<command>]/<stamp>), starts copying this process's
  // output there and writes the Hydra folder; every rank learns the folder. An error is every rank's.
  static Result<std::unique_ptr<MlperfRecord>> Begin(const MlperfTree& tree, const Spec& spec, const WorkloadConfig& cfg,
                                                     Comm& comm);
  const std::string& dir() const { return dir_; }
  // DLIO's invocation for the run's own writers (RunOptions::dlio / CheckpointOptions::dlio): files into dir().
  const DlioInvocation* dlio() const { return &inv_; }
  DlioInvocation* mutable_dlio() { return &inv_; }

  // Rank 0, after the command: the output copies closed, the metadata written (verification from the summary's
  // validity when the command wrote one, else the division), the workload's results.json renewed, the systems
  // draft written if missing. Other ranks return Ok.
  Status Finish(const WorkloadConfig& cfg, int ranks);

 private:
  MlperfTree tree_;
  Spec spec_;
  std::string dir_, stamp_, parent_;
  DlioInvocation inv_;
  OutputTee tee_;
  double start_unix_ = 0;
  bool root_ = false;
};

}  // namespace feedrate
