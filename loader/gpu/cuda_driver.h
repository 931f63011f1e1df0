// The CUDA driver API, loaded at run time (libcuda.so.1, as KvikIO does: no coupling to a CUDA runtime version),
// and RAII owners for what Feedrate takes from it: the device's primary context, device and pinned host memory,
// streams. The only CUDA types Feedrate knows are declared here, from cuda.h's ABI (they are plain integers and
// opaque pointers); the exported names of the versioned functions (cuMemAlloc_v2, ...) are the ones cuda.h maps to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "loader/gpu/dl_library.h"
#include "loader/status.h"

namespace feedrate::gpu {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
inline constexpr CUresult kCudaSuccess = 0;
inline constexpr unsigned kMemHostAllocPortable = 0x01;  // CU_MEMHOSTALLOC_PORTABLE
inline constexpr unsigned kStreamNonBlocking = 0x1;      // CU_STREAM_NON_BLOCKING
inline constexpr int kDeviceAttributeMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT

// The driver entry points Feedrate calls; filled by Cuda::Load.
struct CudaFunctions {
  CUresult (*Init)(unsigned flags);
  CUresult (*DriverGetVersion)(int* version);
  CUresult (*DeviceGetCount)(int* count);
  CUresult (*DeviceGet)(CUdevice* device, int ordinal);
  CUresult (*DeviceGetName)(char* name, int len, CUdevice device);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice device);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice device);
  CUresult (*CtxSetCurrent)(CUcontext ctx);
  CUresult (*MemAlloc)(CUdeviceptr* ptr, size_t bytes);
  CUresult (*MemFree)(CUdeviceptr ptr);
  CUresult (*MemHostAlloc)(void** ptr, size_t bytes, unsigned flags);
  CUresult (*MemFreeHost)(void* ptr);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);
  CUresult (*MemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes);
  CUresult (*StreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*StreamSynchronize)(CUstream stream);
  CUresult (*StreamDestroy)(CUstream stream);
  CUresult (*EventCreate)(CUevent* event, unsigned flags);
  CUresult (*EventRecord)(CUevent event, CUstream stream);
  CUresult (*EventSynchronize)(CUevent event);
  CUresult (*EventElapsedTime)(float* ms, CUevent start, CUevent end);
  CUresult (*EventDestroy)(CUevent event);
  CUresult (*GetErrorName)(CUresult error, const char** name);
  CUresult (*DeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*ModuleLoadData)(CUmodule* module, const void* image);  // PTX text: JIT-compiled by the driver
  CUresult (*ModuleUnload)(CUmodule module);
  CUresult (*ModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name);
  CUresult (*LaunchKernel)(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                           unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream, void** params,
                           void** extra);
};

class Cuda {
 public:
  // Loads libcuda.so.1 ($FEEDRATE_LIBCUDA overrides the path) and initializes the driver. Errors, one line each:
  // NotFound (no driver library: no NVIDIA driver on this host), Unsupported (an entry point missing: a driver
  // older than Feedrate needs), IoError with CUDA's error name (cuInit failed, e.g. CUDA_ERROR_NO_DEVICE), NotFound
  // when the driver sees no device.
  static Result<std::unique_ptr<Cuda>> Load();

  const CudaFunctions& fn() const { return fn_; }
  int device_count() const { return devices_; }
  int driver_version() const { return version_; }  // 12040 for CUDA 12.4
  const std::string& library() const { return lib_.name(); }
  std::string DeviceName(int ordinal) const;
  // OK for CUDA_SUCCESS; else IoError "<what>: <CUDA error name> (<code>)".
  Status Check(CUresult r, const std::string& what) const;

 private:
  Status BindAll();

  DlLibrary lib_;
  CudaFunctions fn_{};
  int devices_ = 0;
  int version_ = 0;
};

