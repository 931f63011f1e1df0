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
  return lib_.Bind(&fn_.GetErrorName, "cuGetErrorName");
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
  DeviceBuffer b;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().MemAlloc(&b.ptr_, bytes), "cuMemAlloc of " + std::to_string(bytes) + " bytes"));
  b.cuda_ = &cuda;
  b.size_ = bytes;
  return b;
}

void DeviceBuffer::Release() {
  if (cuda_ != nullptr && ptr_ != 0) (void)cuda_->fn().MemFree(ptr_);
  cuda_ = nullptr;
  ptr_ = 0;
  size_ = 0;
}

DeviceBuffer::~DeviceBuffer() { Release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : cuda_(std::exchange(o.cuda_, nullptr)), ptr_(std::exchange(o.ptr_, 0)), size_(std::exchange(o.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    cuda_ = std::exchange(o.cuda_, nullptr);
    ptr_ = std::exchange(o.ptr_, 0);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

Result<PinnedBuffer> PinnedBuffer::Allocate(const Cuda& cuda, size_t bytes) {
  PinnedBuffer b;
  void* p = nullptr;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().MemHostAlloc(&p, bytes, kMemHostAllocPortable),
                                      "cuMemHostAlloc of " + std::to_string(bytes) + " bytes"));
  b.cuda_ = &cuda;
  b.data_ = static_cast<char*>(p);
  b.size_ = bytes;
  return b;
}

void PinnedBuffer::Release() {
  if (cuda_ != nullptr && data_ != nullptr) (void)cuda_->fn().MemFreeHost(data_);
  cuda_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

PinnedBuffer::~PinnedBuffer() { Release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept
    : cuda_(std::exchange(o.cuda_, nullptr)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    cuda_ = std::exchange(o.cuda_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

Result<Stream> Stream::Create(const Cuda& cuda) {
  Stream s;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().StreamCreate(&s.stream_, kStreamNonBlocking), "cuStreamCreate"));
  s.cuda_ = &cuda;
  return s;
}

void Stream::Release() {
  if (cuda_ != nullptr && stream_ != nullptr) (void)cuda_->fn().StreamDestroy(stream_);
  cuda_ = nullptr;
  stream_ = nullptr;
}

Stream::~Stream() { Release(); }

Stream::Stream(Stream&& o) noexcept : cuda_(std::exchange(o.cuda_, nullptr)), stream_(std::exchange(o.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    Release();
    cuda_ = std::exchange(o.cuda_, nullptr);
    stream_ = std::exchange(o.stream_, nullptr);
  }
  return *this;
}

Status Stream::CopyToDevice(CUdeviceptr dst, const void* src, size_t bytes) const {
  return cuda_->Check(cuda_->fn().MemcpyHtoDAsync(dst, src, bytes, stream_), "cuMemcpyHtoDAsync");
}

Status Stream::Synchronize() const { return cuda_->Check(cuda_->fn().StreamSynchronize(stream_), "cuStreamSynchronize"); }

Result<Event> Event::Create(const Cuda& cuda) {
  Event e;
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().EventCreate(&e.event_, 0), "cuEventCreate"));
  e.cuda_ = &cuda;
  return e;
}

void Event::Release() {
  if (cuda_ != nullptr && event_ != nullptr) (void)cuda_->fn().EventDestroy(event_);
  cuda_ = nullptr;
  event_ = nullptr;
}

Event::~Event() { Release(); }

Event::Event(Event&& o) noexcept : cuda_(std::exchange(o.cuda_, nullptr)), event_(std::exchange(o.event_, nullptr)) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    Release();
    cuda_ = std::exchange(o.cuda_, nullptr);
    event_ = std::exchange(o.event_, nullptr);
  }
  return *this;
}

Status Event::Record(const Stream& stream) const {
  return cuda_->Check(cuda_->fn().EventRecord(event_, stream.get()), "cuEventRecord");
}

Status Event::Synchronize() const { return cuda_->Check(cuda_->fn().EventSynchronize(event_), "cuEventSynchronize"); }

Result<float> Event::ElapsedMs(const Event& start, const Event& end) {
  float ms = 0;
  FEEDRATE_RETURN_IF_ERROR(start.cuda_->Check(start.cuda_->fn().EventElapsedTime(&ms, start.event_, end.event_), "cuEventElapsedTime"));
  return ms;
}

}  // namespace feedrate::gpu
