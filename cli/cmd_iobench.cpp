// `feedrate iobench`: a fio/gdsio-like grid (rw x block size x queue depth x threads) against one file, with
// latency percentiles, reduced over MPI ranks; or, for --path s3://bucket/prefix, the S3 grid (GET/PUT x object size
// x concurrency). The grids are emulator/iobench; this file has the options, the table and the results files.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "emulator/host/comm.h"
#include "emulator/iobench/iobench_grid.h"
#include "emulator/iobench/s3_grid.h"
#include "emulator/results/results.h"
#include "loader/io/safe_file.h"
#include "loader/iobench/iobench.h"
#include "loader/s3/s3_config.h"
#include "loader/util/exit_codes.h"

namespace feedrate::cli {
namespace {

struct IobenchArgs {
  std::string path, results_dir, engine = "auto", size_text;
  std::vector<std::string> rw{"read"}, bs{"4k", "128k", "1m"};
  std::vector<uint32_t> qd{1, 8, 32}, threads{1};
  double runtime = 5, ramp = 0;
  uint32_t submit_batch = 1;
  int rwmixread = 50;
  bool direct = false, verify = false;
  uint64_t seed = 1;
  XferMode xfer = XferMode::kHost;
  int gpu = 0;
  // The S3 grid's (--path s3://...): sizes as given, parsed once the command runs.
  std::string endpoint = "https://s3.amazonaws.com", region = "us-east-1";
  bool virtual_host = false;
  std::vector<unsigned> concurrency{1, 8, 32};
  std::vector<std::string> object_sizes{"16m"};
  std::string part_size = "8m";
};


void RegisterIobenchOptions(CLI::App* sub, IobenchArgs& a) {
  sub->add_option("--path", a.path, "file, or directory to hold feedrate-iobench.dat, or s3://bucket/prefix for the "
                                     "S3 grid (GET/PUT x --object-size x --concurrency)")->required();
  sub->add_option("--rw", a.rw, "read, randread, write, randwrite, randrw (comma-separated list)")
      ->delimiter(',')
      ->check(CLI::IsMember({"read", "randread", "write", "randwrite", "randrw"}));
  sub->add_option("--bs", a.bs, "block sizes, e.g. 4k,64k,1m")->delimiter(',')->check(CLI::Validator(CheckBytes, "SIZE"));
  sub->add_option("--qd", a.qd, "queue depths per thread")->delimiter(',')->check(CLI::Range(1u, 4096u));
  sub->add_option("--threads", a.threads, "threads per rank")->delimiter(',')->check(CLI::Range(1u, 4096u));
  sub->add_option("--rwmixread", a.rwmixread, "randrw: percent reads")->check(CLI::Range(0, 100));
  sub->add_option("--engine", a.engine, "auto, uring or posix")->check(CLI::IsMember({"auto", "uring", "posix"}));
  sub->add_flag("--direct,--odirect", a.direct, "O_DIRECT (fio's name; --odirect as in run and checkpoint)");
  sub->add_option("--xfer", a.xfer,
                  "gdsio's transfer modes: cpuonly (host memory; default), cpu_gpu, cpu_async_gpu, cpu_cached_gpu, "
                  "gpud (GPUDirect Storage), gpu_batch (cuFile batch API), gpud_async (cuFileReadAsync on a CUDA stream); "
                  "the GPU modes read only (docs/gpu.md)")
      ->transform(Choices<XferMode>({{"cpuonly", XferMode::kHost}, {"cpu_gpu", XferMode::kCpuGpu},
                                     {"cpu_async_gpu", XferMode::kCpuAsyncGpu}, {"cpu_cached_gpu", XferMode::kCpuCachedGpu},
                                     {"gpud", XferMode::kGpuDirect}, {"gpu_batch", XferMode::kGpuBatch},
                                     {"gpud_async", XferMode::kGpuDirectAsync}}));
  sub->add_option("--gpu", a.gpu, "the GPU the --xfer modes land blocks in (default 0)")->check(NonNegativeNumber());
  sub->add_option("--size", a.size_text, "bytes of the file to use (default: the file's size, 1g for a new file)")
      ->check(CLI::Validator(CheckBytes, "SIZE"));
  sub->add_option("--runtime", a.runtime, "measured seconds per cell")->check(PositiveNumber());
  sub->add_option("--submit-batch", a.submit_batch,
                  "I/Os prepared per submission (like fio's iodepth_batch_submit; 1 submits each at once)")
      ->check(CLI::Range(1u, 4096u));
  sub->add_option("--ramp-time", a.ramp, "seconds per cell before measuring")->check(NonNegativeNumber());
  sub->add_flag("--verify", a.verify, "writes lay down a seeded pattern, reads check it");
  sub->add_option("--seed", a.seed, "pattern seed for --verify");
  sub->add_option("--results-dir", a.results_dir, "where iobench.json/csv go (default feedrate-results/<timestamp>_iobench)");
  sub->add_option("--endpoint", a.endpoint, "S3: the endpoint URL (default https://s3.amazonaws.com)")->check(NoCredentialInUrl());
  sub->add_option("--region", a.region, "S3: the SigV4 region (default us-east-1)");
  sub->add_flag("--virtual-host", a.virtual_host, "S3: bucket.host/key URLs instead of host/bucket/key");
  sub->add_option("--object-size", a.object_sizes, "S3: object sizes, e.g. 1m,50m (default 16m)")
      ->delimiter(',')
      ->check(CLI::Validator(CheckBytes, "SIZE"));
  sub->add_option("--part-size", a.part_size, "S3: bytes per ranged GET (default 8m; objects smaller are read whole)")
      ->check(CLI::Validator(CheckBytes, "SIZE"));
  sub->add_option("--concurrency", a.concurrency, "S3: requests in flight, e.g. 1,8,32")
      ->delimiter(',')
      ->check(CLI::Range(1u, 1024u));
}

// Writes <dir>/<name>.json and <name>.csv (temporary name, rename) and says where; the exit code (0, or 2 with the
// error printed). Both grids end with it.
int WriteBenchResults(const std::string& dir, const std::string& name, const nlohmann::json& doc, const std::string& csv) {
  Status w = WriteFileSafely(dir + "/" + name + ".json", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (w.ok()) w = WriteFileSafely(dir + "/" + name + ".csv", csv);
  if (!w.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", w.ToString().c_str());
    return kExitError;
  }
  std::printf("results: %s\n", dir.c_str());
  return kExitPass;
}

// The S3 grid's cells from the command line: --rw read/write as GET/PUT, the sizes parsed (CheckBytes took them).
Result<S3IobenchGrid> S3GridOf(const IobenchArgs& a) {
  S3IobenchGrid g;
  g.ops.clear();
  for (const auto& rw : a.rw) {
    if (rw != "read" && rw != "write") {
      return Status::InvalidArgument("--rw " + rw + ": S3 cells are read (GET) or write (PUT)");
    }
    g.ops.push_back(rw == "read" ? "get" : "put");
  }
  g.object_sizes.clear();
  for (const auto& o : a.object_sizes) g.object_sizes.push_back(ParseBytes(o));
  g.part_size = ParseBytes(a.part_size);
  g.concurrency = a.concurrency;
  g.runtime_s = a.runtime;
  return g;
}

void PrintS3Cell(const nlohmann::json& c) {
  std::printf("%-4s %11llu %10llu %5u %10.1f %9.1f %10.2f %10.2f %10.2f %10.2f %9.3f\n", c["op"].get<std::string>().c_str(),
              static_cast<unsigned long long>(c["object_size"].get<uint64_t>()),
              static_cast<unsigned long long>(c["request_size"].get<uint64_t>()), c["concurrency"].get<unsigned>(),
              c["mib_per_s"].get<double>(), c["requests_per_s"].get<double>(), c["ttfb_ms"]["p50"].get<double>(),
              c["ttfb_ms"]["p99"].get<double>(), c["lat_ms"]["p50"].get<double>(), c["lat_ms"]["p99"].get<double>(),
              c["cpu_s_per_gib"].get<double>());
  std::fflush(stdout);
}

// The S3 grid: one process, curl's multi interface for concurrency (emulator/iobench/s3_grid.h); the table on
// stdout, and s3bench.json's document. Credentials stay out of the output and the results: only where they came from.
Result<nlohmann::json> RunS3Grid(const IobenchArgs& a, const std::string& dir) {
  FEEDRATE_ASSIGN_OR_RETURN(const S3IobenchGrid grid, S3GridOf(a));
  FEEDRATE_ASSIGN_OR_RETURN(const auto loc, ParseS3Url(a.path));
  FEEDRATE_ASSIGN_OR_RETURN(const auto cred, LoadS3Credentials());
  const S3Endpoint endpoint{a.endpoint, a.region, !a.virtual_host, {}};
  const unsigned most = *std::max_element(grid.concurrency.begin(), grid.concurrency.end());
  FEEDRATE_ASSIGN_OR_RETURN(auto client, S3Client::Create(endpoint, cred, loc.bucket, {.max_parallel = most}));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Errno("cannot create results directory " + dir, ec.value());
  std::printf("iobench %s at %s (credentials: %s), %.1f s per cell\n", a.path.c_str(), endpoint.url.c_str(),
              cred.source.c_str(), a.runtime);
  std::printf("%-4s %11s %10s %5s %10s %9s %10s %10s %10s %10s %9s\n", "op", "object", "request", "conc", "MiB/s", "req/s",
              "ttfb p50ms", "ttfb p99ms", "lat p50ms", "lat p99ms", "CPU s/GiB");
  FEEDRATE_ASSIGN_OR_RETURN(const auto cells, RunS3IobenchGrid(*client, loc.prefix, grid, PrintS3Cell));
  return nlohmann::json{{"url", a.path},           {"endpoint", endpoint.url}, {"region", endpoint.region},
                        {"path_style", endpoint.path_style}, {"credentials_source", cred.source},
                        {"runtime_s", a.runtime}, {"version", FEEDRATE_VERSION}, {"cells", cells}};
}

// The file grid's options; a directory gets one file per rank inside it.
IoBenchOptions IobenchFileOptions(const IobenchArgs& a, const Comm& comm) {
  IoBenchOptions o;
  o.path = a.path;
  std::error_code ec;
  if (std::filesystem::is_directory(o.path, ec)) {
    o.path += comm.size() > 1 ? "/feedrate-iobench." + std::to_string(comm.rank()) + ".dat" : "/feedrate-iobench.dat";
  }
  o.size = a.size_text.empty() ? 0 : ParseBytes(a.size_text);
  o.runtime_s = a.runtime;
  o.ramp_s = a.ramp;
  o.submit_batch = a.submit_batch;
  o.rwmixread = a.rwmixread;
  o.engine = a.engine;
  o.direct = a.direct;
  o.verify = a.verify;
  o.seed = a.seed;
  o.xfer = a.xfer;
  o.gpu = a.gpu;
  return o;
}

// The results folder (rank 0) and the file every rank measures (laid down when a cell writes or it is missing).
Status PrepareFileGrid(const IobenchArgs& a, const Comm& comm, const std::string& dir, IoBenchOptions* o) {
  if (comm.root()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::Errno("cannot create results directory " + dir, ec.value());
  }
  bool writes = false;
  for (const auto& rw : a.rw) writes |= rw != "read" && rw != "randread";
  FEEDRATE_ASSIGN_OR_RETURN(o->size, PrepareIoBenchFile(*o, writes));
  return Status::Ok();
}

void PrintIobenchHeader(const IoBenchOptions& o, int ranks) {
  std::printf("iobench %s: %llu bytes, %d rank(s), %.1f s per cell%s%s%s\n", o.path.c_str(),
              static_cast<unsigned long long>(o.size), ranks, o.runtime_s, o.direct ? ", O_DIRECT" : "",
              IsGpuXfer(o.xfer) ? ", --xfer " : "", IsGpuXfer(o.xfer) ? XferName(o.xfer) : "");
  std::printf("%-9s %7s %5s %7s %6s %10s %10s %9s %9s %9s %9s %9s\n", "rw", "bs", "qd", "threads", "engine", "MiB/s",
              "IOPS", "p50 us", "p99 us", "p99.9 us", "max us", "CPU s/GiB");
}

void PrintIobenchCell(const nlohmann::json& j, bool first) {
  const std::string detail = j.value("engine_detail", std::string());
  if (first && !detail.empty()) std::printf("served by: %s\n", detail.c_str());
  const auto& lat = j["lat_us"];
  std::printf("%-9s %7llu %5u %7u %6s %10.1f %10.0f %9.1f %9.1f %9.1f %9.1f %9.3f\n", j["rw"].get<std::string>().c_str(),
              static_cast<unsigned long long>(j["bs"].get<uint64_t>()), j["qd"].get<uint32_t>(), j["threads"].get<uint32_t>(),
              j["engine"].get<std::string>().c_str(), j["mib_per_s"].get<double>(), j["iops"].get<double>(),
              lat["p50"].get<double>(), lat["p99"].get<double>(), lat["p999"].get<double>(), lat["max"].get<double>(),
              j["cpu_s_per_gib"].get<double>());
  std::fflush(stdout);
}

// The file grid on every rank (mpirun or --hosts), reduced over the ranks; rank 0 prints and writes the results.
int RunFileGrid(const IobenchArgs& a, int* argc, char*** argv) {
  Comm comm(argc, argv);
  IoBenchOptions o = IobenchFileOptions(a, comm);
  std::vector<uint64_t> sizes;
  for (const auto& b : a.bs) sizes.push_back(ParseBytes(b));
  const std::string dir = ResultsDirOr(a.results_dir, "iobench");
  if (const std::string msg = comm.AgreeFirstError(PrepareFileGrid(a, comm, dir, &o)); !msg.empty()) {
    if (comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", msg.c_str());
    return kExitError;
  }
  if (comm.root()) PrintIobenchHeader(o, comm.size());
  bool first = true;
  auto cells = RunIobenchGrid(comm, o, IobenchGrid{a.rw, sizes, a.qd, a.threads}, [&](const nlohmann::json& j) {
    PrintIobenchCell(j, first);
    first = false;
  });
  if (!cells.ok()) {
    if (comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", cells.status().ToString().c_str());
    return kExitError;
  }
  if (!comm.root()) return kExitPass;
  nlohmann::json doc = {{"path", o.path},        {"size", o.size},     {"ranks", comm.size()},
                        {"runtime_s", o.runtime_s}, {"ramp_s", o.ramp_s}, {"submit_batch", o.submit_batch}, {"direct", o.direct},
                        {"verify", o.verify},    {"xfer", XferName(o.xfer)}, {"gpu", o.gpu},
                        {"version", FEEDRATE_VERSION}, {"cells", *cells}};
  return WriteBenchResults(dir, "iobench", doc, IobenchCsv(*cells));
}

}  // namespace

Runner AddIobench(CLI::App& app, int* argc, char*** argv) {
  auto* sub = app.add_subcommand("iobench", "fio/gdsio-like grid of block size x queue depth x threads on one file");
  auto a = std::make_shared<IobenchArgs>();
  RegisterIobenchOptions(sub, *a);
  return [=] {
    if (a->path.rfind("s3://", 0) != 0) return RunFileGrid(*a, argc, argv);
    const std::string dir = ResultsDirOr(a->results_dir, "s3bench");
    const auto doc = RunS3Grid(*a, dir);
    if (!doc.ok()) {
      std::fprintf(stderr, "feedrate: error: %s\n", doc.status().ToString().c_str());
      return kExitError;
    }
    return WriteBenchResults(dir, "s3bench", *doc, S3IobenchCsv((*doc)["cells"]));
  };
}

}  // namespace feedrate::cli
