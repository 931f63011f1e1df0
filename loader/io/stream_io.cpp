// Streaming whole-file I/O for checkpoints.
#include "loader/io/stream_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "loader/io/direct_io.h"
#include "loader/io/unique_fd.h"
#include "loader/io/uring_setup.h"
#include "loader/util/content_pattern.h"

namespace feedrate {
namespace {

constexpr uint64_t kAlign = 4096;

}  // namespace

StreamIo::StreamIo(const StreamOptions& options) : opt_(options) {}

StreamIo::~StreamIo() {
  if (ring_ready_) io_uring_queue_exit(&ring_);
}

Result<std::unique_ptr<StreamIo>> StreamIo::Create(const StreamOptions& options) {
  std::unique_ptr<StreamIo> s(new StreamIo(options));
  StreamOptions& o = s->opt_;
  o.queue_depth = std::max<size_t>(1, o.queue_depth);
  o.block = AlignUp(std::max<uint64_t>(o.block, kAlign), kAlign);
  s->memory_ = AlignedBuffer(o.queue_depth * o.block, kAlign);
  FillContent(0x5eedc0ffeeULL, 0, s->memory_.data(), s->memory_.size());  // incompressible default content
  if (o.uring) {
    auto how = InitRingWithLadder(s->ring_, static_cast<unsigned>(o.queue_depth));
    if (how.ok()) {
      s->ring_ready_ = true;
      s->description_ = "io_uring (" + *how + "), " + std::to_string(o.queue_depth) + " x " + std::to_string(o.block >> 10) + " KiB in flight";
    } else {
      s->description_ = "pread/pwrite, one request at a time (io_uring unavailable: " + how.status().message() + ")";
    }
  } else {
    s->description_ = "pread/pwrite, one request at a time";
  }
  if (o.odirect) s->description_ += ", O_DIRECT";
  return s;
}

// One file's transfer: its blocks, what each must move, and how a failure is worded.
struct StreamIo::Transfer {
  int fd;
  const std::string& path;
  uint64_t total, need, block;
  bool write;
  const BlockFill& fill;
  const BlockCheck& check;
  uint64_t blocks() const { return (total + block - 1) / block; }
  uint64_t len_of(uint64_t i) const { return std::min<uint64_t>(block, total - i * block); }
  // What block i must transfer: all of it, except past `need` (an O_DIRECT read's last block ends at end of file).
  uint64_t need_of(uint64_t i) const { return i * block >= need ? 0 : std::min<uint64_t>(len_of(i), need - i * block); }
  Status Failed(uint64_t off, int err, bool injected) const {
    return Status::Errno(path + ": " + (write ? "write" : "read") + " failed at offset " + std::to_string(off) +
                             (injected ? " (injected)" : ""), err);
  }
  Status EndsEarly(uint64_t off, uint64_t expected) const {
    return Status::Corruption(path + ": ends at offset " + std::to_string(off) + ", expected " + std::to_string(expected) + " bytes");
  }
};

Status StreamIo::Stream(const Transfer& t) { return ring_ready_ ? StreamRing(t) : StreamSync(t); }

// Without a ring: one block at a time in the first buffer, short transfers and EINTR/EAGAIN retried.
Status StreamIo::StreamSync(const Transfer& t) {
  char* buf = memory_.data();
  for (uint64_t i = 0; i < t.blocks(); ++i) {
    if (opt_.stop != nullptr && opt_.stop->load(std::memory_order_relaxed)) return Status::IoError(t.path + ": interrupted");
    const uint64_t len = t.len_of(i);
    if (t.write) t.fill(i, buf, len);
    for (uint64_t done_bytes = 0; done_bytes < t.need_of(i);) {
      const uint64_t off = i * t.block + done_bytes;
      uint64_t want = len - done_bytes;
      if (t.write && opt_.faults != nullptr) {
        const int64_t f = opt_.faults->OnWrite(t.path, off, want);
        if (f < 0) return t.Failed(off, static_cast<int>(-f), true);
        if (f > 0) want = std::min<uint64_t>(want, static_cast<uint64_t>(f));
      }
      ssize_t n = t.write ? ::pwrite(t.fd, buf + done_bytes, want, static_cast<off_t>(off))
                          : ::pread(t.fd, buf + done_bytes, want, static_cast<off_t>(off));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) return t.Failed(off, errno, false);
      if (!t.write && opt_.faults != nullptr) {  // acts on the real result, as the loader's engines do
        const int64_t f = opt_.faults->OnReadPath(t.path, off, want, n);
        if (f == -EAGAIN) continue;
        if (f < 0) return t.Failed(off, static_cast<int>(-f), true);
        n = static_cast<ssize_t>(f);
      }
      if (n == 0) return t.EndsEarly(off, t.total);
      done_bytes += static_cast<uint64_t>(n);
    }
    if (!t.write) FEEDRATE_RETURN_IF_ERROR(t.check(i, buf, len));
  }
  return Status::Ok();
}

