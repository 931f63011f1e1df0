// iobench cell runner: one thread per stream, io_uring (qd reads/writes in flight) or pread/pwrite (qd 1).
#include "loader/iobench/iobench.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/io/unique_fd.h"
#include "loader/io/uring_setup.h"
#include "loader/util/clock.h"

namespace feedrate {
namespace {

double CpuSeconds() {
  rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// The verify pattern: every 8-byte word is a function of (seed, its file offset), so any block can be checked.
void FillPattern(char* p, uint64_t len, uint64_t offset, uint64_t seed) {
  for (uint64_t i = 0; i + 8 <= len; i += 8) {
    uint64_t w = Mix(seed ^ (offset + i));
    std::memcpy(p + i, &w, 8);
  }
}
bool CheckPattern(const char* p, uint64_t len, uint64_t offset, uint64_t seed, uint64_t* bad) {
  for (uint64_t i = 0; i + 8 <= len; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w != Mix(seed ^ (offset + i))) {
      *bad = offset + i;
      return false;
    }
  }
  return true;
}

// Per-thread offset stream: sequential over the thread's slice of the file, or uniformly random blocks.
struct Offsets {
  bool random;
  uint64_t bs, begin, end, cur;
  std::mt19937_64 rng;
  uint64_t Next() {
    if (random) return begin + (rng() % ((end - begin) / bs)) * bs;
    if (cur + bs > end) cur = begin;
    uint64_t o = cur;
    cur += bs;
    return o;
  }
};

struct Shared {
  Shared(const IoBenchOptions& opts, const IoBenchCell& cell) : o(opts), c(cell) {}
  const IoBenchOptions& o;
  const IoBenchCell& c;
  int64_t measure_start = 0, stop = 0;
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> first_done{false};
  uint64_t first_done_bytes = 0;
  int64_t first_done_ns = 0;
  std::mutex mu;  // merging results and the first error (once per thread)
  Status error;
  LatencyHistogram latency;
  uint64_t read_bytes = 0, write_bytes = 0, ios = 0;
};

struct ThreadStats {
  LatencyHistogram lat;
  uint64_t read_bytes = 0, write_bytes = 0, ios = 0;
};

bool IsRead(const IoBenchCell& c, int rwmixread, std::mt19937_64& rng) {
  if (c.rw == "read" || c.rw == "randread") return true;
  if (c.rw == "write" || c.rw == "randwrite") return false;
  return static_cast<int>(rng() % 100) < rwmixread;
}

// Accounts one completed I/O; returns an error for a failed, short or mismatching one.
Status Complete(Shared& s, ThreadStats& t, bool read, int64_t res, uint64_t off, const char* buf, int64_t started) {
  if (res < 0) {
    return Status::Errno(s.o.path + ": " + (read ? "read" : "write") + " failed at offset " + std::to_string(off),
                         static_cast<int>(-res));
  }
  if (static_cast<uint64_t>(res) != s.c.bs) {
    return Status::IoError(s.o.path + ": short " + (read ? "read" : "write") + " at offset " + std::to_string(off) +
                           ": " + std::to_string(res) + " of " + std::to_string(s.c.bs) + " bytes");
  }
  uint64_t bad = 0;
  if (read && s.o.verify && !CheckPattern(buf, s.c.bs, off, s.o.seed, &bad)) {
    return Status::Corruption(s.o.path + ": verify failed at offset " + std::to_string(bad) +
                              " (not the pattern of seed " + std::to_string(s.o.seed) + ")");
  }
  int64_t now = NowNs();
  if (now >= s.measure_start && started >= s.measure_start) {
    t.lat.Add(static_cast<uint64_t>(now - started));
    (read ? t.read_bytes : t.write_bytes) += static_cast<uint64_t>(res);
    ++t.ios;
    s.bytes.fetch_add(static_cast<uint64_t>(res), std::memory_order_relaxed);
  }
  return Status::Ok();
}

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
  const bool random = c.rw.rfind("rand", 0) == 0;
  if (o.size < static_cast<uint64_t>(c.bs) * c.threads) {
    return Status::InvalidArgument("--size " + std::to_string(o.size) + " is smaller than one block per thread");
  }
  if (o.direct && (c.bs % 4096 != 0)) {
    return Status::InvalidArgument("--direct needs a block size that is a multiple of 4096 (got " + std::to_string(c.bs) + ")");
  }
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
  Shared s(o, c);
  int64_t start = NowNs();
  s.measure_start = start + static_cast<int64_t>(o.ramp_s * 1e9);
  s.stop = s.measure_start + static_cast<int64_t>(o.runtime_s * 1e9);
  double cpu0 = CpuSeconds();
  std::vector<std::thread> threads;
  for (uint32_t ti = 0; ti < c.threads; ++ti) {
    threads.emplace_back([&, ti] {
      ThreadStats t;
      Status st;
      int fd = ::open(o.path.c_str(), (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC | (o.direct ? O_DIRECT : 0));
      if (fd < 0) {
        st = Status::Errno("cannot open " + o.path, errno);
      } else {
        UniqueFd owned(fd);
        uint64_t slice = o.size / c.threads / c.bs * c.bs;
        Offsets off{random, c.bs, random ? 0 : ti * slice, random ? o.size / c.bs * c.bs : (ti + 1) * slice, 0,
                    std::mt19937_64(o.seed * 7919 + ti)};
        off.cur = off.begin;
        std::mt19937_64 mix(o.seed * 104729 + ti);
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
        if (engine == "posix") {
          st = PosixStream(s, fd, off, t, bufs[0], mix);
        } else {
          io_uring ring;
          auto how = InitRingWithLadder(ring, c.qd);
          if (!how.ok()) {
            st = how.status();
          } else {
            st = UringStream(s, ring, fd, off, t, bufs, mix);
            io_uring_queue_exit(&ring);
          }
        }
      }
      int64_t end = NowNs();
      std::lock_guard<std::mutex> lock(s.mu);
      if (!s.first_done.exchange(true)) {
        s.first_done_bytes = s.bytes.load();
        s.first_done_ns = end - s.measure_start;
      }
      if (!st.ok() && s.error.ok()) s.error = st;
      s.latency.Merge(t.lat);
      s.read_bytes += t.read_bytes;
      s.write_bytes += t.write_bytes;
      s.ios += t.ios;
    });
  }
  for (auto& t : threads) t.join();
  if (!s.error.ok()) return s.error;
  IoBenchResult r;
  r.engine = engine;
  r.read_bytes = s.read_bytes;
  r.write_bytes = s.write_bytes;
  r.ios = s.ios;
  r.seconds = static_cast<double>(NowNs() - s.measure_start) / 1e9;
  r.cpu_seconds = CpuSeconds() - cpu0;
  r.first_done_seconds = static_cast<double>(s.first_done_ns) / 1e9;
  r.first_done_bytes = s.first_done_bytes;
  r.latency = s.latency;
  return r;
}

}  // namespace feedrate
