// Where a prefetcher's batches land and how they reach the emulated accelerator: the interface the prefetcher
// calls; GpuStaging (gpu_staging.h) is the implementation over CUDA, a test gives its own.
#pragma once

#include <cstdint>
#include <span>

#include "loader/status.h"

namespace feedrate {

// Bytes of one slot to move: the samples' own bytes, not the O_DIRECT windows or the padding between them.
struct CopyRange {
  uint64_t offset = 0;  // from the slot's start
  uint64_t length = 0;
};

// One prefetcher's slot memory (one slot per batch in flight) and, where the accelerator has memory of its own,
// the copy of each batch into it. Call order for slot i: the reads land in slot(i); the I/O thread whose
// completion ends them calls StartCopy(i, ranges) once (not for a failed batch); the accelerator thread calls
// FinishCopy(i) before the batch counts as delivered; only then is slot i read into again. REQUIRES: outlives the
// prefetcher that uses it.
class BatchStaging {
 public:
  virtual ~BatchStaging() = default;
  virtual uint64_t slots() const = 0;
  virtual uint64_t slot_bytes() const = 0;
  // Slot i's memory, where the reads land: slot_bytes() bytes, 4096-aligned (O_DIRECT reads land in it too). Host
  // memory, or with slots_on_device() the GPU memory a cuFile engine reads into, which the host must not touch
  // (no sample checks).
  virtual char* slot(uint64_t i) const = 0;
  virtual bool slots_on_device() const { return false; }
  // Whether batches move on to device memory (StartCopy and FinishCopy are called).
  virtual bool copies() const = 0;
  // On an I/O thread: queues the copy of `ranges` of slot i to the same offsets of its device memory (one copy
  // per read request, all on one stream) and returns without waiting. `ranges` is the caller's until it returns.
  virtual Status StartCopy(uint64_t i, std::span<const CopyRange> ranges) = 0;
  // On the accelerator thread: waits until slot i's copy has landed (this wait is part of the step's stall).
  virtual Status FinishCopy(uint64_t i) = 0;
};

}  // namespace feedrate