namespace {

// The ring's pass over one file: up to queue_depth blocks in flight, each in a free slot's buffer (blocks complete
// in any order); short transfers resubmit the rest; the first error stops submissions and what is out comes back.
class RingPass {
 public:
  RingPass(io_uring& ring, char* memory, const StreamOptions& opt, const StreamIo::Transfer& t)
      : ring_(ring), memory_(memory), opt_(opt), t_(t), slots_(opt.queue_depth) {
    for (size_t k = opt.queue_depth; k-- > 0;) free_.push_back(k);
  }

  Status Run() {
    for (;;) {
      if (error_.ok() && next_ < t_.blocks() && opt_.stop != nullptr && opt_.stop->load(std::memory_order_relaxed)) {
        error_ = Status::IoError(t_.path + ": interrupted");  // what is in flight comes back first
      }
      FillSlots();
      if (inflight_ == 0) return error_;  // all done, or an error stopped submissions and everything out is back
      int ret = io_uring_submit_and_wait(&ring_, 1);
      if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
        return Status::Errno(t_.path + ": io_uring_submit_and_wait failed", -ret);
      }
      Reap();
    }
  }

 private:
  struct Slot {
    uint64_t block = 0, progress = 0;
  };
  char* buf(size_t k) const { return memory_ + k * opt_.block; }

  void FillSlots() {
    while (error_.ok() && next_ < t_.blocks() && !free_.empty()) {
      const size_t k = free_.back();
      free_.pop_back();
      slots_[k] = {next_, 0};
      if (t_.write) t_.fill(next_, buf(k), t_.len_of(next_));
      error_ = Submit(k);
      if (!error_.ok()) {
        free_.push_back(k);
        return;
      }
      ++next_;
      ++inflight_;
    }
  }

  Status Submit(size_t k) {
    const Slot& sl = slots_[k];
    const uint64_t off = sl.block * opt_.block + sl.progress;
    uint64_t want = t_.len_of(sl.block) - sl.progress;
    if (t_.write && opt_.faults != nullptr) {
      const int64_t f = opt_.faults->OnWrite(t_.path, off, want);
      if (f < 0) return t_.Failed(off, static_cast<int>(-f), true);
      if (f > 0) want = std::min<uint64_t>(want, static_cast<uint64_t>(f));
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // never null: at most queue_depth requests are out
    if (t_.write) {
      io_uring_prep_write(sqe, t_.fd, buf(k) + sl.progress, static_cast<unsigned>(want), off);
    } else {
      io_uring_prep_read(sqe, t_.fd, buf(k) + sl.progress, static_cast<unsigned>(want), off);
    }
    io_uring_sqe_set_data64(sqe, k);
    return Status::Ok();
  }

  void Reap() {
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      Complete(static_cast<size_t>(io_uring_cqe_get_data64(cqe)), cqe->res);
    }
    io_uring_cq_advance(&ring_, seen);
  }

  // Slot k's request came back with `res`: progress, a retry of the rest, the block checked, or the first error.
  void Complete(size_t k, int res) {
    Slot& sl = slots_[k];
    const uint64_t off = sl.block * opt_.block + sl.progress;
    bool injected = false;
    if (!t_.write && opt_.faults != nullptr && res >= 0) {
      const int64_t f = opt_.faults->OnReadPath(t_.path, off, t_.len_of(sl.block) - sl.progress, res);
      injected = f != res;
      res = static_cast<int>(f);
    }
    bool again = false;
    if (res == -EAGAIN || res == -EINTR) {
      again = error_.ok();
    } else if (res < 0 || (res == 0 && sl.progress < t_.need_of(sl.block))) {
      if (error_.ok()) error_ = res < 0 ? t_.Failed(off, -res, injected) : t_.EndsEarly(off, t_.need);
    } else {
      sl.progress += static_cast<uint64_t>(res);
      if (sl.progress < t_.need_of(sl.block)) {
        again = error_.ok();  // short transfer: the rest goes again
      } else if (error_.ok() && !t_.write) {
        error_ = t_.check(sl.block, buf(k), t_.len_of(sl.block));
      }
    }
    if (again) {
      error_ = Submit(k);
      if (error_.ok()) return;
    }
    --inflight_;
    free_.push_back(k);
  }

