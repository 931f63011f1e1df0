// `feedrate iobench`: a fio/gdsio-like grid (rw x block size x queue depth x threads) against one file, with
// latency percentiles, reduced over MPI ranks; table on stdout, iobench.json and iobench.csv in the results dir.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cmd_iobench_s3.h"
#include "cli/commands.h"
#include "emulator/host/comm.h"
#include "emulator/results/results.h"
#include "loader/iobench/iobench.h"

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
};

// Every rank's cell results folded into one: bytes and I/Os summed, the window the longest, the histogram merged.
struct Cell {
  IoBenchCell cell;
  IoBenchResult r;
  double last_done_seconds = 0;
};

Cell Reduce(const Comm& comm, const IoBenchCell& cell, IoBenchResult r) {
  std::vector<double> v(LatencyHistogram::kBuckets + 6);
  auto& counts = r.latency.counts();
  for (size_t i = 0; i < counts.size(); ++i) v[i] = static_cast<double>(counts[i]);
  size_t k = counts.size();
  v[k] = static_cast<double>(r.read_bytes);
  v[k + 1] = static_cast<double>(r.write_bytes);
  v[k + 2] = static_cast<double>(r.ios);
  v[k + 3] = r.cpu_seconds;
  v[k + 4] = static_cast<double>(r.latency.total());
  v[k + 5] = static_cast<double>(r.first_done_bytes);
  comm.SumInPlace(&v);
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<uint64_t>(v[i]);
  Cell out{cell, r, comm.MaxDouble(r.seconds)};
  out.r.latency.set_total_and_max(static_cast<uint64_t>(v[k + 4]), static_cast<uint64_t>(comm.MaxDouble(static_cast<double>(r.latency.max()))));
  out.r.read_bytes = static_cast<uint64_t>(v[k]);
  out.r.write_bytes = static_cast<uint64_t>(v[k + 1]);
  out.r.ios = static_cast<uint64_t>(v[k + 2]);
  out.r.cpu_seconds = v[k + 3];
  out.r.first_done_bytes = static_cast<uint64_t>(v[k + 5]);
  // First done: the earliest rank (and thread) to finish; throughput up to then, over all ranks' bytes.
  out.r.first_done_seconds = -comm.MaxDouble(-r.first_done_seconds);
  return out;
}

nlohmann::json ToJson(const Cell& c) {
  const double bytes = static_cast<double>(c.r.read_bytes + c.r.write_bytes);
  const double secs = c.last_done_seconds > 0 ? c.last_done_seconds : 1e-9;
  const auto us = [&](double p) { return static_cast<double>(c.r.latency.Percentile(p)) / 1000.0; };
  return {{"rw", c.cell.rw},
          {"bs", c.cell.bs},
          {"qd", c.cell.qd},
          {"threads", c.cell.threads},
          {"engine", c.r.engine},
          {"engine_detail", c.r.detail},
          {"mib_per_s", bytes / 1048576.0 / secs},
          {"read_mib_per_s", static_cast<double>(c.r.read_bytes) / 1048576.0 / secs},
          {"write_mib_per_s", static_cast<double>(c.r.write_bytes) / 1048576.0 / secs},
          {"iops", static_cast<double>(c.r.ios) / secs},
          {"ios", c.r.ios},
          {"lat_us", {{"p50", us(50)}, {"p90", us(90)}, {"p99", us(99)}, {"p999", us(99.9)}, {"max", us(100)}}},
          {"cpu_s_per_gib", bytes > 0 ? c.r.cpu_seconds / (bytes / 1073741824.0) : 0.0},
          {"first_done_mib_per_s", c.r.first_done_seconds > 0
                                       ? static_cast<double>(c.r.first_done_bytes) / 1048576.0 / c.r.first_done_seconds
                                       : 0.0},
          {"last_done_mib_per_s", bytes / 1048576.0 / secs},
          {"seconds", secs}};
}

}  // namespace

