// The iobench cell machinery shared by the host and GPU runners: pattern, accounting, threads and merging.
#include "loader/iobench/cell.h"

#include <sys/resource.h>

#include <cstring>
#include <thread>
#include <vector>

#include "loader/util/clock.h"

namespace feedrate::iobench {
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

}  // namespace

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

bool IsRead(const IoBenchCell& c, int rwmixread, std::mt19937_64& rng) {
  if (c.rw == "read" || c.rw == "randread") return true;
  if (c.rw == "write" || c.rw == "randwrite") return false;
  return static_cast<int>(rng() % 100) < rwmixread;
}

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

Result<IoBenchResult> RunCellThreads(const IoBenchOptions& o, const IoBenchCell& c, const std::string& engine,
                                     const StreamBody& body) {
  const bool random = c.rw.rfind("rand", 0) == 0;
  Shared s(o, c);
  int64_t start = NowNs();
  s.measure_start = start + static_cast<int64_t>(o.ramp_s * 1e9);
  s.stop = s.measure_start + static_cast<int64_t>(o.runtime_s * 1e9);
  double cpu0 = CpuSeconds();
  std::vector<std::thread> threads;
  for (uint32_t ti = 0; ti < c.threads; ++ti) {
    threads.emplace_back([&, ti] {
      ThreadStats t;
      const uint64_t slice = o.size / c.threads / c.bs * c.bs;
      Offsets off{random, c.bs, random ? 0 : ti * slice, random ? o.size / c.bs * c.bs : (ti + 1) * slice, 0,
                  std::mt19937_64(o.seed * 7919 + ti)};
      off.cur = off.begin;
      std::mt19937_64 mix(o.seed * 104729 + ti);
      Status st = body(s, ti, off, t, mix);
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

}  // namespace feedrate::iobench
