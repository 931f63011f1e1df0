// run --accelerator-memory pinned|device: the GPUs a rank's accelerators map onto and one batch staging per
// prefetcher (loader/pipeline/gpu_staging.h); what they moved, for the rank's facts. Internal to emulator/run.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "emulator/host/comm.h"
#include "emulator/run/run.h"
#include "loader/config/workload_config.h"
#include "loader/format/sample_table.h"
#include "loader/gpu/cuda_driver.h"
#include "loader/pipeline/gpu_staging.h"
#include "loader/status.h"

namespace feedrate {

// Members are declared so that the stagings go first, then the contexts, then the driver.
struct AcceleratorStaging {
  AcceleratorMemory mode = AcceleratorMemory::kHost;
  std::unique_ptr<gpu::Cuda> cuda;
  std::vector<gpu::DeviceContext> contexts;  // one per GPU of --gpus, in that order
  std::vector<int> gpu_of;                   // per local accelerator: the GPU ordinal it maps onto
  std::vector<std::unique_ptr<GpuStaging>> train, eval;  // per local accelerator (eval: with workflow.evaluation)
  std::vector<BatchStaging*> train_slots, eval_slots;    // the same, as the trainer takes them

  // This rank's facts for the summary: mode, GPUs, what was copied and how long it took (call after training).
  nlohmann::json ToJson() const;
};

// Loads the CUDA driver, retains the GPUs of `opt.gpus` (all visible when empty; global accelerator g uses
// gpus[g % n]) and allocates the stagings, for `table`'s largest sample. Errors name what is missing (no driver
// library, no device, an ordinal that does not exist, device memory). Nothing to do for host memory.
Status SetUpAcceleratorMemory(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm,
                              const SampleTable& table, uint64_t direct_align, bool evaluation, AcceleratorStaging* out);

}  // namespace feedrate
