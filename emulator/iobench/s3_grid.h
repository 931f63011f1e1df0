// iobench's S3 grid in one process: every cell (GET/PUT x object size x concurrency) run by loader/s3/s3_bench.h,
// as JSON and as rows of s3bench.csv. The file grid over MPI ranks is iobench_grid.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loader/s3/s3_client.h"
#include "loader/status.h"

namespace feedrate {

struct S3IobenchGrid {
  std::vector<std::string> ops{"get"};  // "get" (ranged GETs of part_size) and/or "put" (whole objects)
  std::vector<uint64_t> object_sizes{16u << 20};
  uint64_t part_size = 8u << 20;        // GET request size; objects smaller are read whole
  std::vector<unsigned> concurrency{1, 8, 32};
  double runtime_s = 5;                 // measured seconds per cell
};

// Runs the cells in order (ops, then sizes, then concurrency) against `prefix` in `s3`'s bucket; each cell's JSON
// (op, object_size, request_size, concurrency, bytes, requests, seconds, mib_per_s, requests_per_s,
// ttfb_ms{p50,p90,p99}, lat_ms{p50,p90,p99,max}, cpu_seconds, cpu_s_per_gib) goes to `on_cell` as it completes.
// Returns every cell's, or the first error.
Result<nlohmann::json> RunS3IobenchGrid(S3Client& s3, const std::string& prefix, const S3IobenchGrid& grid,
                                        const std::function<void(const nlohmann::json& cell)>& on_cell);

// s3bench.csv: a header and one row per cell of RunS3IobenchGrid's result.
std::string S3IobenchCsv(const nlohmann::json& cells);

}  // namespace feedrate
