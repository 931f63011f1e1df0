// PosixEngine implementation and the FileTable.
#include "loader/io/posix_engine.h"

#include <algorithm>
#include <cstdlib>

#include "loader/io/direct_io.h"
#include "loader/util/thread_policy.h"

namespace feedrate {

const char* FileOpenModeName(FileOpenMode m) {
  switch (m) {
    case FileOpenMode::kPerSample: return "per_sample";
    case FileOpenMode::kStream: return "per_file_visit";
    case FileOpenMode::kOnce: return "keep_open";
  }
  return "?";
}

Result<FileTable> FileTable::Create(PathList paths, FileOpenMode mode, int open_flags) {
  FileTable t;
  t.paths_ = std::move(paths);
  t.mode_ = mode;
  t.open_flags_ = open_flags;
  if (mode == FileOpenMode::kOnce) {
    t.fds_.resize(t.paths_.size());
    for (size_t i = 0; i < t.paths_.size(); ++i) {
      if (!t.paths_.held(i)) continue;  // a file this rank never reads
      FEEDRATE_ASSIGN_OR_RETURN(t.fds_[i], OpenForRead(t.paths_.c_str(i), open_flags));
    }
  }
  return t;
}

PosixEngine::PosixEngine(const FileTable& files, const EngineOptions& options)
    : files_(files), options_(options), requests_(options.queue_capacity) {
  options_.threads = std::max<size_t>(1, options_.threads);
  if (options_.odirect) options_.transfer_size = AlignUp(options_.transfer_size, options_.direct_align);
  buffers_.reserve(options_.threads);
  for (size_t i = 0; i < options_.threads; ++i) {
    buffers_.emplace_back(options_.transfer_size, std::max<size_t>(AlignedBuffer::kAlignment, options_.direct_align));
  }
  workers_.reserve(options_.threads);
  for (size_t i = 0; i < options_.threads; ++i) workers_.emplace_back([this, i] { Worker(i); });
}

PosixEngine::~PosixEngine() {
  requests_.Stop(workers_.size());
  for (auto& t : workers_) t.join();
}

void PosixEngine::Submit(std::span<const ReadRequest> requests) { requests_.Push(requests); }

void PosixEngine::Worker(size_t index) {
  ApplyIoThreadPolicy(options_.thread_policy);
  char* scratch = buffers_[index].data();
  FdCache fds(files_);
  for (;;) {
    ReadRequest r;
    if (!requests_.Pop(&r)) return;  // stopping
    uint64_t bytes = 0;
    const char* data = nullptr;
    if (r.extent.length == 0) {  // nothing to read (a Parquet row group's rows after its first): no open, no read
      r.target->OnComplete(r.tag, 0, Status::Ok(), r.dest);
      continue;
    }
    const int64_t t0 = options_.stats != nullptr ? NowNs() : 0;
    Status st = ReadExtent(r, scratch, options_.faults, &fds, &bytes, &data);
    if (options_.stats != nullptr && st.ok()) options_.stats->Record(index, bytes, NowNs() - t0);
    r.target->OnComplete(r.tag, bytes, st, st.ok() ? data : nullptr);
  }
}

Status PosixEngine::ReadExtent(const ReadRequest& r, char* scratch, FaultInjector* faults, FdCache* fds,
                               uint64_t* bytes, const char** data) {
  const char* path = files_.path(r.extent.file);
  const int fd = fds->Acquire(r.extent.file);
  if (fd < 0) return Status::Errno("cannot open " + std::string(path), errno);
  struct Giveback {
    FdCache* fds;
    uint32_t file;
    int fd;
    ~Giveback() { fds->Release(file, fd); }
  } giveback{fds, r.extent.file, fd};
  if (r.probe_residency) r.target->BeforeRead(r, fd);
  const bool whole = r.extent.length == kWholeFile;  // read to end of file (buffered only)
  const uint64_t end = whole ? UINT64_MAX : r.extent.offset + r.extent.length;
  // Buffered: exactly the extent. O_DIRECT: its aligned window (the extra bytes are read amplification).
  const DirectWindow w = options_.odirect && !whole ? WindowFor(r.extent.offset, r.extent.length, options_.direct_align)
                                                    : DirectWindow{r.extent.offset, end};
  uint64_t off = w.begin, device = 0;
  // A window that fits the scratch buffer is read into it in place (short reads continue after what came), so
  // the sample ends up whole there; larger ones without a destination cycle through it. A whole file stays in
  // place while it fits one transfer.
  const bool fits = w.end - w.begin <= options_.transfer_size;
  char* base = r.dest != nullptr ? r.dest : (fits || whole ? scratch : nullptr);
  while (off < end) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(options_.transfer_size, w.end - off));
    if (whole && base != nullptr) want = static_cast<size_t>(options_.transfer_size - (off - w.begin));
    if (whole && want == 0) {  // larger than one transfer: cycle through the scratch buffer from here on
      base = nullptr;
      want = static_cast<size_t>(options_.transfer_size);
    }
    char* dst = base != nullptr ? base + (off - w.begin) : scratch;
    ssize_t got = ::pread(fd, dst, want, static_cast<off_t>(off));
    int64_t n = got < 0 ? -errno : got;
    if (faults != nullptr) n = faults->OnRead(r.extent.file, off, want, n);
    if (n < 0) {
      if (n == -EINTR || n == -EAGAIN) {
        requeued_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      return Status::Errno(std::string(path) + ": read failed at offset " + std::to_string(off), static_cast<int>(-n));
    }
    if (n == 0 && whole) break;  // end of the file: the sample is all of it
    if (n > 0 && static_cast<size_t>(n) < want && off + static_cast<uint64_t>(n) < end && !whole) {
      requeued_.fetch_add(1, std::memory_order_relaxed);  // short read: the loop reads the remainder (a whole
                                                          // file's: its end, which the next read confirms)
    }
    off += static_cast<uint64_t>(n);
    device += static_cast<uint64_t>(n);
    // EOF before the extent's end; with O_DIRECT a read that stops off alignment can only be end of file.
    if (n == 0 || (options_.odirect && off < end && off % options_.direct_align != 0)) {
      return Status::Corruption(std::string(path) + ": file is truncated: sample extent ends at offset " + std::to_string(end) +
                                " but data ends at offset " + std::to_string(off));
    }
  }
  device_bytes_.fetch_add(device, std::memory_order_relaxed);
  *bytes = whole ? off - w.begin : r.extent.length;
  // The sample is whole in the destination, or in the scratch buffer when one transfer covered its window.
  if (base != nullptr) *data = base + (r.extent.offset - w.begin);
  return Status::Ok();
}

}  // namespace feedrate
