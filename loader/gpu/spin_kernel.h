// The emulated accelerator's compute on its own GPU (feedrate.compute: gpu): the clock-bounded spin kernel of
// spin_kernel.ptx (PTX text in the repository, JIT-compiled by the driver when loaded: no compiler at run time).
#pragma once

#include <cstdint>
#include <memory>

#include "loader/gpu/cuda_driver.h"
#include "loader/status.h"

// The PTX text of loader/gpu/spin_kernel.ptx, embedded at build time (NUL-terminated, as cuModuleLoadData takes it).
extern const char kFeedrateSpinKernelPtx[];

namespace feedrate::gpu {

struct SpinStats {
  uint64_t launches = 0;
  uint64_t requested_ns = 0;  // the compute time asked for, summed
  uint64_t kernel_ns = 0;     // the GPU's own time for the kernels (events around each), summed
};

// One accelerator's kernel: its module, stream, events and optional memory in that accelerator's GPU context.
class SpinKernel {
 public:
  // Makes `context` current on the calling thread and loads everything there; `memory_bytes` (0: none) of device
  // memory is what the kernel streams through while it spins. Grid: one block of 256 threads per multiprocessor,
  // as a training step occupies every SM, fewer when the memory holds fewer words. Errors name the CUDA call (an
  // invalid or too new PTX for the driver: cuModuleLoadData: CUDA_ERROR_UNSUPPORTED_PTX_VERSION ...).
  // REQUIRES: `cuda` and `context` outlive it.
  static Result<std::unique_ptr<SpinKernel>> Create(const Cuda& cuda, const DeviceContext& context, uint64_t memory_bytes);
  ~SpinKernel();  // waits for the last kernel, with the context current, before the module and memory go
  SpinKernel(const SpinKernel&) = delete;
  SpinKernel& operator=(const SpinKernel&) = delete;

  // Runs the kernel for `ns` nanoseconds of the GPU's clock and waits for it to finish. One thread at a time (its
  // accelerator's); that thread's current context becomes this kernel's.
  Status Run(int64_t ns);
  SpinStats stats() const { return stats_; }
  unsigned grid() const { return grid_; }
  unsigned block() const { return block_; }
  uint64_t memory_bytes() const { return memory_.size(); }

 private:
  SpinKernel(const Cuda& cuda, const DeviceContext& context) : cuda_(cuda), context_(context) {}
  Status Load(uint64_t memory_bytes);

  const Cuda& cuda_;
  const DeviceContext& context_;
  Module module_;
  CUfunction fn_ = nullptr;
  Stream stream_;
  Event start_, end_;
  DeviceBuffer memory_;
  uint64_t words_ = 0;
  unsigned grid_ = 1, block_ = 256;
  SpinStats stats_;
};

}  // namespace feedrate::gpu
