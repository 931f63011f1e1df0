// Batch staging over CUDA (run --accelerator-memory pinned|device): page-locked slots, and for `device` a device
// buffer per slot that each batch is copied into on the accelerator's own stream (the bounce path of KvikIO's
// compat mode: reads into pinned memory, then cuMemcpyHtoDAsync), or that a cuFile engine reads into (GDS).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "loader/gpu/cuda_driver.h"
#include "loader/pipeline/batch_staging.h"
#include "loader/status.h"
#include "loader/util/choices.h"

namespace feedrate {

// What one staging moved (summed over its batches). copy_ns is the device's own time for the copies (events on
// the stream); stall_ns is the part of it the accelerator thread waited for after the batch's reads were done.
struct StagingStats {
  uint64_t copies = 0;
  uint64_t bytes = 0;
  uint64_t copy_ns = 0;
  uint64_t stall_ns = 0;
};

class GpuStaging final : public BatchStaging {
 public:
  // `mode` is kPinned or kDevice; `direct` (kDevice only): the slots are device memory the reads land in (a
  // cuFile engine), with no host memory and no copy. REQUIRES: `cuda` and `context` outlive it; `context` is the
  // GPU this accelerator maps onto. Allocates everything here (device memory too), so a run fails before training.
  static Result<std::unique_ptr<GpuStaging>> Create(const gpu::Cuda& cuda, const gpu::DeviceContext& context,
                                                   AcceleratorMemory mode, uint64_t slots, uint64_t slot_bytes,
                                                   bool direct = false);
  ~GpuStaging() override;  // waits for copies still queued before the memory goes

  uint64_t slots() const override { return slots_.size(); }
  uint64_t slot_bytes() const override { return slot_bytes_; }
  char* slot(uint64_t i) const override {
    return direct_ ? static_cast<char*>(slots_[i].device.address()) : slots_[i].host.data();
  }
  bool slots_on_device() const override { return direct_; }
  bool copies() const override { return mode_ == AcceleratorMemory::kDevice && !direct_; }
  Status StartCopy(uint64_t i, std::span<const CopyRange> ranges) override;
  Status FinishCopy(uint64_t i) override;

  // Call when no copy is in flight (after the run).
  StagingStats stats() const;
  // Device memory this staging holds (0 for pinned).
  uint64_t device_bytes() const { return mode_ == AcceleratorMemory::kDevice ? slots_.size() * slot_bytes_ : 0; }
  const gpu::DeviceContext& context() const { return context_; }

 private:
  struct Slot {
    gpu::PinnedBuffer host;
    gpu::DeviceBuffer device;
    gpu::Event start, end;
    uint64_t bytes = 0;  // of the copy queued last (written by StartCopy, read by FinishCopy after it)
  };
  GpuStaging(const gpu::Cuda& cuda, const gpu::DeviceContext& context, AcceleratorMemory mode, uint64_t slot_bytes,
             bool direct)
      : cuda_(cuda), context_(context), mode_(mode), direct_(direct), slot_bytes_(slot_bytes) {}
  Status AllocateSlot(Slot& slot);

  const gpu::Cuda& cuda_;
  const gpu::DeviceContext& context_;
  AcceleratorMemory mode_;
  bool direct_;
  uint64_t slot_bytes_;
  gpu::Stream stream_;
  std::vector<Slot> slots_;
  // Accelerator thread only (FinishCopy).
  uint64_t copies_ = 0, bytes_ = 0, copy_ns_ = 0, stall_ns_ = 0;
};

}  // namespace feedrate
