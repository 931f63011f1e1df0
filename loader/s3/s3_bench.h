// `feedrate iobench --path s3://...`: GET and PUT throughput of an object size x concurrency grid, as object-store
// benchmarks measure it (MiB/s, requests/s, time to first byte, latency percentiles, client CPU per GiB).
#pragma once

#include <cstdint>
#include <string>

#include "loader/s3/s3_client.h"
#include "loader/util/latency_histogram.h"

namespace feedrate {

struct S3BenchCell {
  std::string op;            // "get" (ranged GETs of part_size over the objects) or "put" (whole objects)
  uint64_t object_size = 0;
  uint64_t part_size = 0;    // GET request size (<= object_size)
  unsigned concurrency = 1;  // requests in flight
};

struct S3BenchResult {
  uint64_t bytes = 0, requests = 0;
  double seconds = 0;        // first request to last completion
  double cpu_seconds = 0;    // this process, user + system
  LatencyHistogram latency, ttfb;  // per request, nanoseconds
};

// Objects "<prefix>/feedrate-s3bench/obj-<size>-<i>" (i < count) of `size` bytes: written when missing or of
// another size, from a pseudo-random buffer (incompressible).
Status EnsureBenchObjects(S3Client& s3, const std::string& prefix, uint64_t size, unsigned count);
std::string BenchObjectKey(const std::string& prefix, uint64_t size, unsigned i);

// One cell for `runtime_s` seconds (requests started after that are not issued; those in flight finish).
// GET cells read the objects EnsureBenchObjects wrote (count = concurrency); PUT cells overwrite them.
Result<S3BenchResult> RunS3BenchCell(S3Client& s3, const std::string& prefix, const S3BenchCell& cell, double runtime_s);

}  // namespace feedrate
