// `feedrate iobench --path s3://bucket/prefix`: the S3 grid (GET/PUT x object size x concurrency), single process;
// table on stdout, s3bench.json and s3bench.csv in the results dir.
#include "cli/cmd_iobench_s3.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "emulator/results/results.h"
#include "loader/s3/s3_bench.h"
#include "loader/util/exit_codes.h"
#include "loader/io/safe_file.h"

namespace feedrate::cli {

int RunS3Iobench(const S3IobenchArgs& a) {
  auto loc = ParseS3Url(a.url);
  if (!loc.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", loc.status().ToString().c_str());
    return kExitError;
  }
  auto cred = LoadS3Credentials();
  if (!cred.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", cred.status().ToString().c_str());
    return kExitError;
  }
  S3Endpoint endpoint{a.endpoint, a.region, !a.virtual_host, {}};
  unsigned most = 1;
  for (unsigned c : a.concurrency) most = std::max(most, c);
  auto client = S3Client::Create(endpoint, cred.value(), loc.value().bucket, {.max_parallel = most});
  if (!client.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", client.status().ToString().c_str());
    return kExitError;
  }
  const std::string dir = ResultsDirOr(a.results_dir, "s3bench");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "feedrate: error: cannot create results directory %s: %s\n", dir.c_str(), ec.message().c_str());
    return kExitError;
  }
  std::printf("iobench %s at %s (credentials: %s), %.1f s per cell\n", a.url.c_str(), endpoint.url.c_str(),
              cred.value().source.c_str(), a.runtime);
  std::printf("%-4s %11s %10s %5s %10s %9s %10s %10s %10s %10s %9s\n", "op", "object", "request", "conc", "MiB/s", "req/s",
              "ttfb p50ms", "ttfb p99ms", "lat p50ms", "lat p99ms", "CPU s/GiB");
  nlohmann::json cells = nlohmann::json::array();
  std::ostringstream csv;
  csv << "op,object_size,request_size,concurrency,mib_per_s,requests_per_s,ttfb_p50_ms,ttfb_p99_ms,lat_p50_ms,lat_p90_ms,"
         "lat_p99_ms,lat_max_ms,cpu_s_per_gib\n";
  for (const auto& op : a.ops) {
    for (uint64_t size : a.object_sizes) {
      for (unsigned conc : a.concurrency) {
        S3BenchCell cell{op, size, a.part_size, conc};
        auto r = RunS3BenchCell(*client.value(), loc.value().prefix, cell, a.runtime);
        if (!r.ok()) {
          std::fprintf(stderr, "feedrate: error: %s\n", r.status().ToString().c_str());
          return kExitError;
        }
        const S3BenchResult& x = r.value();
        const double secs = x.seconds > 0 ? x.seconds : 1e-9, gib = static_cast<double>(x.bytes) / (1 << 30);
        auto ms = [](const LatencyHistogram& h, double p) { return static_cast<double>(h.Percentile(p)) / 1e6; };
        const uint64_t request = op == "get" ? std::min(a.part_size == 0 ? size : a.part_size, size) : size;
        nlohmann::json j = {{"op", op},
                            {"object_size", size},
                            {"request_size", request},
                            {"concurrency", conc},
                            {"bytes", x.bytes},
                            {"requests", x.requests},
                            {"seconds", secs},
                            {"mib_per_s", static_cast<double>(x.bytes) / 1048576.0 / secs},
                            {"requests_per_s", static_cast<double>(x.requests) / secs},
                            {"ttfb_ms", {{"p50", ms(x.ttfb, 50)}, {"p90", ms(x.ttfb, 90)}, {"p99", ms(x.ttfb, 99)}}},
                            {"lat_ms", {{"p50", ms(x.latency, 50)}, {"p90", ms(x.latency, 90)}, {"p99", ms(x.latency, 99)},
                                        {"max", ms(x.latency, 100)}}},
                            {"cpu_seconds", x.cpu_seconds},
                            {"cpu_s_per_gib", gib > 0 ? x.cpu_seconds / gib : 0.0}};
        cells.push_back(j);
        csv << op << ',' << size << ',' << request << ',' << conc << ',' << j["mib_per_s"].get<double>() << ','
            << j["requests_per_s"].get<double>() << ',' << ms(x.ttfb, 50) << ',' << ms(x.ttfb, 99) << ','
            << ms(x.latency, 50) << ',' << ms(x.latency, 90) << ',' << ms(x.latency, 99) << ',' << ms(x.latency, 100)
            << ',' << j["cpu_s_per_gib"].get<double>() << '\n';
        std::printf("%-4s %11llu %10llu %5u %10.1f %9.1f %10.2f %10.2f %10.2f %10.2f %9.3f\n", op.c_str(),
                    static_cast<unsigned long long>(size), static_cast<unsigned long long>(request), conc,
                    j["mib_per_s"].get<double>(), j["requests_per_s"].get<double>(), ms(x.ttfb, 50), ms(x.ttfb, 99),
                    ms(x.latency, 50), ms(x.latency, 99), j["cpu_s_per_gib"].get<double>());
        std::fflush(stdout);
      }
    }
  }
  // Credentials stay out of the results: only where they came from.
  nlohmann::json doc = {{"url", a.url},           {"endpoint", endpoint.url}, {"region", endpoint.region},
                        {"path_style", endpoint.path_style}, {"credentials_source", cred.value().source},
                        {"runtime_s", a.runtime}, {"version", FEEDRATE_VERSION}, {"cells", cells}};
  return WriteBenchResults(dir, "s3bench", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", csv.str());
}

int WriteBenchResults(const std::string& dir, const std::string& name, const std::string& json, const std::string& csv) {
  Status w = WriteFileSafely(dir + "/" + name + ".json", json);
  if (w.ok()) w = WriteFileSafely(dir + "/" + name + ".csv", csv);
  if (!w.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", w.ToString().c_str());
    return kExitError;
  }
  std::printf("results: %s\n", dir.c_str());
  return kExitPass;
}

}  // namespace feedrate::cli