  io_uring& ring_;
  char* memory_;
  const StreamOptions& opt_;
  const StreamIo::Transfer& t_;
  std::vector<Slot> slots_;
  std::vector<size_t> free_;
  uint64_t next_ = 0, inflight_ = 0;
  Status error_;
};

}  // namespace

Status StreamIo::StreamRing(const Transfer& t) { return RingPass(ring_, memory_.data(), opt_, t).Run(); }

Status StreamIo::WriteFile(const std::string& path, uint64_t bytes, bool fsync, uint64_t content_key) {
  FEEDRATE_ASSIGN_OR_RETURN(auto pending, WriteData(path, bytes, content_key));
  return Commit(std::move(pending), fsync);
}

Result<StreamIo::PendingFile> StreamIo::WriteData(const std::string& path, uint64_t bytes, uint64_t content_key) {
  PendingFile f;
  FEEDRATE_ASSIGN_OR_RETURN(auto file, SafeFile::Create(path, opt_.odirect ? O_DIRECT : 0));
  f.file_.emplace(std::move(file));  // from here on, dropping `f` discards the file
  f.bytes_ = bytes;
  const int fd = f.file_->fd();
  // O_DIRECT writes whole aligned blocks; the file is cut to its size afterwards.
  const uint64_t total = opt_.odirect ? AlignUp(bytes, kAlign) : bytes;
  const BlockFill fill = [&](uint64_t i, char* buf, uint64_t len) {
    if (content_key != 0) FillContent(content_key, i * opt_.block, buf, len);
  };
  const BlockCheck none = [](uint64_t, const char*, uint64_t) { return Status::Ok(); };
  Status st = Stream({fd, path, total, total, opt_.block, true, fill, none});
  if (!st.ok()) return st;
  if (total != bytes && ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    return Status::Errno(path + ": ftruncate failed", errno);
  }
  return f;
}

Status StreamIo::Commit(PendingFile f, bool fsync) {
  if (!f.file_) return Status::InvalidArgument("StreamIo::Commit: no file");
  FEEDRATE_RETURN_IF_ERROR(f.file_->Commit(fsync));
  if (fsync) fsyncs_.fetch_add(1);
  bytes_written_.fetch_add(f.bytes_);
  return Status::Ok();
}

Status StreamIo::ReadFile(const std::string& path, uint64_t bytes, uint64_t content_key) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | (opt_.odirect ? O_DIRECT : 0)));
  if (!fd.valid()) return Status::Errno("cannot open " + path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::Errno(path + ": fstat failed", errno);
  if (static_cast<uint64_t>(st.st_size) != bytes) {
    return Status::Corruption(path + ": has " + std::to_string(st.st_size) + " bytes, the checkpoint layout says " +
                              std::to_string(bytes) + " (another model, scale or world size?)");
  }
  // O_DIRECT reads whole aligned blocks; the last one comes back short at end of file.
  const uint64_t total = opt_.odirect ? AlignUp(bytes, kAlign) : bytes;
  const BlockFill nothing = [](uint64_t, char*, uint64_t) {};
  const BlockCheck check = [&](uint64_t i, const char* buf, uint64_t len) -> Status {
    const uint64_t off = i * opt_.block;
    const uint64_t real = off >= bytes ? 0 : std::min(len, bytes - off);
    if (content_key == 0 || real == 0) return Status::Ok();
    const int64_t bad = FirstContentMismatch(content_key, off, buf, real);
    if (bad < 0) return Status::Ok();
    return Status::Corruption(path + ": content check failed at offset " + std::to_string(off + static_cast<uint64_t>(bad)) +
                              " (the bytes read back are not the ones written)");
  };
  Status s = Stream({fd.get(), path, total, bytes, opt_.block, false, nothing, check});
  if (s.ok()) bytes_read_ += bytes;
  return s;
}

}  // namespace feedrate
