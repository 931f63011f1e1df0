// SpinKernel: loading the PTX module and running the spin for a step's compute time.
#include "loader/gpu/spin_kernel.h"

#include <algorithm>

namespace feedrate::gpu {

Result<std::unique_ptr<SpinKernel>> SpinKernel::Create(const Cuda& cuda, const DeviceContext& context,
                                                      uint64_t memory_bytes) {
  std::unique_ptr<SpinKernel> k(new SpinKernel(cuda, context));
  FEEDRATE_RETURN_IF_ERROR(context.MakeCurrent());
  FEEDRATE_RETURN_IF_ERROR(k->Load(memory_bytes));
  return k;
}

Status SpinKernel::Load(uint64_t memory_bytes) {
  FEEDRATE_ASSIGN_OR_RETURN(module_, Module::Load(cuda_, kFeedrateSpinKernelPtx));
  FEEDRATE_ASSIGN_OR_RETURN(fn_, module_.Function("feedrate_spin"));
  FEEDRATE_ASSIGN_OR_RETURN(stream_, Stream::Create(cuda_));
  FEEDRATE_ASSIGN_OR_RETURN(start_, Event::Create(cuda_));
  FEEDRATE_ASSIGN_OR_RETURN(end_, Event::Create(cuda_));
  int sms = 1;
  FEEDRATE_RETURN_IF_ERROR(cuda_.Check(cuda_.fn().DeviceGetAttribute(&sms, kDeviceAttributeMultiprocessorCount,
                                                                     context_.device()),
                                       "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"));
  grid_ = static_cast<unsigned>(std::max(1, sms));
  if (memory_bytes == 0) return Status::Ok();
  FEEDRATE_ASSIGN_OR_RETURN(memory_, DeviceBuffer::Allocate(cuda_, memory_bytes));
  words_ = memory_bytes / 8;
  if (words_ == 0) return Status::InvalidArgument("feedrate.compute_memory_bytes: at least 8 bytes");
  // No thread may start past the last word (the kernel's contract).
  const uint64_t threads = std::min<uint64_t>(uint64_t{grid_} * block_, words_);
  block_ = static_cast<unsigned>(std::min<uint64_t>(block_, threads));
  grid_ = static_cast<unsigned>(threads / block_);
  return Status::Ok();
}

SpinKernel::~SpinKernel() {
  if (stream_.get() == nullptr) return;
  (void)context_.MakeCurrent();
  (void)stream_.Synchronize();
}

Status SpinKernel::Run(int64_t ns) {
  if (ns <= 0) return Status::Ok();
  FEEDRATE_RETURN_IF_ERROR(context_.MakeCurrent());
  uint64_t duration = static_cast<uint64_t>(ns);
  CUdeviceptr buf = memory_.ptr();
  uint64_t words = words_;
  void* params[] = {&duration, &buf, &words};
  FEEDRATE_RETURN_IF_ERROR(start_.Record(stream_));
  FEEDRATE_RETURN_IF_ERROR(stream_.Launch(fn_, grid_, block_, params));
  FEEDRATE_RETURN_IF_ERROR(end_.Record(stream_));
  FEEDRATE_RETURN_IF_ERROR(end_.Synchronize());
  FEEDRATE_ASSIGN_OR_RETURN(const float ms, Event::ElapsedMs(start_, end_));
  ++stats_.launches;
  stats_.requested_ns += duration;
  stats_.kernel_ns += static_cast<uint64_t>(std::max(0.0f, ms) * 1e6f);
  return Status::Ok();
}

}  // namespace feedrate::gpu
