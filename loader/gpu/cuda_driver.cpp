// Cuda::Load and the RAII owners of contexts, memory and streams.
#include "loader/gpu/cuda_driver.h"

#include <utility>

namespace feedrate::gpu {

Result<std::unique_ptr<Cuda>> Cuda::Load() {
  auto cuda = std::make_unique<Cuda>();
  FEEDRATE_ASSIGN_OR_RETURN(cuda->lib_, DlLibrary::Open("libcuda.so.1", "FEEDRATE_LIBCUDA"));
  FEEDRATE_RETURN_IF_ERROR(cuda->BindAll());
  FEEDRATE_RETURN_IF_ERROR(cuda->Check(cuda->fn_.Init(0), "cuInit"));
  FEEDRATE_RETURN_IF_ERROR(cuda->Check(cuda->fn_.DriverGetVersion(&cuda->version_), "cuDriverGetVersion"));
  FEEDRATE_RETURN_IF_ERROR(cuda->Check(cuda->fn_.DeviceGetCount(&cuda->devices_), "cuDeviceGetCount"));
  if (cuda->devices_ <= 0) return Status::NotFound(cuda->library() + ": the CUDA driver sees no GPU");
  return cuda;
}

// cuda.h maps the versioned entry points to these exported names.
Status Cuda::BindAll() {
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.Init, "cuInit"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DriverGetVersion, "cuDriverGetVersion"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DeviceGetCount, "cuDeviceGetCount"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DeviceGet, "cuDeviceGet"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DeviceGetName, "cuDeviceGetName"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.CtxSetCurrent, "cuCtxSetCurrent"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.MemAlloc, "cuMemAlloc_v2"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.MemFree, "cuMemFree_v2"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.MemHostAlloc, "cuMemHostAlloc"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.MemFreeHost, "cuMemFreeHost"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.MemcpyDtoH, "cuMemcpyDtoH_v2"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.StreamCreate, "cuStreamCreate"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.StreamSynchronize, "cuStreamSynchronize"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.StreamDestroy, "cuStreamDestroy_v2"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.EventCreate, "cuEventCreate"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.EventRecord, "cuEventRecord"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.EventSynchronize, "cuEventSynchronize"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.EventElapsedTime, "cuEventElapsedTime"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.EventDestroy, "cuEventDestroy_v2"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.GetErrorName, "cuGetErrorName"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DeviceGetAttribute, "cuDeviceGetAttribute"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.ModuleLoadData, "cuModuleLoadData"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.ModuleUnload, "cuModuleUnload"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.ModuleGetFunction, "cuModuleGetFunction"));
  return lib_.Bind(&fn_.LaunchKernel, "cuLaunchKernel");
}

std::string Cuda::DeviceName(int ordinal) const {
  CUdevice d = 0;
  char name[256] = {};
  if (fn_.DeviceGet(&d, ordinal) != kCudaSuccess || fn_.DeviceGetName(name, sizeof name - 1, d) != kCudaSuccess) {
    return "GPU " + std::to_string(ordinal);
  }
  return name;
}

Status Cuda::Check(CUresult r, const std::string& what) const {
  if (r == kCudaSuccess) return Status::Ok();
  const char* name = nullptr;
  if (fn_.GetErrorName == nullptr || fn_.GetErrorName(r, &name) != kCudaSuccess || name == nullptr) name = "CUDA error";
  return Status::IoError(what + ": " + name + " (" + std::to_string(r) + ")");
}

Result<DeviceContext> DeviceContext::Retain(const Cuda& cuda, int ordinal) {
  if (ordinal < 0 || ordinal >= cuda.device_count()) {
    return Status::InvalidArgument("GPU " + std::to_string(ordinal) + " does not exist (" +
                                   std::to_string(cuda.device_count()) + " visible)");
  }
  DeviceContext c;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().DeviceGet(&c.device_, ordinal), "cuDeviceGet"));
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().DevicePrimaryCtxRetain(&c.ctx_, c.device_), "cuDevicePrimaryCtxRetain"));
  c.cuda_ = &cuda;
  c.ordinal_ = ordinal;
  return c;
}

