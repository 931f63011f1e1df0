// GPUDirect Storage: libcufile.so.0 loaded at run time, the cuFile ABI Feedrate uses, and RAII owners for the driver
// session, registered file handles, registered device buffers and batches. The types follow cufile.h of GDS 1.x
// (CUDA 12.x; CUfileIOParams_t's layout has not changed since the batch API appeared in CUDA 11.6/GDS 1.2):
// every size and offset is pinned by a static_assert in cufile.cpp, so a layout change fails the build, not a read.
#pragma once

#include <sys/types.h>

#include <ctime>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "loader/gpu/cuda_driver.h"
#include "loader/gpu/dl_library.h"
#include "loader/status.h"

namespace feedrate::gpu {

// --- the cuFile ABI (cufile.h) ---
inline constexpr int kCuFileSuccess = 0;
inline constexpr int kCuFileBaseError = 5000;                  // CUFILEOP_BASE_ERR
inline constexpr int kCuFileDriverNotInitialized = 5001;      // nvidia-fs not loaded (and no compat mode)
inline constexpr int kCuFileCudaDriverError = 5011;           // see cu_err
inline constexpr int kCuFileHandleTypeOpaqueFd = 1;           // CU_FILE_HANDLE_TYPE_OPAQUE_FD
inline constexpr int kCuFileBatchMode = 1;                    // CUFILE_BATCH
inline constexpr int kCuFileRead = 0;                         // CUFILE_READ
inline constexpr int kCuFileStatusWaiting = 0x01, kCuFileStatusPending = 0x02, kCuFileStatusInvalid = 0x04,
                     kCuFileStatusCanceled = 0x08, kCuFileStatusComplete = 0x10, kCuFileStatusTimeout = 0x20,
                     kCuFileStatusFailed = 0x40;

struct CUfileError_t {
  int err;          // CUfileOpError: 0, or 5000 + a small number
  CUresult cu_err;  // the CUDA driver's error when err is CU_FILE_CUDA_DRIVER_ERROR
};
struct CUfileDescr_t {
  int type;  // CUfileFileHandleType
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;  // const CUfileFSOps_t*: nullptr for a kernel file system
};
using CUfileHandle_t = void*;
using CUfileBatchHandle_t = void*;
struct CUfileIOParams_t {
  int mode;  // CUfileBatchMode_t
  union {
    struct {
      void* devPtr_base;
      off_t file_offset;
      off_t devPtr_offset;
      size_t size;
    } batch;
  } u;
  CUfileHandle_t fh;
  int opcode;  // CUfileOpcode_t
  void* cookie;
};
struct CUfileIOEvents_t {
  void* cookie;
  int status;  // CUfileStatus_t
  size_t ret;  // bytes moved, or a negative error
};

// cuFileDriverGetProperties' answer; the flag fields are bit sets indexed by cufile.h's CUfileDriverStatusFlags_t
// (dstatusflags: file systems nvidia-fs serves), CUfileDriverControlFlags_t (dcontrolflags: bit 1 = compat mode
// allowed) and CUfileFeatureFlags_t (fflags: bit 1 = batch API).
struct CUfileDrvProps_t {
  struct {
    unsigned int major_version;  // nvidia-fs's version; 0.0 when the module is not loaded (compat mode)
    unsigned int minor_version;
    size_t poll_thresh_size;
    size_t max_direct_io_size;
    unsigned int dstatusflags;
    unsigned int dcontrolflags;
  } nvfs;
  unsigned int fflags;
  unsigned int max_device_cache_size;
  unsigned int per_buffer_cache_size;
  unsigned int max_device_pinned_mem_size;
  unsigned int max_batch_io_size;
  unsigned int max_batch_io_timeout_msecs;
};

struct CuFileFunctions {
  CUfileError_t (*DriverOpen)();
  CUfileError_t (*DriverClose)();  // cuFileDriverClose_v2 where exported (reference-counted), else cuFileDriverClose
  CUfileError_t (*HandleRegister)(CUfileHandle_t* fh, CUfileDescr_t* descr);
  void (*HandleDeregister)(CUfileHandle_t fh);
  CUfileError_t (*BufRegister)(const void* base, size_t bytes, int flags);
  CUfileError_t (*BufDeregister)(const void* base);
  ssize_t (*Read)(CUfileHandle_t fh, void* base, size_t size, off_t file_offset, off_t buf_offset);
  CUfileError_t (*BatchIOSetUp)(CUfileBatchHandle_t* batch, unsigned max_requests);
  CUfileError_t (*BatchIOSubmit)(CUfileBatchHandle_t batch, unsigned n, CUfileIOParams_t* params, unsigned flags);
  CUfileError_t (*BatchIOGetStatus)(CUfileBatchHandle_t batch, unsigned min_nr, unsigned* nr, CUfileIOEvents_t* events,
                                    struct timespec* timeout);
  void (*BatchIODestroy)(CUfileBatchHandle_t batch);
  CUfileError_t (*DriverGetProperties)(CUfileDrvProps_t* props);  // optional: nullptr where not exported
  // The stream-ordered API (GDS 1.7, CUDA 12.2): optional, nullptr where not exported. ReadAsync reads *size_p bytes
  // at *file_offset_p into base + *buf_offset_p when the stream reaches it and stores the result in *bytes_read_p;
  // the four words are read and written then, so they must stay put until the stream has passed the read.
  CUfileError_t (*ReadAsync)(CUfileHandle_t fh, void* base, size_t* size_p, off_t* file_offset_p, off_t* buf_offset_p,
                             ssize_t* bytes_read_p, CUstream stream);
  CUfileError_t (*StreamRegister)(CUstream stream, unsigned flags);
  CUfileError_t (*StreamDeregister)(CUstream stream);
};

// What serves cuFile's reads on this host, from the driver's properties: GPUDirect (nvidia-fs moves the data from
// storage into GPU memory) or cuFile's compatibility mode (no nvidia-fs: cuFile reads with POSIX I/O into its own
// bounce buffers in host memory, then copies to the GPU), or unknown (the library has no
// cuFileDriverGetProperties). Per file, cuFile may still fall back to compat mode on a file system nvidia-fs does not
// serve (dstatusflags lists those it does).
struct CuFileDriverInfo {
  bool known = false;
  unsigned nvfs_major = 0, nvfs_minor = 0;
  uint64_t max_direct_io_bytes = 0;
  unsigned file_systems = 0;  // nvfs.dstatusflags
  bool compat_allowed = false;
  bool gpudirect() const { return known && (nvfs_major > 0 || nvfs_minor > 0); }
  // One line, e.g. "GPUDirect (nvidia-fs 2.17; NVMe, NFS)" or "cuFile compatibility mode (nvidia-fs not loaded: ...)".
  std::string Describe() const;
};

// "CU_FILE_DRIVER_NOT_INITIALIZED (5001)", or the CUDA error inside a CU_FILE_CUDA_DRIVER_ERROR.
std::string CuFileErrorText(const Cuda& cuda, CUfileError_t e);

// The library and an open driver session (cuFileDriverOpen .. cuFileDriverClose). The Cuda object outlives it.
class CuFile {
 public:
  // Loads libcufile.so.0 ($FEEDRATE_LIBCUFILE overrides the path) and opens the driver. Errors, one line each:
  // NotFound (no GDS library), Unsupported (an entry point missing), IoError naming cuFile's error (the
  // nvidia-fs module not loaded and compat mode off, ...).
  static Result<std::unique_ptr<CuFile>> Open(const Cuda& cuda);
  ~CuFile();
  CuFile(const CuFile&) = delete;
  CuFile& operator=(const CuFile&) = delete;

