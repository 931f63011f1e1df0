// iobench's S3 grid (s3_grid.h).
#include "emulator/iobench/s3_grid.h"

#include <algorithm>
#include <sstream>

#include "loader/s3/s3_bench.h"

namespace feedrate {

namespace {

double Ms(const LatencyHistogram& h, double p) { return static_cast<double>(h.Percentile(p)) / 1e6; }

nlohmann::json CellJson(const S3BenchCell& cell, uint64_t request, const S3BenchResult& x) {
  const double secs = x.seconds > 0 ? x.seconds : 1e-9, gib = static_cast<double>(x.bytes) / (1 << 30);
  return {{"op", cell.op},
          {"object_size", cell.object_size},
          {"request_size", request},
          {"concurrency", cell.concurrency},
          {"bytes", x.bytes},
          {"requests", x.requests},
          {"seconds", secs},
          {"mib_per_s", static_cast<double>(x.bytes) / 1048576.0 / secs},
          {"requests_per_s", static_cast<double>(x.requests) / secs},
          {"ttfb_ms", {{"p50", Ms(x.ttfb, 50)}, {"p90", Ms(x.ttfb, 90)}, {"p99", Ms(x.ttfb, 99)}}},
          {"lat_ms", {{"p50", Ms(x.latency, 50)}, {"p90", Ms(x.latency, 90)}, {"p99", Ms(x.latency, 99)},
                      {"max", Ms(x.latency, 100)}}},
          {"cpu_seconds", x.cpu_seconds},
          {"cpu_s_per_gib", gib > 0 ? x.cpu_seconds / gib : 0.0}};
}

}  // namespace

Result<nlohmann::json> RunS3IobenchGrid(S3Client& s3, const std::string& prefix, const S3IobenchGrid& grid,
                                        const std::function<void(const nlohmann::json& cell)>& on_cell) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& op : grid.ops) {
    for (uint64_t size : grid.object_sizes) {
      for (unsigned conc : grid.concurrency) {
        const S3BenchCell cell{op, size, grid.part_size, conc};
        FEEDRATE_ASSIGN_OR_RETURN(auto result, RunS3BenchCell(s3, prefix, cell, grid.runtime_s));
        const uint64_t request = op == "get" ? std::min(grid.part_size == 0 ? size : grid.part_size, size) : size;
        cells.push_back(CellJson(cell, request, result));
        if (on_cell) on_cell(cells.back());
      }
    }
  }
  return cells;
}

std::string S3IobenchCsv(const nlohmann::json& cells) {
  std::ostringstream csv;
  csv << "op,object_size,request_size,concurrency,mib_per_s,requests_per_s,ttfb_p50_ms,ttfb_p99_ms,lat_p50_ms,lat_p90_ms,"
         "lat_p99_ms,lat_max_ms,cpu_s_per_gib\n";
  for (const auto& c : cells) {
    csv << c["op"].get<std::string>() << ',' << c["object_size"] << ',' << c["request_size"] << ',' << c["concurrency"]
        << ',' << c["mib_per_s"].get<double>() << ',' << c["requests_per_s"].get<double>() << ','
        << c["ttfb_ms"]["p50"].get<double>() << ',' << c["ttfb_ms"]["p99"].get<double>() << ','
        << c["lat_ms"]["p50"].get<double>() << ',' << c["lat_ms"]["p90"].get<double>() << ','
        << c["lat_ms"]["p99"].get<double>() << ',' << c["lat_ms"]["max"].get<double>() << ','
        << c["cpu_s_per_gib"].get<double>() << '\n';
  }
  return csv.str();
}

}  // namespace feedrate
