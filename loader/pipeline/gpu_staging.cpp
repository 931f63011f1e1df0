// GpuStaging: pinned slots, device slots and the per-batch copy between them on the accelerator's stream.
#include "loader/pipeline/gpu_staging.h"

#include <algorithm>
#include <string>

#include "loader/util/clock.h"

namespace feedrate {

Result<std::unique_ptr<GpuStaging>> GpuStaging::Create(const gpu::Cuda& cuda, const gpu::DeviceContext& context,
                                                      AcceleratorMemory mode, uint64_t slots, uint64_t slot_bytes,
                                                      bool direct) {
  if (mode == AcceleratorMemory::kHost) return Status::InvalidArgument("GpuStaging: host memory needs no staging");
  if (direct && mode != AcceleratorMemory::kDevice) return Status::InvalidArgument("GpuStaging: direct reads need device memory");
  FEEDRATE_RETURN_IF_ERROR(context.MakeCurrent());
  std::unique_ptr<GpuStaging> s(new GpuStaging(cuda, context, mode, slot_bytes, direct));
  if (s->copies()) {
    FEEDRATE_ASSIGN_OR_RETURN(s->stream_, gpu::Stream::Create(cuda));
  }
  s->slots_.resize(slots);
  for (Slot& slot : s->slots_) FEEDRATE_RETURN_IF_ERROR(s->AllocateSlot(slot));
  return s;
}

Status GpuStaging::AllocateSlot(Slot& slot) {
  if (!direct_) {
    FEEDRATE_ASSIGN_OR_RETURN(slot.host, gpu::PinnedBuffer::Allocate(cuda_, slot_bytes_));
  }
  if (mode_ != AcceleratorMemory::kDevice) return Status::Ok();
  FEEDRATE_ASSIGN_OR_RETURN(slot.device, gpu::DeviceBuffer::Allocate(cuda_, slot_bytes_));
  if (direct_) return Status::Ok();
  FEEDRATE_ASSIGN_OR_RETURN(slot.start, gpu::Event::Create(cuda_));
  FEEDRATE_ASSIGN_OR_RETURN(slot.end, gpu::Event::Create(cuda_));
  return Status::Ok();
}

GpuStaging::~GpuStaging() {
  if (stream_.get() == nullptr) return;
  (void)context_.MakeCurrent();  // the destroying thread's context is the one the memory belongs to
  (void)stream_.Synchronize();
}

// Called once per batch on whichever I/O thread ended it: the context is made current here (a thread-local
// pointer store), the copy and its two events are queued, nothing waits.
Status GpuStaging::StartCopy(uint64_t i, std::span<const CopyRange> ranges) {
  Slot& slot = slots_[i];
  slot.bytes = 0;
  FEEDRATE_RETURN_IF_ERROR(context_.MakeCurrent());
  FEEDRATE_RETURN_IF_ERROR(slot.start.Record(stream_));
  for (const CopyRange& r : ranges) {
    if (r.offset > slot_bytes_ || r.length > slot_bytes_ - r.offset) {
      return Status::InvalidArgument("GpuStaging: a copy range runs past the slot (" + std::to_string(r.offset) + " + " +
                                     std::to_string(r.length) + " > " + std::to_string(slot_bytes_) + ")");
    }
    FEEDRATE_RETURN_IF_ERROR(stream_.CopyToDevice(slot.device.ptr() + r.offset, slot.host.data() + r.offset, r.length));
    slot.bytes += r.length;
  }
  return slot.end.Record(stream_);
}

Status GpuStaging::FinishCopy(uint64_t i) {
  Slot& slot = slots_[i];
  const int64_t t0 = NowNs();
  FEEDRATE_RETURN_IF_ERROR(context_.MakeCurrent());
  FEEDRATE_RETURN_IF_ERROR(slot.end.Synchronize());
  stall_ns_ += static_cast<uint64_t>(NowNs() - t0);
  FEEDRATE_ASSIGN_OR_RETURN(const float ms, gpu::Event::ElapsedMs(slot.start, slot.end));
  copy_ns_ += static_cast<uint64_t>(std::max(0.0f, ms) * 1e6f);
  bytes_ += slot.bytes;
  ++copies_;
  return Status::Ok();
}

StagingStats GpuStaging::stats() const { return {copies_, bytes_, copy_ns_, stall_ns_}; }

}  // namespace feedrate