  const CuFileFunctions& fn() const { return fn_; }
  const Cuda& cuda() const { return *cuda_; }
  const std::string& library() const { return lib_.name(); }
  // The driver's properties (cuFileDriverGetProperties), read once at Open.
  const CuFileDriverInfo& driver_info() const { return info_; }
  // OK for CU_FILE_SUCCESS; else IoError "<what>: <CuFileErrorText>".
  Status Check(CUfileError_t e, const std::string& what) const;

 private:
  CuFile() = default;
  Status BindAll();
  void ReadDriverInfo();

  const Cuda* cuda_ = nullptr;
  DlLibrary lib_;
  CuFileFunctions fn_{};
  CuFileDriverInfo info_;
  bool open_ = false;
};

// A file descriptor registered with cuFile (opened O_DIRECT for true GDS); deregistered with the object. The fd
// stays the caller's and outlives the registration.
class CuFileHandle {
 public:
  static Result<CuFileHandle> Register(const CuFile& cufile, int fd, const std::string& path);
  CuFileHandle() = default;

  CUfileHandle_t get() const { return fh_.get(); }
  // Reads `size` bytes at `file_offset` into device memory base + buf_offset; returns the bytes read (short at the
  // end of the file). IoError names the path, the offset and cuFile's or the file system's error.
  Result<size_t> Read(void* base, size_t size, uint64_t file_offset, uint64_t buf_offset) const;

 private:
  LibHandle<CuFile, CUfileHandle_t, &CuFileFunctions::HandleDeregister> fh_;
  std::string path_;
};

// Device memory registered for DMA by cuFile (pinned in the GPU's BAR), deregistered with the object.
class CuFileBuffer {
 public:
  static Result<CuFileBuffer> Register(const CuFile& cufile, void* base, size_t bytes);
  CuFileBuffer() = default;

 private:
  LibHandle<CuFile, const void*, &CuFileFunctions::BufDeregister> base_;
};

// A CUDA stream registered with cuFile for cuFileReadAsync (cuFileStreamRegister .. cuFileStreamDeregister); the
// stream outlives the registration. Errors: Unsupported when the library has no stream API (before GDS 1.7).
class CuFileStream {
 public:
  static Result<CuFileStream> Register(const CuFile& cufile, CUstream stream);
  CuFileStream() = default;

 private:
  LibHandle<CuFile, CUstream, &CuFileFunctions::StreamDeregister> stream_;
};

// A cuFile batch of up to `capacity` reads in flight (cuFileBatchIOSetUp .. cuFileBatchIODestroy).
class CuFileBatch {
 public:
  static Result<CuFileBatch> SetUp(const CuFile& cufile, unsigned capacity);
  CuFileBatch() = default;

  unsigned capacity() const { return capacity_; }
  // Submits params[0..n) (each mode kCuFileBatchMode, opcode kCuFileRead, a cookie that identifies it).
  Status Submit(CUfileIOParams_t* params, unsigned n) const;
  // Waits until at least min_nr of the submitted requests completed; fills events and returns how many it filled.
  Result<unsigned> Wait(unsigned min_nr, CUfileIOEvents_t* events, unsigned max_events) const;

 private:
  LibHandle<CuFile, CUfileBatchHandle_t, &CuFileFunctions::BatchIODestroy> batch_;
  unsigned capacity_ = 0;
};

}  // namespace feedrate::gpu