// A device's primary context, retained for the object's life. CUDA calls act on the calling thread's current
// context: a thread calls MakeCurrent before its first call for this device. The Cuda object outlives it.
class DeviceContext {
 public:
  static Result<DeviceContext> Retain(const Cuda& cuda, int ordinal);
  DeviceContext() = default;
  ~DeviceContext();
  DeviceContext(DeviceContext&& o) noexcept;
  DeviceContext& operator=(DeviceContext&& o) noexcept;
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  Status MakeCurrent() const;
  int ordinal() const { return ordinal_; }
  CUdevice device() const { return device_; }

 private:
  const Cuda* cuda_ = nullptr;
  CUcontext ctx_ = nullptr;
  CUdevice device_ = 0;
  int ordinal_ = -1;
};

// Device memory (cuMemAlloc), freed with the object; allocate and free with the device's context current.
class DeviceBuffer {
 public:
  static Result<DeviceBuffer> Allocate(const Cuda& cuda, size_t bytes);
  DeviceBuffer() = default;
  // A moved-from buffer owns nothing and says so (size 0).
  DeviceBuffer(DeviceBuffer&& o) noexcept : mem_(std::move(o.mem_)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    mem_ = std::move(o.mem_);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }

  CUdeviceptr ptr() const { return mem_.get(); }
  // The address as cuFile takes it (a device pointer in a void*).
  void* address() const {  // (cuFile's API takes the device address as a pointer: the cast is the contract)
    return reinterpret_cast<void*>(static_cast<uintptr_t>(mem_.get()));  // NOLINT(performance-no-int-to-ptr)
  }
  size_t size() const { return size_; }

 private:
  LibHandle<Cuda, CUdeviceptr, &CudaFunctions::MemFree> mem_;
  size_t size_ = 0;
};

// Page-locked host memory (cuMemHostAlloc, portable to every context): what copies to the device read from at
// full PCIe speed. Freed with the object.
class PinnedBuffer {
 public:
  static Result<PinnedBuffer> Allocate(const Cuda& cuda, size_t bytes);
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& o) noexcept : mem_(std::move(o.mem_)), size_(std::exchange(o.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    mem_ = std::move(o.mem_);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }

  char* data() const { return static_cast<char*>(mem_.get()); }
  size_t size() const { return size_; }

 private:
  LibHandle<Cuda, void*, &CudaFunctions::MemFreeHost> mem_;
  size_t size_ = 0;
};

// A non-blocking stream: one per emulated accelerator, so its copies overlap the others'.
class Stream {
 public:
  static Result<Stream> Create(const Cuda& cuda);
  Stream() = default;

  CUstream get() const { return stream_.get(); }
  // Queues a host-to-device copy (src pinned for an asynchronous one) and returns.
  Status CopyToDevice(CUdeviceptr dst, const void* src, size_t bytes) const;
  // Queues `fn` on `grid` blocks of `block` threads with the kernel's parameters (pointers to each) and returns.
  Status Launch(CUfunction fn, unsigned grid, unsigned block, void** params) const;
  // Waits for everything queued on the stream.
  Status Synchronize() const;

 private:
  LibHandle<Cuda, CUstream, &CudaFunctions::StreamDestroy> stream_;
};

// A module loaded from PTX text in the current context (cuModuleLoadData: the driver JIT-compiles it for the GPU),
// unloaded with the object; that context must be current on the destroying thread.
class Module {
 public:
  static Result<Module> Load(const Cuda& cuda, const char* ptx);
  Module() = default;

  // A kernel of the module by its .entry name; valid while the module is.
  Result<CUfunction> Function(const char* name) const;

 private:
  LibHandle<Cuda, CUmodule, &CudaFunctions::ModuleUnload> module_;
};

// A timing event (cuEventCreate with default flags): recorded on a stream, it completes when the work queued
// before it has; two of them time that work on the device's clock.
class Event {
 public:
  static Result<Event> Create(const Cuda& cuda);
  Event() = default;

  Status Record(const Stream& stream) const;
  // Blocks until the work queued before the last Record has completed.
  Status Synchronize() const;
  // Milliseconds between two completed events (cuEventElapsedTime).
  static Result<float> ElapsedMs(const Event& start, const Event& end);

 private:
  LibHandle<Cuda, CUevent, &CudaFunctions::EventDestroy> event_;
};

}  // namespace feedrate::gpu
