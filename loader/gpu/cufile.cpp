// CuFile::Open, the cuFile ABI's layout checks, and the RAII owners of handles, buffers and batches.
#include "loader/gpu/cufile.h"

#include <cerrno>
#include <cstring>
#include <utility>

namespace feedrate::gpu {

// The layout of cufile.h on LP64 (x86-64, aarch64): a mismatch would hand cuFile garbage, so it fails the build.
static_assert(sizeof(CUfileError_t) == 8);
static_assert(sizeof(CUfileDescr_t) == 24 && offsetof(CUfileDescr_t, handle) == 8 && offsetof(CUfileDescr_t, fs_ops) == 16);
static_assert(sizeof(CUfileIOParams_t) == 64);
static_assert(offsetof(CUfileIOParams_t, u) == 8 && offsetof(CUfileIOParams_t, fh) == 40 &&
              offsetof(CUfileIOParams_t, opcode) == 48 && offsetof(CUfileIOParams_t, cookie) == 56);
static_assert(sizeof(CUfileIOEvents_t) == 24 && offsetof(CUfileIOEvents_t, status) == 8 &&
              offsetof(CUfileIOEvents_t, ret) == 16);
static_assert(sizeof(CUfileDrvProps_t) == 56 && offsetof(CUfileDrvProps_t, nvfs.max_direct_io_size) == 16 &&
              offsetof(CUfileDrvProps_t, nvfs.dcontrolflags) == 28 && offsetof(CUfileDrvProps_t, fflags) == 32 &&
              offsetof(CUfileDrvProps_t, max_batch_io_timeout_msecs) == 52);
static_assert(sizeof(off_t) == 8, "cuFile's off_t is 64 bits: build with _FILE_OFFSET_BITS=64 on 32-bit hosts");

namespace {

const char* CuFileErrorName(int err) {
  switch (err) {
    case 5001: return "CU_FILE_DRIVER_NOT_INITIALIZED (the nvidia-fs module is not loaded)";
    case 5002: return "CU_FILE_DRIVER_INVALID_PROPS";
    case 5004: return "CU_FILE_DRIVER_VERSION_MISMATCH";
    case 5007: return "CU_FILE_PLATFORM_NOT_SUPPORTED";
    case 5008: return "CU_FILE_IO_NOT_SUPPORTED (the file system does not take GPUDirect reads)";
    case 5009: return "CU_FILE_DEVICE_NOT_SUPPORTED";
    case 5010: return "CU_FILE_NVFS_DRIVER_ERROR";
    case 5011: return "CU_FILE_CUDA_DRIVER_ERROR";
    case 5012: return "CU_FILE_CUDA_POINTER_INVALID";
    case 5018: return "CU_FILE_INVALID_FILE_TYPE";
    case 5019: return "CU_FILE_INVALID_FILE_OPEN_FLAG";
    case 5020: return "CU_FILE_DIO_NOT_SET (the file is not open with O_DIRECT)";
    case 5022: return "CU_FILE_INVALID_VALUE";
    case 5023: return "CU_FILE_MEMORY_ALREADY_REGISTERED";
    case 5024: return "CU_FILE_MEMORY_NOT_REGISTERED";
    case 5025: return "CU_FILE_PERMISSION_DENIED";
    case 5027: return "CU_FILE_HANDLE_NOT_REGISTERED";
    case 5029: return "CU_FILE_DEVICE_NOT_FOUND";
    case 5030: return "CU_FILE_INTERNAL_ERROR";
    case 5035: return "CU_FILE_BATCH_SUBMIT_FAILED";
    case 5036: return "CU_FILE_GPU_MEMORY_PINNING_FAILED";
    case 5037: return "CU_FILE_BATCH_FULL";
    default: return "cuFile error";
  }
}

}  // namespace

std::string CuFileErrorText(const Cuda& cuda, CUfileError_t e) {
  std::string text = std::string(CuFileErrorName(e.err)) + " (" + std::to_string(e.err) + ")";
  if (e.err == kCuFileCudaDriverError) text += ": " + cuda.Check(e.cu_err, "CUDA").ToString();
  return text;
}

Result<std::unique_ptr<CuFile>> CuFile::Open(const Cuda& cuda) {
  std::unique_ptr<CuFile> f(new CuFile());
  f->cuda_ = &cuda;
  FEEDRATE_ASSIGN_OR_RETURN(f->lib_, DlLibrary::Open("libcufile.so.0", "FEEDRATE_LIBCUFILE"));
  FEEDRATE_RETURN_IF_ERROR(f->BindAll());
  FEEDRATE_RETURN_IF_ERROR(f->Check(f->fn_.DriverOpen(), "cuFileDriverOpen"));
  f->open_ = true;
  f->ReadDriverInfo();
  return f;
}

void CuFile::ReadDriverInfo() {
  if (fn_.DriverGetProperties == nullptr) return;
  CUfileDrvProps_t p{};
  if (fn_.DriverGetProperties(&p).err != kCuFileSuccess) return;
  info_.known = true;
  info_.nvfs_major = p.nvfs.major_version;
  info_.nvfs_minor = p.nvfs.minor_version;
  info_.max_direct_io_bytes = p.nvfs.max_direct_io_size;
  info_.file_systems = p.nvfs.dstatusflags;
  info_.compat_allowed = (p.nvfs.dcontrolflags & (1u << 1)) != 0;  // CU_FILE_ALLOW_COMPAT_MODE
}

std::string CuFileDriverInfo::Describe() const {
  if (!known) return "path unknown (the library has no cuFileDriverGetProperties)";
  if (!gpudirect()) {
    return "cuFile compatibility mode (nvidia-fs not loaded: cuFile reads with POSIX I/O into its own host bounce "
           "buffers, then copies to the GPU)";
  }
  // Bit positions of CUfileDriverStatusFlags_t (cufile.h); 10 is reserved, 11 deprecated.
  static constexpr std::pair<int, const char*> kFs[] = {{0, "Lustre"}, {1, "WekaFS"}, {2, "NFS"}, {3, "GPFS"},
                                                        {4, "NVMe"}, {5, "NVMe-oF"}, {6, "SCSI"}, {7, "ScaleFlux CSD"},
                                                        {8, "NVMesh"}, {9, "BeeGFS"}, {12, "ScateFS"}, {13, "VirtioFS"}};
  std::string fs;
  for (const auto& [bit, name] : kFs) {
    if ((file_systems >> bit) & 1u) fs += (fs.empty() ? "" : ", ") + std::string(name);
  }
  return "GPUDirect (nvidia-fs " + std::to_string(nvfs_major) + "." + std::to_string(nvfs_minor) +
         "; serves: " + (fs.empty() ? "none listed" : fs) + (compat_allowed ? "; compat mode allowed for the rest)" : ")");
}

Status CuFile::BindAll() {
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DriverOpen, "cuFileDriverOpen"));
  if (!lib_.Bind(&fn_.DriverClose, "cuFileDriverClose_v2").ok()) {
    FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.DriverClose, "cuFileDriverClose"));
  }
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.HandleRegister, "cuFileHandleRegister"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.HandleDeregister, "cuFileHandleDeregister"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.BufRegister, "cuFileBufRegister"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.BufDeregister, "cuFileBufDeregister"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.Read, "cuFileRead"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.BatchIOSetUp, "cuFileBatchIOSetUp"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.BatchIOSubmit, "cuFileBatchIOSubmit"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.BatchIOGetStatus, "cuFileBatchIOGetStatus"));
  FEEDRATE_RETURN_IF_ERROR(lib_.Bind(&fn_.BatchIODestroy, "cuFileBatchIODestroy"));
  if (!lib_.Bind(&fn_.DriverGetProperties, "cuFileDriverGetProperties").ok()) fn_.DriverGetProperties = nullptr;
  if (!lib_.Bind(&fn_.ReadAsync, "cuFileReadAsync").ok() || !lib_.Bind(&fn_.StreamRegister, "cuFileStreamRegister").ok() ||
      !lib_.Bind(&fn_.StreamDeregister, "cuFileStreamDeregister").ok()) {
    fn_.ReadAsync = nullptr;
    fn_.StreamRegister = nullptr;
    fn_.StreamDeregister = nullptr;
  }
  return Status::Ok();
}

