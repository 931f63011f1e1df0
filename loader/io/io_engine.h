// The I/O engine interface: asynchronous reads of sample extents, completed through a callback target.
// Engines: PosixEngine (thread pool + pread), UringEngine (io_uring), S3Engine (ranged GETs, loader/s3).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loader/io/fault_injection.h"
#include "loader/io/io_stats.h"
#include "loader/io/unique_fd.h"
#include "loader/util/path_list.h"
#include "loader/util/thread_policy.h"
#include "loader/status.h"
#include "loader/util/clock.h"

namespace feedrate {

// Where one sample's bytes live.
struct SampleExtent {
  uint32_t file = 0;    // index into the FileTable
  uint64_t offset = 0;
  uint64_t length = 0;  // kWholeFile: from offset 0 to the end of the file, its size learnt by reading it
};

// A whole file whose size was not looked up at setup (a million-file image dataset is indexed without opening a
// file): the engines read it to end of file, and the completion's `bytes` is what the file held. Buffered reads
// only; never coalesced, retained or checked in place beyond what one transfer holds.
inline constexpr uint64_t kWholeFile = UINT64_MAX;

struct ReadRequest;

// Receives completions; called on an engine thread, so it must be cheap and thread-safe.
class CompletionTarget {
 public:
  // `data` points at the sample's first byte when all of it sits in one buffer during this call (a destination
  // buffer, or a single transfer buffer the engine recycles afterwards), so it can be checked without a copy;
  // nullptr when the sample was spread over several recycled transfers or failed.
  virtual void OnComplete(uint64_t tag, uint64_t bytes, const Status& status, const char* data) = 0;
  // Called on the I/O thread for a request with `probe_residency` set, once its file is open (`fd`) and before
  // its first read is issued, so an instrument can look at the page cache outside the accelerator's timed wait.
  // File engines only (the S3 engine has no fd and never calls it). Must be cheap and thread-safe.
  virtual void BeforeRead(const ReadRequest& request, int fd) {
    (void)request;
    (void)fd;
  }

 protected:
  ~CompletionTarget() = default;
};

// One read. REQUIRES: `target` outlives the request (until its OnComplete returns); `dest`, when set, holds the
// extent's window: extent.length bytes, or with O_DIRECT the extent widened to direct_align on both sides
// (ResolvedEngine::MaxWindow), direct_align-aligned; the engine writes nothing else.
struct ReadRequest {
  SampleExtent extent;
  char* dest = nullptr;               // nullptr: read into the engine's recycled transfer buffers
  CompletionTarget* target = nullptr;
  uint64_t tag = 0;
  bool probe_residency = false;       // the engine calls target->BeforeRead first (a sampled residency probe)
  uint32_t lane = 0;                  // DlioEngine: the DataLoader worker (of one accelerator) that reads it
  uint32_t pass = 0;                  // DlioEngine streams: which pass over the files (a prefetcher's epoch)
  bool ends_batch = false;            // the last request of its batch (DlioEngine: the worker's collate follows it)
};

// One read(2) of DLIO's access pattern: `length` bytes asked at `offset` (fewer may come back at end of file).
struct AccessRead {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// A file stream's next read offset once the stream met the file's end (DlioEngine streams, PlanTfRecordStream).
inline constexpr uint64_t kStreamEnded = ~uint64_t{0};

// How reads get file descriptors.
enum class FileOpenMode {
  kPerSample,  // open and close the file for every sample read (DLIO's on_demand readers, PyTorch path)
  kStream,     // an I/O thread keeps its last file open while consecutive reads are from it (TensorFlow's
               // TFRecordDataset streams each file: one open per file visit, not per record)
  kOnce,       // every file opened once up front (feedrate.keep_files_open)
};
const char* FileOpenModeName(FileOpenMode m);

// The dataset's files and how they are opened. A rank's table holds the paths of the files it reads; the other
// indices have no path ("") and are never read (nor opened).
class FileTable {
 public:
  // `open_flags` are added to O_RDONLY|O_CLOEXEC for every open (O_DIRECT). kOnce opens every held file here.
  static Result<FileTable> Create(PathList paths, FileOpenMode mode, int open_flags = 0);
  static Result<FileTable> Create(const std::vector<std::string>& paths, FileOpenMode mode, int open_flags = 0) {
    return Create(PathList(paths), mode, open_flags);
  }
  static Result<FileTable> Create(const std::vector<std::string>& paths, bool keep_open, int open_flags = 0) {
    return Create(paths, keep_open ? FileOpenMode::kOnce : FileOpenMode::kPerSample, open_flags);
  }
  FileOpenMode mode() const { return mode_; }
  int open_flags() const { return open_flags_; }
  // File `file`'s path ("" when this table does not hold it); valid for the table's lifetime.
  const char* path(uint32_t file) const { return paths_.c_str(file); }
  const PathList& paths() const { return paths_; }
  size_t size() const { return paths_.size(); }
  bool keep_open() const { return mode_ == FileOpenMode::kOnce; }
  int open_fd(uint32_t file) const { return fds_.empty() ? -1 : fds_[file].get(); }

