// S3 GET/PUT grid cells on S3Client's streaming runner: `concurrency` request objects recycled, buffers reused.
#include "loader/s3/s3_bench.h"

#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

namespace feedrate {
namespace {

double CpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

std::vector<char> RandomBytes(uint64_t n) {
  std::vector<char> v(n);
  std::mt19937_64 rng(0x53b3ULL);
  for (uint64_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  return v;
}

}  // namespace

std::string BenchObjectKey(const std::string& prefix, uint64_t size, unsigned i) {
  return (prefix.empty() ? "" : prefix + "/") + "feedrate-s3bench/obj-" + std::to_string(size) + "-" + std::to_string(i);
}

Status EnsureBenchObjects(S3Client& s3, const std::string& prefix, uint64_t size, unsigned count) {
  FEEDRATE_ASSIGN_OR_RETURN(auto listed,
                            s3.List((prefix.empty() ? "" : prefix + "/") + "feedrate-s3bench/obj-" + std::to_string(size) + "-"));
  std::vector<bool> have(count, false);
  for (const auto& o : listed) {
    for (unsigned i = 0; i < count; ++i) {
      if (o.key == BenchObjectKey(prefix, size, i) && o.size == size) have[i] = true;
    }
  }
  std::vector<char> data;
  for (unsigned i = 0; i < count; ++i) {
    if (have[i]) continue;
    if (data.empty()) data = RandomBytes(size);
    Status st = s3.Put(BenchObjectKey(prefix, size, i), data.data(), size);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

Result<S3BenchResult> RunS3BenchCell(S3Client& s3, const std::string& prefix, const S3BenchCell& cell, double runtime_s) {
  const bool get = cell.op == "get";
  const uint64_t part = get ? std::min(cell.part_size == 0 ? cell.object_size : cell.part_size, cell.object_size) : cell.object_size;
  const unsigned n = std::max(1u, cell.concurrency);
  if (get) {
    Status st = EnsureBenchObjects(s3, prefix, cell.object_size, n);
    if (!st.ok()) return st;
  }
  // Memory: one part-sized buffer per request in flight (GET), or one shared object-sized source (PUT).
  std::vector<char> source = get ? std::vector<char>() : RandomBytes(cell.object_size);
  std::vector<std::vector<char>> buffers(get ? n : 0, std::vector<char>(part));
  std::vector<S3Request> reqs(n);
  std::vector<S3Request*> idle;
  for (unsigned i = 0; i < n; ++i) {
    if (get) {
      reqs[i].dest = buffers[i].data();
      reqs[i].dest_capacity = part;
    } else {
      reqs[i].method = S3Request::Method::kPut;
      reqs[i].body = source.data();
      reqs[i].body_size = cell.object_size;
    }
    idle.push_back(&reqs[i]);
  }
  const uint64_t parts_per_object = (cell.object_size + part - 1) / part;
  uint64_t issued = 0;
  S3BenchResult r;
  Status failure;
  const auto t0 = std::chrono::steady_clock::now();
  const auto stop = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(runtime_s));
  const double cpu0 = CpuSeconds();
  auto last = t0;
  s3.RunStream(
      [&]() -> S3Request* {
        if (idle.empty() || !failure.ok() || std::chrono::steady_clock::now() >= stop) return nullptr;
        S3Request* q = idle.back();
        idle.pop_back();
        const uint64_t k = issued++;
        if (get) {  // walk the objects part by part, each request on the next object
          const unsigned object = static_cast<unsigned>(k % n);
          const uint64_t p = (k / n) % parts_per_object;
          q->key = BenchObjectKey(prefix, cell.object_size, object);
          q->range_begin = p * part;
          q->range_length = std::min(part, cell.object_size - q->range_begin);
        } else {
          q->key = BenchObjectKey(prefix, cell.object_size, static_cast<unsigned>(k % n));
        }
        return q;
      },
      [&](S3Request& q) {
        last = std::chrono::steady_clock::now();
        if (!q.status.ok()) {
          if (failure.ok()) failure = q.status;
        } else {
          r.bytes += get ? q.bytes : q.body_size;
          ++r.requests;
          r.latency.Add(static_cast<uint64_t>(q.seconds * 1e9));
          r.ttfb.Add(static_cast<uint64_t>(q.ttfb_seconds * 1e9));
        }
        idle.push_back(&q);
      });
  r.cpu_seconds = CpuSeconds() - cpu0;
  r.seconds = std::chrono::duration<double>(last - t0).count();
  if (!failure.ok()) return failure;
  return r;
}

}  // namespace feedrate