CuFile::~CuFile() {
  if (open_) (void)fn_.DriverClose();
}

Status CuFile::Check(CUfileError_t e, const std::string& what) const {
  if (e.err == kCuFileSuccess) return Status::Ok();
  return Status::IoError(what + ": " + CuFileErrorText(*cuda_, e));
}

Result<CuFileHandle> CuFileHandle::Register(const CuFile& cufile, int fd, const std::string& path) {
  CUfileDescr_t d{};
  d.type = kCuFileHandleTypeOpaqueFd;
  d.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  FEEDRATE_RETURN_IF_ERROR(cufile.Check(cufile.fn().HandleRegister(&fh, &d), path + ": cuFileHandleRegister"));
  CuFileHandle h;
  h.fh_ = {&cufile, fh};
  h.path_ = path;
  return h;
}

Result<size_t> CuFileHandle::Read(void* base, size_t size, uint64_t file_offset, uint64_t buf_offset) const {
  const CuFile& cufile = *fh_.lib();
  const ssize_t n = cufile.fn().Read(fh_.get(), base, size, static_cast<off_t>(file_offset), static_cast<off_t>(buf_offset));
  if (n >= 0) return static_cast<size_t>(n);
  const std::string where = path_ + ": cuFileRead of " + std::to_string(size) + " bytes at offset " + std::to_string(file_offset);
  // -1: a file system error in errno; otherwise the negated cuFile error.
  if (n == -1) return Status::Errno(where, errno);
  return Status::IoError(where + ": " + CuFileErrorText(cufile.cuda(), {static_cast<int>(-n), 0}));
}

