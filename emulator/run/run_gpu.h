// run --accelerator-memory pinned|device [--gds] and feedrate.compute: gpu: the GPUs a rank's accelerators map
// onto, one batch staging per prefetcher (loader/pipeline/gpu_staging.h), the cuFile session when reads go straight
// into device memory, each accelerator's spin kernel, and what they moved and ran, for the rank's facts. Internal
// to emulator/run.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "emulator/host/comm.h"
#include "emulator/run/read_plan.h"
#include "emulator/run/run.h"
#include "emulator/training/trainer.h"
#include "loader/config/workload_config.h"
#include "loader/format/sample_table.h"
#include "loader/gpu/cuda_driver.h"
#include "loader/gpu/cufile.h"
#include "loader/gpu/cufile_engine.h"
#include "loader/gpu/spin_kernel.h"
#include "loader/pipeline/gpu_staging.h"
#include "loader/status.h"

namespace feedrate {

// feedrate.compute: gpu for one accelerator: its spin kernel, as the trainer calls it.
class GpuStepCompute final : public StepCompute {
 public:
  explicit GpuStepCompute(std::unique_ptr<gpu::SpinKernel> kernel) : kernel_(std::move(kernel)) {}
  Status Run(int64_t ns) override { return kernel_->Run(ns); }
  const gpu::SpinKernel& kernel() const { return *kernel_; }

 private:
  std::unique_ptr<gpu::SpinKernel> kernel_;
};

// Members are declared so that the kernels and cuFile registrations go first, then the stagings, the cuFile
// session, the contexts and the driver.
struct AcceleratorStaging {
  AcceleratorMemory mode = AcceleratorMemory::kHost;
  std::unique_ptr<gpu::Cuda> cuda;
  std::vector<gpu::DeviceContext> contexts;  // one per GPU of --gpus, in that order
  std::unique_ptr<gpu::CuFile> cufile;       // GDS only
  bool gds = false;                          // reads land in the device slots through cuFile (no copy)
  std::string gds_requested = "auto";        // --gds as given    (these three: the read plan's staging)
  std::string gds_reason;                    // why GDS does not serve a device-memory run ("" when it does)
  std::vector<int> gpu_of;                   // per local accelerator: the GPU ordinal it maps onto
  std::vector<size_t> gpu_index;             // per local accelerator: its GPU's index in `contexts`
  std::vector<std::unique_ptr<GpuStaging>> train, eval;  // per local accelerator (eval: with workflow.evaluation)
  std::vector<BatchStaging*> train_slots, eval_slots;    // the same, as the trainer takes them
  std::vector<gpu::CuFileBuffer> registered;  // GDS: every device slot, registered with cuFile
  std::vector<std::unique_ptr<GpuStepCompute>> compute;  // feedrate.compute: gpu, per local accelerator
  std::vector<StepCompute*> compute_steps;               // the same, as the trainer takes them

  // GDS: every device slot, for the cuFile engine.
  std::vector<gpu::DeviceRegion> Regions() const;
  // This rank's facts for the summary: mode, path, GPUs, what was copied or read into device memory and how long
  // the copies took, and the kernels' facts ("compute"). `engine_bytes`: what the rank's engine read (the bytes
  // cuFile moved, with GDS). Call after training.
  nlohmann::json ToJson(uint64_t engine_bytes) const;
};

// Samples with bytes one batch can hold (SampleTable::MaxReadsPerBatch): what a staging slot must have room for.
struct SlotReads {
  uint64_t train = 0;
  uint64_t eval = 0;  // 0: no evaluation
};

// Loads the CUDA driver, retains the GPUs of `opt.gpus` (all visible when empty; global accelerator g uses
// gpus[g % n]) and loads each accelerator's spin kernel (feedrate.compute: gpu). Nothing to do for host memory and
// sleep compute. Errors name what is missing (no driver library, no device, an ordinal that does not exist, the
// kernel); --gds on without device memory, and staged memory for samples whose sizes are unknown, are refused.
Status SetUpAccelerators(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, const SampleTable& table,
                         AcceleratorStaging* out);

// Opens cuFile and registers a handle on `probe_path`, a file the rank reads (KvikIO's test for its AUTO mode): the
// fact the read plan's GDS choice takes (ProbesCuFile says when). On success out->cufile is kept for the slots.
// REQUIRES: SetUpAccelerators done (the driver loaded).
Status ProbeCuFile(const std::string& probe_path, AcceleratorStaging* out);

// The stagings `plan` names (the read plan's staging): per local accelerator `cfg.batches_in_flight` slots of
// `reads` of `table`'s largest sample (O_DIRECT windows included), in device memory registered with cuFile where
// plan.gds. An error registering them is returned as it is: the caller plans again without GDS (under --gds auto)
// after ClearAcceleratorSlots. Nothing for host memory. REQUIRES: SetUpAccelerators done.
Status MakeAcceleratorSlots(const WorkloadConfig& cfg, const SampleTable& table, uint64_t direct_align, SlotReads reads,
                            const StagingPlan& plan, AcceleratorStaging* out);
// Frees the stagings and their registrations (the cuFile session stays until the next MakeAcceleratorSlots).
void ClearAcceleratorSlots(AcceleratorStaging* out);

}  // namespace feedrate