 private:
  PathList paths_;
  std::vector<UniqueFd> fds_;
  FileOpenMode mode_ = FileOpenMode::kPerSample;
  int open_flags_ = 0;
};

// One I/O thread's descriptor for a read: the table's (kOnce), a reused one (kStream: the thread's last file,
// kept while reads stay on it) or a fresh one closed after the read (kPerSample). Not thread-safe: one per thread.
class FdCache {
 public:
  explicit FdCache(const FileTable& files) : files_(files) {}
  // A descriptor for `file`, or -1 with errno set.
  int Acquire(uint32_t file) {
    if (int fd = files_.open_fd(file); fd >= 0) return fd;
    if (files_.mode() == FileOpenMode::kStream && cached_.get() >= 0 && cached_file_ == file) {
      int fd = cached_.release();
      return fd;
    }
    return ::open(files_.path(file), O_RDONLY | O_CLOEXEC | files_.open_flags());
  }
  // Gives back a descriptor from Acquire once its read is done.
  void Release(uint32_t file, int fd) {
    if (fd < 0 || files_.open_fd(file) == fd) return;
    if (files_.mode() == FileOpenMode::kStream) {
      cached_ = UniqueFd(fd);  // closes the previous one, if any
      cached_file_ = file;
      return;
    }
    ::close(fd);
  }

 private:
  const FileTable& files_;
  UniqueFd cached_;
  uint32_t cached_file_ = 0;
};

struct EngineOptions {
  size_t threads = 1;                // I/O threads
  uint64_t transfer_size = 1 << 20;  // bytes per read call; also the recycled buffer size
  size_t queue_capacity = 1024;      // max requests waiting (the prefetchers never exceed it)
  size_t queue_depth = 8;            // uring: reads in flight per thread (a sample's transfers run concurrently)
  bool odirect = false;              // O_DIRECT: aligned windows around each extent
  uint64_t direct_align = 4096;      // O_DIRECT offset/length/memory alignment (DirectIoAlignment)
  FaultInjector* faults = nullptr;   // --inject (fault_injection.h): applied to every read's result; not owned
  IoStats* stats = nullptr;          // live per-sample counts and latencies (one shard per I/O thread); not owned
  IoThreadPolicy thread_policy = IoThreadPolicy::kNormal;  // the I/O threads' scheduling (loader/util/thread_policy.h)
};

// Counters every engine keeps (relaxed atomics, summed at the end of a run).
struct EngineCounters {
  uint64_t device_bytes = 0;   // bytes the engine asked the kernel for (O_DIRECT windows included)
  uint64_t requeued = 0;       // short reads and -EAGAIN resubmitted for the remainder
  uint64_t sample_work_ns = 0; // the I/O threads' time in per-sample work (DlioEngine's SampleWork: a decode)
  uint64_t collate_ns = 0;     // DlioEngine: the lanes' time in their workers' batch collates, and how many
  uint64_t collates = 0;
};

// REQUIRES: the FileTable and the options' faults and stats outlive the engine; the destructor joins the I/O
// threads, so every submitted request completes (OnComplete called) before it returns, except a read the
// kernel never returns (a lost read: its owner releases the engine instead, docs/faults.md).
class IoEngine {
 public:
  virtual ~IoEngine() = default;
  virtual const char* name() const = 0;
  // Queues reads, in order, with one wake-up of the I/O threads for the whole span (a prefetcher queues a batch
  // at a time); thread-safe; never blocks as long as outstanding requests stay within queue_capacity (the caller's
  // bound: EngineOptions::queue_capacity). OnComplete runs on an I/O thread, once per request.
  virtual void Submit(std::span<const ReadRequest> requests) = 0;
  // One read.
  void Submit(const ReadRequest& request) { Submit(std::span<const ReadRequest>(&request, 1)); }
  // Bytes of I/O buffer memory the engine holds.
  virtual uint64_t buffer_bytes() const = 0;
  virtual EngineCounters counters() const = 0;
};

}  // namespace feedrate