Result<CuFileBuffer> CuFileBuffer::Register(const CuFile& cufile, void* base, size_t bytes) {
  FEEDRATE_RETURN_IF_ERROR(cufile.Check(cufile.fn().BufRegister(base, bytes, 0),
                                        "cuFileBufRegister of " + std::to_string(bytes) + " bytes"));
  CuFileBuffer b;
  b.base_ = {&cufile, base};
  return b;
}

Result<CuFileStream> CuFileStream::Register(const CuFile& cufile, CUstream stream) {
  if (cufile.fn().StreamRegister == nullptr) {
    return Status::Unsupported(cufile.library() + " has no cuFileReadAsync/cuFileStreamRegister (GDS 1.7, CUDA 12.2 or later)");
  }
  FEEDRATE_RETURN_IF_ERROR(cufile.Check(cufile.fn().StreamRegister(stream, 0), "cuFileStreamRegister"));
  CuFileStream s;
  s.stream_ = {&cufile, stream};
  return s;
}

Result<CuFileBatch> CuFileBatch::SetUp(const CuFile& cufile, unsigned capacity) {
  CUfileBatchHandle_t h = nullptr;
  FEEDRATE_RETURN_IF_ERROR(cufile.Check(cufile.fn().BatchIOSetUp(&h, capacity),
                                        "cuFileBatchIOSetUp of " + std::to_string(capacity) + " requests"));
  CuFileBatch b;
  b.batch_ = {&cufile, h};
  b.capacity_ = capacity;
  return b;
}

Status CuFileBatch::Submit(CUfileIOParams_t* params, unsigned n) const {
  const CuFile& cufile = *batch_.lib();
  return cufile.Check(cufile.fn().BatchIOSubmit(batch_.get(), n, params, 0), "cuFileBatchIOSubmit of " + std::to_string(n));
}

Result<unsigned> CuFileBatch::Wait(unsigned min_nr, CUfileIOEvents_t* events, unsigned max_events) const {
  const CuFile& cufile = *batch_.lib();
  unsigned nr = max_events;
  FEEDRATE_RETURN_IF_ERROR(cufile.Check(cufile.fn().BatchIOGetStatus(batch_.get(), min_nr, &nr, events, nullptr),
                                        "cuFileBatchIOGetStatus"));
  return nr;
}

}  // namespace feedrate::gpu
