// CuFileEngine: cuFile handles per file or per open, and each sample's aligned window read into device memory.
#include "loader/gpu/cufile_engine.h"

#include <algorithm>
#include <cerrno>
#include <string>

#include "loader/io/direct_io.h"
#include "loader/util/thread_policy.h"

namespace feedrate::gpu {

CuFileEngine::CuFileEngine(const CuFile& cufile, const FileTable& files, const EngineOptions& options,
                           std::vector<DeviceRegion> regions)
    : cufile_(cufile), files_(files), options_(options), regions_(std::move(regions)),
      requests_(options.queue_capacity) {
  options_.threads = std::max<size_t>(1, options_.threads);
  options_.transfer_size = AlignUp(options_.transfer_size, options_.direct_align);
  std::sort(regions_.begin(), regions_.end(), [](const DeviceRegion& a, const DeviceRegion& b) { return a.base < b.base; });
}

Result<std::unique_ptr<CuFileEngine>> CuFileEngine::Create(const CuFile& cufile, const FileTable& files,
                                                          const EngineOptions& options, std::vector<DeviceRegion> regions) {
  if ((files.open_flags() & O_DIRECT) == 0) {
    return Status::InvalidArgument("cuFile reads need the dataset's files opened with O_DIRECT (reader.odirect)");
  }
  std::unique_ptr<CuFileEngine> e(new CuFileEngine(cufile, files, options, std::move(regions)));
  if (files.keep_open()) {  // one registration per file, shared by the I/O threads
    e->kept_.reserve(files.size());
    for (uint32_t f = 0; f < files.size(); ++f) {
      FEEDRATE_ASSIGN_OR_RETURN(auto h, CuFileHandle::Register(cufile, files.open_fd(f), files.path(f)));
      e->kept_.push_back(std::move(h));
    }
  }
  e->Start();
  return e;
}

void CuFileEngine::Start() {
  workers_.reserve(options_.threads);
  for (size_t i = 0; i < options_.threads; ++i) workers_.emplace_back([this, i] { Worker(i); });
}

CuFileEngine::~CuFileEngine() {
  requests_.Stop(workers_.size());
  for (auto& t : workers_) t.join();
}

void CuFileEngine::Submit(std::span<const ReadRequest> requests) { requests_.Push(requests); }

void CuFileEngine::Worker(size_t index) {
  ApplyIoThreadPolicy(options_.thread_policy);
  FdCache fds(files_);
  ThreadHandle cached;
  for (;;) {
    ReadRequest r;
    if (!requests_.Pop(&r)) return;  // stopping
    uint64_t bytes = 0;
    const int64_t t0 = options_.stats != nullptr ? NowNs() : 0;
    Status st = ReadExtent(r, &fds, &cached, &bytes);
    if (options_.stats != nullptr && st.ok() && r.extent.length != 0) options_.stats->Record(index, bytes, NowNs() - t0);
    r.target->OnComplete(r.tag, bytes, st, nullptr);
  }
}

const DeviceRegion* CuFileEngine::RegionOf(const char* dest, uint64_t bytes) const {
  auto it = std::upper_bound(regions_.begin(), regions_.end(), dest,
                             [](const char* p, const DeviceRegion& r) { return p < r.base; });
  if (it == regions_.begin()) return nullptr;
  --it;
  const uint64_t at = static_cast<uint64_t>(dest - it->base);
  return at <= it->bytes && bytes <= it->bytes - at ? &*it : nullptr;
}

// A table that keeps files open has a handle per file; otherwise the thread's last handle serves while the
// descriptor is the same open file (kStream), and is replaced (deregistered while its fd is still open) when not.
Result<CUfileHandle_t> CuFileEngine::HandleFor(uint32_t file, int fd, ThreadHandle* cached) {
  if (!kept_.empty() && files_.open_fd(file) == fd) return kept_[file].get();
  if (cached->handle.get() != nullptr && cached->fd == fd && cached->file == file) return cached->handle.get();
  cached->handle = CuFileHandle();
  FEEDRATE_ASSIGN_OR_RETURN(cached->handle, CuFileHandle::Register(cufile_, fd, files_.path(file)));
  cached->file = file;
  cached->fd = fd;
  return cached->handle.get();
}

Status CuFileEngine::ReadExtent(const ReadRequest& r, FdCache* fds, ThreadHandle* cached, uint64_t* bytes) {
  const char* path = files_.path(r.extent.file);
  if (r.extent.length == kWholeFile) return Status::InvalidArgument(std::string(path) + ": cuFile reads need each sample's size");
  if (r.extent.length == 0) {  // nothing to read (a Parquet row group's rows after its first): no open, no read
    *bytes = 0;
    return Status::Ok();
  }
  const int fd = fds->Acquire(r.extent.file);
  if (fd < 0) return Status::Errno("cannot open " + std::string(path), errno);
  struct Giveback {  // a per-sample open's handle goes before its descriptor is closed
    FdCache* fds;
    ThreadHandle* cached;
    uint32_t file;
    int fd;
    bool per_sample;
    ~Giveback() {
      if (per_sample && cached->fd == fd) {
        cached->handle = CuFileHandle();
        cached->fd = -1;
      }
      fds->Release(file, fd);
    }
  } giveback{fds, cached, r.extent.file, fd, files_.mode() == FileOpenMode::kPerSample};
  if (r.probe_residency) r.target->BeforeRead(r, fd);
  FEEDRATE_ASSIGN_OR_RETURN(CUfileHandle_t fh, HandleFor(r.extent.file, fd, cached));
  const uint64_t end = r.extent.offset + r.extent.length;
  const DirectWindow w = WindowFor(r.extent.offset, r.extent.length, options_.direct_align);
  const DeviceRegion* region = r.dest != nullptr ? RegionOf(r.dest, w.end - w.begin) : nullptr;
  if (region == nullptr) return Status::InvalidArgument(std::string(path) + ": a cuFile read's destination is not in registered device memory");
  if (region->context != nullptr && region->context != cached->context) {  // once per GPU switch, not per read
    FEEDRATE_RETURN_IF_ERROR(region->context->MakeCurrent());
    cached->context = region->context;
  }
  const off_t buf0 = static_cast<off_t>(r.dest - region->base);
  uint64_t off = w.begin, device = 0;
  while (off < end) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(options_.transfer_size, w.end - off));
    const ssize_t got = cufile_.fn().Read(fh, region->base, want, static_cast<off_t>(off), buf0 + static_cast<off_t>(off - w.begin));
    if (got < -1) {  // a negated cuFile error (-1 is a file system error in errno)
      return Status::IoError(std::string(path) + ": cuFileRead at offset " + std::to_string(off) + ": " +
                             CuFileErrorText(cufile_.cuda(), {static_cast<int>(-got), 0}));
    }
    int64_t n = got < 0 ? -errno : got;
    if (options_.faults != nullptr) n = options_.faults->OnRead(r.extent.file, off, want, n);
    if (n < 0) {
      if (n == -EINTR || n == -EAGAIN) {
        requeued_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      return Status::Errno(std::string(path) + ": cuFileRead failed at offset " + std::to_string(off), static_cast<int>(-n));
    }
    if (n > 0 && static_cast<size_t>(n) < want && off + static_cast<uint64_t>(n) < end) {
      requeued_.fetch_add(1, std::memory_order_relaxed);  // short read: the loop reads the remainder
    }
    off += static_cast<uint64_t>(n);
    device += static_cast<uint64_t>(n);
    // End of file before the extent's end; a read that stops off alignment can only be end of file.
    if (n == 0 || (off < end && off % options_.direct_align != 0)) {
      return Status::Corruption(std::string(path) + ": file is truncated: sample extent ends at offset " + std::to_string(end) +
                                " but data ends at offset " + std::to_string(off));
    }
  }
  device_bytes_.fetch_add(device, std::memory_order_relaxed);
  *bytes = r.extent.length;
  return Status::Ok();
}

}  // namespace feedrate::gpu
