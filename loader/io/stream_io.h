// Whole-file streaming writes and reads with several requests in flight (io_uring, or pread/pwrite when a ring
// cannot be set up), from a few reused aligned buffers: what checkpoint emulation needs to write and read back
// files of many GiB per rank in bounded memory, with a real fsync and O_DIRECT when asked.
#pragma once

#include <liburing.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/io/fault_injection.h"
#include "loader/io/safe_file.h"
#include "loader/io/unique_fd.h"
#include "loader/status.h"

namespace feedrate {

struct StreamOptions {
  size_t queue_depth = 8;          // requests in flight
  uint64_t block = 4 << 20;        // bytes per request (and per buffer)
  bool odirect = false;
  bool uring = true;               // false: synchronous pread/pwrite, one request at a time
  FaultInjector* faults = nullptr; // write and read faults (OnWrite, OnReadPath), not owned
  const std::atomic<bool>* stop = nullptr;  // when set, a transfer stops before its next request ("interrupted")
};

class StreamIo {
 public:
  // Sets up the buffers (queue_depth x block, 4 KiB aligned) and the ring; falls back to pread/pwrite, saying why
  // in description(), when io_uring is unavailable.
  static Result<std::unique_ptr<StreamIo>> Create(const StreamOptions& options);
  ~StreamIo();
  StreamIo(const StreamIo&) = delete;
  StreamIo& operator=(const StreamIo&) = delete;

  // Writes `bytes` to `path` through the safe writer (safe_file.h: unnamed or an unpredictable hidden name) and gives
  // it its name whole; with `fsync`, fsync()s
  // the file before the rename (the data is on the device when this returns). `content_key` != 0 fills each block
  // with the verifiable pattern (content_pattern.h) for that key, else the buffers' pseudo-random bytes are reused.
  // On any error the temporary file is removed and nothing has the final name; the error names path, offset, errno.
  Status WriteFile(const std::string& path, uint64_t bytes, bool fsync, uint64_t content_key = 0);

  // WriteFile in two halves, so a file's fsync can run (on another thread) while the next file is written:
  // WriteData writes the bytes under the temporary name; Commit fsyncs (when asked), closes and renames. A pending
  // file dropped without Commit removes its temporary file. Commit may run concurrently with WriteData/ReadFile.
  class PendingFile {
   public:
    PendingFile() = default;
    PendingFile(PendingFile&&) noexcept = default;
    PendingFile& operator=(PendingFile&&) noexcept = default;
    ~PendingFile() = default;  // an uncommitted file is discarded (SafeFile)

   private:
    friend class StreamIo;
    std::optional<SafeFile> file_;
    uint64_t bytes_ = 0;
  };
  Result<PendingFile> WriteData(const std::string& path, uint64_t bytes, uint64_t content_key = 0);
  Status Commit(PendingFile file, bool fsync);
  // Reads all of `path`, which must have `bytes` bytes; with `content_key` != 0 every byte is compared with the
  // pattern (a mismatch names path and offset).
  Status ReadFile(const std::string& path, uint64_t bytes, uint64_t content_key = 0);

  uint64_t fsyncs() const { return fsyncs_.load(); }
  uint64_t bytes_written() const { return bytes_written_.load(); }
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t buffer_bytes() const { return memory_.size(); }
  const std::string& description() const { return description_; }

 private:
  explicit StreamIo(const StreamOptions& options);
  // Runs every block of [0, total) through the ring or the synchronous loop (bytes past `need` may come back
  // short: end of file); the Transfer's fill writes block i's buffer before a write, its check looks at it after a
  // read (called once per block of up to opt_.block bytes, not per request).
 public:
  using BlockFill = std::function<void(uint64_t block, char* buf, uint64_t len)>;
  using BlockCheck = std::function<Status(uint64_t block, const char* buf, uint64_t len)>;
  struct Transfer;  // stream_io.cpp

 private:
  Status Stream(const Transfer& t);
  Status StreamSync(const Transfer& t);
  Status StreamRing(const Transfer& t);

  StreamOptions opt_;
  AlignedBuffer memory_;
  io_uring ring_{};
  bool ring_ready_ = false;
  std::string description_;
  std::atomic<uint64_t> fsyncs_{0}, bytes_written_{0};  // (Commit may run on another thread)
  uint64_t bytes_read_ = 0;
};

}  // namespace feedrate