Runner AddIobench(CLI::App& app, int* argc, char*** argv) {
  auto* sub = app.add_subcommand("iobench", "fio/gdsio-like grid of block size x queue depth x threads on one file");
  auto a = std::make_shared<IobenchArgs>();
  sub->add_option("--path", a->path, "file, or directory to hold feedrate-iobench.dat, or s3://bucket/prefix for the "
                                     "S3 grid (GET/PUT x --object-size x --concurrency)")->required();
  sub->add_option("--rw", a->rw, "read, randread, write, randwrite, randrw (comma-separated list)")
      ->delimiter(',')
      ->check(CLI::IsMember({"read", "randread", "write", "randwrite", "randrw"}));
  sub->add_option("--bs", a->bs, "block sizes, e.g. 4k,64k,1m")->delimiter(',')->check(CLI::Validator(CheckBytes, "SIZE"));
  sub->add_option("--qd", a->qd, "queue depths per thread")->delimiter(',')->check(CLI::Range(1u, 4096u));
  sub->add_option("--threads", a->threads, "threads per rank")->delimiter(',')->check(CLI::Range(1u, 4096u));
  sub->add_option("--rwmixread", a->rwmixread, "randrw: percent reads")->check(CLI::Range(0, 100));
  sub->add_option("--engine", a->engine, "auto, uring or posix")->check(CLI::IsMember({"auto", "uring", "posix"}));
  sub->add_flag("--direct", a->direct, "O_DIRECT");
  sub->add_option("--xfer", a->xfer,
                  "gdsio's transfer modes: cpuonly (host memory; default), cpu_gpu, cpu_async_gpu, cpu_cached_gpu, "
                  "gpud (GPUDirect Storage), gpu_batch (cuFile batch API), gpud_async (cuFileReadAsync on a CUDA stream); "
                  "the GPU modes read only (docs/gpu.md)")
      ->transform(Choices<XferMode>({{"cpuonly", XferMode::kHost}, {"cpu_gpu", XferMode::kCpuGpu},
                                     {"cpu_async_gpu", XferMode::kCpuAsyncGpu}, {"cpu_cached_gpu", XferMode::kCpuCachedGpu},
                                     {"gpud", XferMode::kGpuDirect}, {"gpu_batch", XferMode::kGpuBatch},
                                     {"gpud_async", XferMode::kGpuDirectAsync}}));
  sub->add_option("--gpu", a->gpu, "the GPU the --xfer modes land blocks in (default 0)")->check(NonNegativeNumber());
  sub->add_option("--size", a->size_text, "bytes of the file to use (default: the file's size, 1g for a new file)")
      ->check(CLI::Validator(CheckBytes, "SIZE"));
  sub->add_option("--runtime", a->runtime, "measured seconds per cell")->check(PositiveNumber());
  sub->add_option("--submit-batch", a->submit_batch,
                  "I/Os prepared per submission (like fio's iodepth_batch_submit; 1 submits each at once)")
      ->check(CLI::Range(1u, 4096u));
  sub->add_option("--ramp-time", a->ramp, "seconds per cell before measuring")->check(NonNegativeNumber());
  sub->add_flag("--verify", a->verify, "writes lay down a seeded pattern, reads check it");
  sub->add_option("--seed", a->seed, "pattern seed for --verify");
  sub->add_option("--results-dir", a->results_dir, "where iobench.json/csv go (default results/<timestamp>_iobench)");
  auto s3 = std::make_shared<S3IobenchArgs>();
  auto object_sizes = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"16m"});
  auto part_size = std::make_shared<std::string>("8m");
  sub->add_option("--endpoint", s3->endpoint, "S3: the endpoint URL (default https://s3.amazonaws.com)");
  sub->add_option("--region", s3->region, "S3: the SigV4 region (default us-east-1)");
  sub->add_flag("--virtual-host", s3->virtual_host, "S3: bucket.host/key URLs instead of host/bucket/key");
  sub->add_option("--object-size", *object_sizes, "S3: object sizes, e.g. 1m,50m (default 16m)")
      ->delimiter(',')
      ->check(CLI::Validator(CheckBytes, "SIZE"));
  sub->add_option("--part-size", *part_size, "S3: bytes per ranged GET (default 8m; objects smaller are read whole)")
      ->check(CLI::Validator(CheckBytes, "SIZE"));
  sub->add_option("--concurrency", s3->concurrency, "S3: requests in flight, e.g. 1,8,32")
      ->delimiter(',')
      ->check(CLI::Range(1u, 1024u));
  return [=] {
    if (a->path.rfind("s3://", 0) == 0) {  // the S3 grid: one process, curl's multi interface for concurrency
      S3IobenchArgs x = *s3;
      x.url = a->path;
      x.results_dir = a->results_dir;
      x.runtime = a->runtime;
      x.ops.clear();
      for (const auto& rw : a->rw) {
        if (rw != "read" && rw != "write") {
          std::fprintf(stderr, "feedrate: error: --rw %s: S3 cells are read (GET) or write (PUT)\n", rw.c_str());
          return 2;
        }
        x.ops.push_back(rw == "read" ? "get" : "put");
      }
      try {
        x.object_sizes.clear();
        for (const auto& o : *object_sizes) x.object_sizes.push_back(ParseBytes(o));
        x.part_size = ParseBytes(*part_size);
      } catch (const CLI::ValidationError& e) {
        std::fprintf(stderr, "feedrate: error: %s\n", e.what());
        return 2;
      }
      return RunS3Iobench(x);
    }
    Comm comm(argc, argv);
    IoBenchOptions o;
    o.path = a->path;
    std::error_code ec;
    if (std::filesystem::is_directory(o.path, ec)) {
      o.path += comm.size() > 1 ? "/feedrate-iobench." + std::to_string(comm.rank()) + ".dat" : "/feedrate-iobench.dat";
    }
    o.size = a->size_text.empty() ? 0 : ParseBytes(a->size_text);
    o.runtime_s = a->runtime;
    o.ramp_s = a->ramp;
    o.submit_batch = a->submit_batch;
    o.rwmixread = a->rwmixread;
    o.engine = a->engine;
    o.direct = a->direct;
    o.verify = a->verify;
    o.seed = a->seed;
    o.xfer = a->xfer;
    o.gpu = a->gpu;
    std::vector<uint64_t> sizes;
    for (const auto& b : a->bs) sizes.push_back(ParseBytes(b));
    std::string dir = ResultsDirOr(a->results_dir, "iobench");
    Status st;
    if (comm.root()) {
      std::filesystem::create_directories(dir, ec);
      if (ec) st = Status::Errno("cannot create results directory " + dir, ec.value());
    }
    bool writes = false;
    for (const auto& rw : a->rw) writes |= rw != "read" && rw != "randread";
    if (st.ok()) {
      auto size = PrepareIoBenchFile(o, writes);
      if (size.ok()) o.size = *size; else st = size.status();
    }
    auto fail = [&](const Status& local) {
      const std::string msg = comm.AgreeFirstError(local);
      if (msg.empty()) return false;
      if (comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", msg.c_str());
      return true;
    };
    if (fail(st)) return 2;
    if (comm.root()) {
      std::printf("iobench %s: %llu bytes, %d rank(s), %.1f s per cell%s%s%s\n", o.path.c_str(),
                  static_cast<unsigned long long>(o.size), comm.size(), o.runtime_s, o.direct ? ", O_DIRECT" : "",
                  IsGpuXfer(o.xfer) ? ", --xfer " : "", IsGpuXfer(o.xfer) ? XferName(o.xfer) : "");
      std::printf("%-9s %7s %5s %7s %6s %10s %10s %9s %9s %9s %9s %9s\n", "rw", "bs", "qd", "threads", "engine", "MiB/s",
                  "IOPS", "p50 us", "p99 us", "p99.9 us", "max us", "CPU s/GiB");
    }
    nlohmann::json cells = nlohmann::json::array();
    std::ostringstream csv;
    csv << "rw,bs,qd,threads,engine,mib_per_s,iops,lat_p50_us,lat_p90_us,lat_p99_us,lat_p999_us,lat_max_us,cpu_s_per_gib,"
           "first_done_mib_per_s,last_done_mib_per_s\n";
    for (const auto& rw : a->rw) {
      for (uint64_t bs : sizes) {
        for (uint32_t qd : a->qd) {
          for (uint32_t th : a->threads) {
            IoBenchCell cell{rw, bs, qd, th};
            comm.Barrier();  // every rank starts the cell together
            auto r = RunIoBenchCell(o, cell);
            if (fail(r.ok() ? Status::Ok() : r.status())) return 2;
            if (comm.root() && !r->detail.empty() && cells.empty()) std::printf("served by: %s\n", r->detail.c_str());
            Cell c = Reduce(comm, cell, std::move(*r));
            nlohmann::json j = ToJson(c);
            cells.push_back(j);
            csv << rw << ',' << bs << ',' << qd << ',' << th << ',' << j["engine"].get<std::string>() << ','
                << j["mib_per_s"].get<double>() << ',' << j["iops"].get<double>() << ',' << j["lat_us"]["p50"].get<double>()
                << ',' << j["lat_us"]["p90"].get<double>() << ',' << j["lat_us"]["p99"].get<double>() << ','
                << j["lat_us"]["p999"].get<double>() << ',' << j["lat_us"]["max"].get<double>() << ','
                << j["cpu_s_per_gib"].get<double>() << ',' << j["first_done_mib_per_s"].get<double>() << ','
                << j["last_done_mib_per_s"].get<double>() << '\n';
            if (comm.root()) {
              std::printf("%-9s %7llu %5u %7u %6s %10.1f %10.0f %9.1f %9.1f %9.1f %9.1f %9.3f\n", rw.c_str(),
                          static_cast<unsigned long long>(bs), qd, th, j["engine"].get<std::string>().c_str(),
                          j["mib_per_s"].get<double>(), j["iops"].get<double>(), j["lat_us"]["p50"].get<double>(),
                          j["lat_us"]["p99"].get<double>(), j["lat_us"]["p999"].get<double>(),
                          j["lat_us"]["max"].get<double>(), j["cpu_s_per_gib"].get<double>());
              std::fflush(stdout);
            }
          }
        }
      }
    }
    if (!comm.root()) return 0;
    nlohmann::json doc = {{"path", o.path},        {"size", o.size},     {"ranks", comm.size()},
                          {"runtime_s", o.runtime_s}, {"ramp_s", o.ramp_s}, {"submit_batch", o.submit_batch}, {"direct", o.direct},
                          {"verify", o.verify},    {"xfer", XferName(o.xfer)}, {"gpu", o.gpu},
                          {"version", FEEDRATE_VERSION}, {"cells", cells}};
    return WriteBenchResults(dir, "iobench", doc.dump(2) + "\n", csv.str());
  };
}

}  // namespace feedrate::cli
