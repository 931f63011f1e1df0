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

template <typename Prepare, typename Done>
Status StreamIo::Stream(int fd, const std::string& path, uint64_t total, uint64_t need, bool write, Prepare&& prepare,
                        Done&& done) {
  const uint64_t blocks = (total + opt_.block - 1) / opt_.block;
  auto len_of = [&](uint64_t i) { return std::min<uint64_t>(opt_.block, total - i * opt_.block); };
  // What block i must transfer: all of it, except past `need` (an O_DIRECT read's last block ends at end of file).
  auto need_of = [&](uint64_t i) { return i * opt_.block >= need ? 0 : std::min<uint64_t>(len_of(i), need - i * opt_.block); };
  auto buf_of = [&](uint64_t) { return memory_.data(); };  // the synchronous loop uses the first buffer
  auto failed = [&](uint64_t off, int err, bool injected) {
    return Status::Errno(path + ": " + (write ? "write" : "read") + " failed at offset " + std::to_string(off) +
                             (injected ? " (injected)" : ""), err);
  };
  if (!ring_ready_) {
    for (uint64_t i = 0; i < blocks; ++i) {
      if (opt_.stop != nullptr && opt_.stop->load(std::memory_order_relaxed)) return Status::IoError(path + ": interrupted");
      char* buf = buf_of(i);
      const uint64_t len = len_of(i);
      if (write) prepare(i, buf, len);
      for (uint64_t done_bytes = 0; done_bytes < need_of(i);) {
        const uint64_t off = i * opt_.block + done_bytes;
        uint64_t want = len - done_bytes;
        if (write && opt_.faults != nullptr) {
          const int64_t f = opt_.faults->OnWrite(path, off, want);
          if (f < 0) return failed(off, static_cast<int>(-f), true);
          if (f > 0) want = std::min<uint64_t>(want, static_cast<uint64_t>(f));
        }
        ssize_t n = write ? ::pwrite(fd, buf + done_bytes, want, static_cast<off_t>(off))
                          : ::pread(fd, buf + done_bytes, want, static_cast<off_t>(off));
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return failed(off, errno, false);
        if (!write && opt_.faults != nullptr) {  // acts on the real result, as the loader's engines do
          const int64_t f = opt_.faults->OnReadPath(path, off, want, n);
          if (f == -EAGAIN) continue;
          if (f < 0) return failed(off, static_cast<int>(-f), true);
          n = static_cast<ssize_t>(f);
        }
        if (n == 0) return Status::Corruption(path + ": ends at offset " + std::to_string(off) + ", expected " + std::to_string(total) + " bytes");
        done_bytes += static_cast<uint64_t>(n);
      }
      if (!write) FEEDRATE_RETURN_IF_ERROR(done(i, buf, len));
    }
    return Status::Ok();
  }
  // io_uring: up to queue_depth blocks in flight, each in a free slot's buffer (blocks complete in any order);
  // short transfers resubmit the rest.
  struct Slot {
    uint64_t block = 0, progress = 0;
  };
  std::vector<Slot> slots(opt_.queue_depth);
  std::vector<size_t> free_slots;
  for (size_t k = opt_.queue_depth; k-- > 0;) free_slots.push_back(k);
  auto slot_buf = [&](size_t k) { return memory_.data() + k * opt_.block; };
  uint64_t next = 0, inflight = 0;
  Status error;
  auto submit = [&](size_t k) -> Status {
    const Slot& sl = slots[k];
    const uint64_t off = sl.block * opt_.block + sl.progress;
    uint64_t want = len_of(sl.block) - sl.progress;
    if (write && opt_.faults != nullptr) {
      const int64_t f = opt_.faults->OnWrite(path, off, want);
      if (f < 0) return failed(off, static_cast<int>(-f), true);
      if (f > 0) want = std::min<uint64_t>(want, static_cast<uint64_t>(f));
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // never null: at most queue_depth requests are out
    if (write) {
      io_uring_prep_write(sqe, fd, slot_buf(k) + sl.progress, static_cast<unsigned>(want), off);
    } else {
      io_uring_prep_read(sqe, fd, slot_buf(k) + sl.progress, static_cast<unsigned>(want), off);
    }
    io_uring_sqe_set_data64(sqe, k);
    return Status::Ok();
  };
  for (;;) {
    if (error.ok() && next < blocks && opt_.stop != nullptr && opt_.stop->load(std::memory_order_relaxed)) {
      error = Status::IoError(path + ": interrupted");  // what is in flight comes back first
    }
    while (error.ok() && next < blocks && !free_slots.empty()) {
      const size_t k = free_slots.back();
      free_slots.pop_back();
      slots[k] = {next, 0};
      if (write) prepare(next, slot_buf(k), len_of(next));
      error = submit(k);
      if (!error.ok()) {
        free_slots.push_back(k);
        break;
      }
      ++next;
      ++inflight;
    }
    if (inflight == 0) break;  // all done, or an error stopped submissions and everything out is back
    int ret = io_uring_submit_and_wait(&ring_, 1);
    if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
      return Status::Errno(path + ": io_uring_submit_and_wait failed", -ret);
    }
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      const size_t k = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
      Slot& sl = slots[k];
      int res = cqe->res;
      bool injected = false;
      if (!write && opt_.faults != nullptr && res >= 0) {
        const uint64_t off = sl.block * opt_.block + sl.progress;
        const int64_t f = opt_.faults->OnReadPath(path, off, len_of(sl.block) - sl.progress, res);
        injected = f != res;
        res = static_cast<int>(f);
      }
      bool again = false;
      if (res == -EAGAIN || res == -EINTR) {
        again = error.ok();
      } else if (res < 0 || (res == 0 && sl.progress < need_of(sl.block))) {
        if (error.ok()) {
          error = res < 0 ? failed(sl.block * opt_.block + sl.progress, -res, injected)
                          : Status::Corruption(path + ": ends at offset " + std::to_string(sl.block * opt_.block + sl.progress) +
                                               ", expected " + std::to_string(need) + " bytes");
        }
      } else {
        sl.progress += static_cast<uint64_t>(res);
        if (sl.progress < need_of(sl.block)) {
          again = error.ok();  // short transfer: the rest goes again
        } else if (error.ok() && !write) {
          error = done(sl.block, slot_buf(k), len_of(sl.block));
        }
      }
      if (again) {
        error = submit(k);
        if (error.ok()) continue;
      }
      --inflight;
      free_slots.push_back(k);
    }
    io_uring_cq_advance(&ring_, seen);
  }
  return error;
}

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
  Status st = Stream(fd, path, total, total, true,
                     [&](uint64_t i, char* buf, uint64_t len) {
                       if (content_key != 0) FillContent(content_key, i * opt_.block, buf, len);
                     },
                     [](uint64_t, const char*, uint64_t) { return Status::Ok(); });
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
  Status s = Stream(fd.get(), path, total, bytes, false, [](uint64_t, char*, uint64_t) {},
                    [&](uint64_t i, const char* buf, uint64_t len) -> Status {
                      const uint64_t off = i * opt_.block;
                      const uint64_t real = off >= bytes ? 0 : std::min(len, bytes - off);
                      if (content_key == 0 || real == 0) return Status::Ok();
                      const int64_t bad = FirstContentMismatch(content_key, off, buf, real);
                      if (bad < 0) return Status::Ok();
                      return Status::Corruption(path + ": content check failed at offset " + std::to_string(off + static_cast<uint64_t>(bad)) +
                                                " (the bytes read back are not the ones written)");
                    });
  if (s.ok()) bytes_read_ += bytes;
  return s;
}

}  // namespace feedrate