DeviceContext::~DeviceContext() {
  if (cuda_ != nullptr) (void)cuda_->fn().DevicePrimaryCtxRelease(device_);
}

DeviceContext::DeviceContext(DeviceContext&& o) noexcept
    : cuda_(std::exchange(o.cuda_, nullptr)), ctx_(o.ctx_), device_(o.device_), ordinal_(o.ordinal_) {}

DeviceContext& DeviceContext::operator=(DeviceContext&& o) noexcept {
  if (this != &o) {
    if (cuda_ != nullptr) (void)cuda_->fn().DevicePrimaryCtxRelease(device_);
    cuda_ = std::exchange(o.cuda_, nullptr);
    ctx_ = o.ctx_;
    device_ = o.device_;
    ordinal_ = o.ordinal_;
  }
  return *this;
}

Status DeviceContext::MakeCurrent() const { return cuda_->Check(cuda_->fn().CtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

Result<DeviceBuffer> DeviceBuffer::Allocate(const Cuda& cuda, size_t bytes) {
  CUdeviceptr p = 0;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().MemAlloc(&p, bytes), "cuMemAlloc of " + std::to_string(bytes) + " bytes"));
  DeviceBuffer b;
  b.mem_ = {&cuda, p};
  b.size_ = bytes;
  return b;
}

Result<PinnedBuffer> PinnedBuffer::Allocate(const Cuda& cuda, size_t bytes) {
  void* p = nullptr;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().MemHostAlloc(&p, bytes, kMemHostAllocPortable),
                                      "cuMemHostAlloc of " + std::to_string(bytes) + " bytes"));
  PinnedBuffer b;
  b.mem_ = {&cuda, p};
  b.size_ = bytes;
  return b;
}

Result<Stream> Stream::Create(const Cuda& cuda) {
  CUstream h = nullptr;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().StreamCreate(&h, kStreamNonBlocking), "cuStreamCreate"));
  Stream s;
  s.stream_ = {&cuda, h};
  return s;
}

Status Stream::CopyToDevice(CUdeviceptr dst, const void* src, size_t bytes) const {
  const Cuda& cuda = *stream_.lib();
  return cuda.Check(cuda.fn().MemcpyHtoDAsync(dst, src, bytes, stream_.get()), "cuMemcpyHtoDAsync");
}

Status Stream::Launch(CUfunction fn, unsigned grid, unsigned block, void** params) const {
  const Cuda& cuda = *stream_.lib();
  return cuda.Check(cuda.fn().LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream_.get(), params, nullptr), "cuLaunchKernel");
}

Status Stream::Synchronize() const {
  const Cuda& cuda = *stream_.lib();
  return cuda.Check(cuda.fn().StreamSynchronize(stream_.get()), "cuStreamSynchronize");
}

Result<Module> Module::Load(const Cuda& cuda, const char* ptx) {
  CUmodule h = nullptr;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().ModuleLoadData(&h, ptx), "cuModuleLoadData"));
  Module m;
  m.module_ = {&cuda, h};
  return m;
}

Result<CUfunction> Module::Function(const char* name) const {
  const Cuda& cuda = *module_.lib();
  CUfunction fn = nullptr;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().ModuleGetFunction(&fn, module_.get(), name),
                                      std::string("cuModuleGetFunction ") + name));
  return fn;
}

Result<Event> Event::Create(const Cuda& cuda) {
  CUevent h = nullptr;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().EventCreate(&h, 0), "cuEventCreate"));
  Event e;
  e.event_ = {&cuda, h};
  return e;
}

Status Event::Record(const Stream& stream) const {
  const Cuda& cuda = *event_.lib();
  return cuda.Check(cuda.fn().EventRecord(event_.get(), stream.get()), "cuEventRecord");
}

Status Event::Synchronize() const {
  const Cuda& cuda = *event_.lib();
  return cuda.Check(cuda.fn().EventSynchronize(event_.get()), "cuEventSynchronize");
}

Result<float> Event::ElapsedMs(const Event& start, const Event& end) {
  const Cuda& cuda = *start.event_.lib();
  float ms = 0;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().EventElapsedTime(&ms, start.event_.get(), end.event_.get()), "cuEventElapsedTime"));
  return ms;
}

}  // namespace feedrate::gpu
