// iobench cell runner: one thread per stream, io_uring (qd reads/writes in flight) or pread/pwrite (qd 1).
#include "loader/iobench/iobench.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/iobench/cell.h"
#include "loader/io/unique_fd.h"
#include "loader/io/uring_setup.h"
#include "loader/util/clock.h"

namespace feedrate {

using namespace iobench;  // NOLINT(google-build-using-namespace): the cell machinery of cell.h

namespace {

Status PosixStream(Shared& s, int fd, Offsets& off, ThreadStats& t, char* buf, std::mt19937_64& mix) {
  while (NowNs() < s.stop) {
    uint64_t o = off.Next();
    bool read = IsRead(s.c, s.o.rwmixread, mix);
    if (!read) {
      if (s.o.verify) FillPattern(buf, s.c.bs, o, s.o.seed);
    }
    int64_t start = NowNs();
    ssize_t n = read ? ::pread(fd, buf, s.c.bs, static_cast<off_t>(o)) : ::pwrite(fd, buf, s.c.bs, static_cast<off_t>(o));
    FEEDRATE_RETURN_IF_ERROR(Complete(s, t, read, n < 0 ? -errno : n, o, buf, start));
  }
  return Status::Ok();
}

Status UringStream(Shared& s, io_uring& ring, int fd, Offsets& off, ThreadStats& t, std::vector<char*>& bufs,
                   std::mt19937_64& mix) {
  struct Slot {
    uint64_t off;
    int64_t started;
    bool read;
  };
  std::vector<Slot> slots(bufs.size());
  std::vector<uint32_t> free_slots;
  for (uint32_t i = 0; i < bufs.size(); ++i) free_slots.push_back(i);
  uint32_t inflight = 0, unsubmitted = 0;
  const uint32_t batch = std::max<uint32_t>(1, s.o.submit_batch);
  Status st;
  for (;;) {
    int64_t now = NowNs();
    while (st.ok() && now < s.stop && !free_slots.empty()) {
      uint32_t b = free_slots.back();
      free_slots.pop_back();
      Slot& sl = slots[b];
      sl = {off.Next(), now, IsRead(s.c, s.o.rwmixread, mix)};
      if (!sl.read && s.o.verify) FillPattern(bufs[b], s.c.bs, sl.off, s.o.seed);
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (sl.read) {
        io_uring_prep_read(sqe, fd, bufs[b], static_cast<unsigned>(s.c.bs), sl.off);
      } else {
        io_uring_prep_write(sqe, fd, bufs[b], static_cast<unsigned>(s.c.bs), sl.off);
      }
      io_uring_sqe_set_data64(sqe, b);
      ++inflight;
      // Hand the device work as soon as there is a batch of it; the last one prepared goes with the wait below.
      if (++unsubmitted >= batch && !free_slots.empty()) {
        int ret = io_uring_submit(&ring);
        if (ret < 0 && ret != -EINTR) return Status::Errno("io_uring_submit", -ret);
        unsubmitted = 0;
      }
    }
    if (inflight == 0) break;
    unsubmitted = 0;  // submitted (if any were left) by the call below
    int ret = io_uring_submit_and_wait(&ring, 1);
    if (ret < 0 && ret != -EINTR) return Status::Errno("io_uring_submit_and_wait", -ret);
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      auto b = static_cast<uint32_t>(io_uring_cqe_get_data64(cqe));
      if (st.ok()) st = Complete(s, t, slots[b].read, cqe->res, slots[b].off, bufs[b], slots[b].started);
      free_slots.push_back(b);
      --inflight;
      ++seen;
    }
    io_uring_cq_advance(&ring, seen);
  }
  return st;
}

// One host thread's stream: its own descriptor and buffers, pread/pwrite or a ring of c.qd I/Os.
Status HostStream(Shared& s, const std::string& engine, bool writes, Offsets& off, ThreadStats& t,
                  std::mt19937_64& mix, uint32_t ti) {
  const IoBenchOptions& o = s.o;
  const IoBenchCell& c = s.c;
  int fd = ::open(o.path.c_str(), (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC | (o.direct ? O_DIRECT : 0));
  if (fd < 0) return Status::Errno("cannot open " + o.path, errno);
  UniqueFd owned(fd);
  AlignedBuffer mem(static_cast<size_t>(c.bs) * c.qd);
  std::vector<char*> bufs;
  for (uint32_t q = 0; q < c.qd; ++q) bufs.push_back(mem.data() + static_cast<size_t>(q) * c.bs);
  if (!o.verify) {  // writes carry incompressible bytes
    std::mt19937_64 fill(o.seed + ti);
    for (size_t i = 0; i + 8 <= mem.size(); i += 8) {
      uint64_t w = fill();
      std::memcpy(mem.data() + i, &w, 8);
    }
  }
  if (engine == "posix") return PosixStream(s, fd, off, t, bufs[0], mix);
  io_uring ring;
  FEEDRATE_RETURN_IF_ERROR(InitRingWithLadder(ring, c.qd).status());
  Status st = UringStream(s, ring, fd, off, t, bufs, mix);
  io_uring_queue_exit(&ring);
  return st;
}

}  // namespace

Result<uint64_t> PrepareIoBenchFile(const IoBenchOptions& o, bool writes) {
  struct stat sb {};
  bool exists = ::stat(o.path.c_str(), &sb) == 0;
  if (!writes) {
    if (!exists) {
      return Status::NotFound(o.path + ": does not exist; reads need an existing file (lay one down with --rw write)");
    }
    uint64_t size = o.size > 0 ? o.size : static_cast<uint64_t>(sb.st_size);
    if (static_cast<uint64_t>(sb.st_size) < size) {
      return Status::InvalidArgument(o.path + ": file is " + std::to_string(sb.st_size) + " bytes, smaller than --size " +
                                     std::to_string(size));
    }
    return size;
  }
  uint64_t size = o.size > 0 ? o.size : (exists && sb.st_size > 0 ? static_cast<uint64_t>(sb.st_size) : 1ull << 30);
  int fd = ::open(o.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Errno("cannot create " + o.path, errno);
  UniqueFd owned(fd);
  if (static_cast<uint64_t>(exists ? sb.st_size : 0) < size && ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    return Status::Errno("cannot extend " + o.path + " to " + std::to_string(size) + " bytes", errno);
  }
  return size;
}

Result<IoBenchResult> RunIoBenchCell(const IoBenchOptions& o, const IoBenchCell& c) {
  const bool writes = c.rw != "read" && c.rw != "randread";
  if (o.size < static_cast<uint64_t>(c.bs) * c.threads) {
    return Status::InvalidArgument("--size " + std::to_string(o.size) + " is smaller than one block per thread");
  }
  if (o.direct && (c.bs % 4096 != 0)) {
    return Status::InvalidArgument("--direct needs a block size that is a multiple of 4096 (got " + std::to_string(c.bs) + ")");
  }
  if (IsGpuXfer(o.xfer)) return RunGpuXferCell(o, c);
  // io_uring unless told otherwise; a ring that cannot be set up falls back to pread/pwrite at queue depth 1.
  std::string engine = o.engine == "posix" ? "posix" : "uring";
  if (engine == "uring") {
    io_uring probe;
    int ret = io_uring_queue_init(2, &probe, 0);
    if (ret < 0) {
      if (o.engine == "uring") return Status::Errno("--engine uring: io_uring is unavailable", -ret);
      engine = "posix";
    } else {
      io_uring_queue_exit(&probe);
    }
  }
  if (engine == "posix" && c.qd > 1) {
    return Status::InvalidArgument("the posix engine runs one I/O per thread: --qd " + std::to_string(c.qd) +
                                   " needs io_uring (use --threads for posix concurrency)");
  }
  return RunCellThreads(o, c, engine, [&](Shared& s, uint32_t ti, Offsets& off, ThreadStats& t, std::mt19937_64& mix) {
    return HostStream(s, engine, writes, off, t, mix, ti);
  });
}

}  // namespace feedrate
