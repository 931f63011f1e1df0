// Checkpoint write and read phases, their timing, the reduction over ranks and summary.json.
#include "emulator/checkpoint/checkpoint.h"

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <future>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include <yaml-cpp/yaml.h>

#include "emulator/checkpoint/checkpoint_layout.h"
#include "emulator/host/sysinfo.h"
#include "emulator/results/results.h"
#include "emulator/training/compute_clock.h"
#include "emulator/training/interrupt.h"
#include "emulator/training/metrics.h"
#include "loader/io/fault_injection.h"
#include "loader/io/page_cache.h"
#include "loader/io/stream_io.h"
#include "loader/util/content_pattern.h"

namespace feedrate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr uint64_t kContentSeed = 0xc4ec4;

std::string StepDir(const std::string& dir, uint64_t k) { return dir + "/global_epoch1_step" + std::to_string(k); }

// Markers in a checkpoint's folder: being written (removed once every rank's files are whole, so a job that died
// leaves it), and failed (with the error).
constexpr const char* kInProgress = "FEEDRATE_IN_PROGRESS";
constexpr const char* kIncomplete = "FEEDRATE_INCOMPLETE";

// The first line of a marker file, for messages.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// One rank's files with their scaled sizes.
struct RankPlan {
  RankLayout layout;
  std::vector<CheckpointFile> files;  // scaled
  uint64_t bytes = 0;
};

RankPlan PlanRank(const LlmModel& m, uint64_t world, uint64_t rank, double scale) {
  RankPlan p;
  p.layout = CheckpointLayoutForRank(m, world, rank);
  for (CheckpointFile f : p.layout.files) {
    f.bytes = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(static_cast<double>(f.bytes) * scale)));
    p.bytes += f.bytes;
    p.files.push_back(f);
  }
  return p;
}

// Per checkpoint over ranks: the slowest rank's duration decides (v2.0 rules); also every rank's spread and
// rank 0's own figures, which is what DLIO v2.0 reports without checkpoint.rank_sync.
json Reduce(const std::vector<std::vector<double>>& per_rank, double size_gib) {
  json phase = json::object();
  if (per_rank.empty() || per_rank.front().empty()) return phase;
  const size_t n = per_rank.front().size();
  std::vector<double> dur, tput, r0_dur, r0_tput;
  json checkpoints = json::array();
  for (size_t k = 0; k < n; ++k) {
    double mx = 0, mn = 1e300, sum = 0;
    for (const auto& r : per_rank) {
      mx = std::max(mx, r[k]);
      mn = std::min(mn, r[k]);
      sum += r[k];
    }
    dur.push_back(mx);
    tput.push_back(mx > 0 ? size_gib / mx : 0);
    r0_dur.push_back(per_rank.front()[k]);
    r0_tput.push_back(per_rank.front()[k] > 0 ? size_gib / per_rank.front()[k] : 0);
    checkpoints.push_back({{"checkpoint", k + 1}, {"duration_seconds", mx}, {"GiB_per_second", tput.back()},
                           {"rank_duration_min_seconds", mn}, {"rank_duration_mean_seconds", sum / static_cast<double>(per_rank.size())},
                           {"rank_duration_max_seconds", mx}});
  }
  phase = {{"duration_mean_seconds", Mean(dur)}, {"duration_stdev_seconds", PopulationStdev(dur)}, {"GiB_per_second_mean", Mean(tput)},
           {"GiB_per_second_stdev", PopulationStdev(tput)}, {"checkpoints", checkpoints},
           {"rank0_dlio_compatible", {{"duration_mean_seconds", Mean(r0_dur)}, {"duration_stdev_seconds", PopulationStdev(r0_dur)},
                                      {"GiB_per_second_mean", Mean(r0_tput)}, {"GiB_per_second_stdev", PopulationStdev(r0_tput)},
                                      {"note", "rank 0's own times, what DLIO v2.0 reports without checkpoint.rank_sync"}}}};
  return phase;
}

}  // namespace

int RunCheckpoint(const WorkloadConfig& cfg, const CheckpointOptions& opt, const Comm& comm) {
  const std::string start_iso = NowIso8601();
  const uint64_t ranks = static_cast<uint64_t>(comm.size()), rank = static_cast<uint64_t>(comm.rank());
  std::string results_dir = opt.results_dir.empty() ? "results/" + NowCompact() + "_" + cfg.name : opt.results_dir;
  json summary, f;
  std::vector<std::string> warnings;
  uint64_t written = 0, read = 0;  // checkpoints completed
  std::unique_ptr<FaultInjector> faults;
  // --inject's rules with the requests they matched and the faults they injected, summed over ranks (a collective).
  auto fault_counts = [&] {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& c : faults ? faults->Counts() : std::vector<FaultInjector::RuleCount>{}) {
      rules.push_back({{"rule", c.rule}, {"matched", comm.SumDouble(static_cast<double>(c.matched))},
                       {"injected", comm.SumDouble(static_cast<double>(c.injected))}});
    }
    return rules;
  };
  auto fail = [&](const std::string& error, const std::string& status = "failed", int code = 2) {  // same on every rank
    const nlohmann::json injected = fault_counts();
    if (comm.root()) {
      if (!injected.empty()) f["injected_faults"] = injected;
      std::fprintf(stderr, "feedrate: %s: %s\n", status == "failed" ? "error" : status.c_str(), error.c_str());
      f["status"] = status;
      f["checkpoints_written"] = written;
      f["checkpoints_read"] = read;
      f["error"] = error;
      summary["start"] = start_iso;
      summary["end"] = NowIso8601();
      summary["feedrate"] = f;
      std::error_code ec;
      if (fs::is_directory(results_dir, ec)) (void)WriteFileAtomic(results_dir + "/summary.json", summary.dump(2) + "\n");
    }
    return code;
  };

  // Setup: model, layout, options, results dir, space, I/O.
  Status st;
  LlmModel model;
  CheckpointSettings set;
  uint64_t world = ranks;
  if (comm.root()) {
    std::error_code ec;
    fs::create_directories(results_dir, ec);
    if (ec) st = Status::Errno("cannot create results directory " + results_dir, ec.value());
  }
  try {
    set = CheckpointSettingsFromConfig(cfg);
  } catch (const YAML::Exception& e) {
    st = Status::InvalidArgument(cfg.source + ": the checkpoint section: " + e.what());
  }
  if (st.ok()) {
    auto m = LlmModelFromConfig(cfg);
    if (m.ok()) model = *m; else st = m.status();
  }
  if (st.ok()) {
    auto w = LayoutWorld(model, ranks);
    if (w.ok()) world = *w; else st = w.status();
  }
  if (st.ok() && !(opt.scale > 0 && opt.scale <= 1)) st = Status::InvalidArgument("--scale must be in (0, 1]");
  const std::string dir = opt.dir.empty() ? set.folder : opt.dir;
  const uint64_t num_write = opt.num_write >= 0 ? static_cast<uint64_t>(opt.num_write) : set.num_write;
  const uint64_t num_read = opt.num_read >= 0 ? static_cast<uint64_t>(opt.num_read) : set.num_read;
  const double between = opt.time_between >= 0 ? opt.time_between : set.time_between;
  if (set.fsync == false) warnings.push_back("checkpoint.fsync is off: written checkpoints may still be in the page cache when timed");
  RankPlan plan = st.ok() ? PlanRank(model, world, rank, opt.scale) : RankPlan{};
  if (st.ok() && !opt.inject.empty()) {
    auto p = ParseFaultPlan(opt.inject);
    if (!p.ok()) {
      st = p.status();
    } else {
      // Checkpoint rules act on the writes unless they say op= (eagain is a read fault either way).
      for (auto& r : p->rules) {
        if (!r.op_explicit && r.kind != FaultKind::kEagain) r.op = FaultOp::kWrite;
      }
      faults = std::make_unique<FaultInjector>(std::move(*p));
      warnings.push_back("faults injected into the checkpoint I/O (--inject " + opt.inject + "): the results measure them");
    }
  }
  std::unique_ptr<StreamIo> io;
  if (st.ok()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) st = Status::Errno("cannot create checkpoint folder " + dir, ec.value());
  }
  if (st.ok()) {
    StreamOptions so;
    so.queue_depth = opt.queue_depth;
    so.block = opt.block;
    so.odirect = opt.odirect;
    so.uring = opt.engine != "posix";
    so.faults = faults.get();
    so.stop = InterruptFlag();
    auto s = StreamIo::Create(so);
    if (s.ok()) io = std::move(*s); else st = s.status();
    if (st.ok() && opt.engine == "uring" && io->description().rfind("io_uring", 0) != 0) {
      st = Status::Unsupported("--engine uring: " + io->description());
    }
  }
  std::string err = comm.AgreeFirstError(st);
  if (!err.empty()) return fail(err);

  const double total_bytes = comm.SumDouble(static_cast<double>(plan.bytes));
  const double size_gib = total_bytes / kGiB;
  // Refuse a write phase the file system cannot hold (every checkpoint stays, as DLIO keeps them).
  if (comm.root() && num_write > 0) {
    struct statvfs v {};
    if (::statvfs(dir.c_str(), &v) == 0) {
      const double free_bytes = static_cast<double>(v.f_bavail) * static_cast<double>(v.f_frsize);
      if (total_bytes * static_cast<double>(num_write) > free_bytes) {
        char b[256];
        std::snprintf(b, sizeof b, "%s: not enough space: %llu checkpoint(s) of %.2f GiB need %.2f GiB, the file system has %.2f GiB free",
                      dir.c_str(), static_cast<unsigned long long>(num_write), size_gib, size_gib * static_cast<double>(num_write),
                      free_bytes / kGiB);
        st = Status::IoError(b);
      }
    }
  }
  err = comm.AgreeFirstError(st);
  if (!err.empty()) return fail(err);

  // Write phase: idle, barrier, then this rank's files, timed per rank.
  std::vector<double> write_s, read_s;
  double write_cpu = 0, read_cpu = 0;  // this process's CPU seconds (io_uring workers included) in the timed phases
  for (uint64_t k = 1; k <= num_write && st.ok(); ++k) {
    if (between > 0) SleepUntil(NowNs() + static_cast<int64_t>(between * 1e9));
    const std::string marker = StepDir(dir, k) + "/" + kInProgress;
    std::error_code ec;
    if (comm.root()) {  // marked before any rank starts: a job that dies mid-checkpoint leaves the mark
      fs::create_directories(StepDir(dir, k), ec);
      fs::remove(StepDir(dir, k) + "/" + kIncomplete, ec);
      st = WriteFileAtomic(marker, "checkpoint " + std::to_string(k) + " is being written by " +
                                       std::to_string(comm.size()) + " rank(s) since " + NowIso8601() +
                                       "; this file is removed once every rank's files are whole\n");
    }
    comm.Barrier();
    const int64_t t0 = NowNs();
    const double cpu0 = ProcessCpuSeconds();
    fs::create_directories(StepDir(dir, k), ec);
    if (ec) st = Status::Errno("cannot create " + StepDir(dir, k), ec.value());
    // A file's fsync (and rename) runs on a helper thread while the next file is written, as the device can
    // drain one file while the next one streams in; the checkpoint's time still ends when the last file is
    // durable and named.
    std::future<Status> committing;
    for (const auto& file : plan.files) {
      if (!st.ok()) break;
      const std::string rel = "global_epoch1_step" + std::to_string(k) + "/" + file.name;
      auto pending = io->WriteData(dir + "/" + rel, file.bytes, opt.verify ? ContentKey(kContentSeed, rel) : 0);
      if (committing.valid()) {
        Status c = committing.get();
        if (st.ok()) st = c;
      }
      if (!pending.ok()) {
        if (st.ok()) st = pending.status();
        break;
      }
      if (!st.ok()) break;  // (the pending file is dropped: its temporary name goes)
      committing = std::async(std::launch::async, [&io, f = std::move(*pending), fsync = set.fsync]() mutable {
        return io->Commit(std::move(f), fsync);
      });
    }
    if (committing.valid()) {
      Status c = committing.get();
      if (st.ok()) st = c;
    }
    write_s.push_back(static_cast<double>(NowNs() - t0) / 1e9);
    write_cpu += ProcessCpuSeconds() - cpu0;
    err = comm.AgreeFirstError(st);
    // Every rank's files are whole: the mark goes, before the next collective, so no rank reads the checkpoint
    // while rank 0 still holds the mark.
    if (err.empty() && comm.root()) fs::remove(marker, ec);
    const bool interrupted = comm.AnyTrue(Interrupted());
    if (!err.empty() || interrupted) {
      // The files that did complete stay; a marker says the checkpoint is not whole (each failed file's temporary
      // name is already gone). An interrupt that came after the last file still counts the checkpoint as done.
      if (!err.empty() && comm.root()) {
        (void)WriteFileAtomic(StepDir(dir, k) + "/" + kIncomplete, "checkpoint " + std::to_string(k) + " write failed: " + err + "\n");
        fs::remove(marker, ec);
      }
      if (interrupted) {
        if (err.empty()) ++written;
        return fail("interrupted by a signal at checkpoint " + std::to_string(k) + " of the write phase", "interrupted", 130);
      }
      return fail("checkpoint " + std::to_string(k) + " write: " + err);
    }
    ++written;
    if (comm.root() && !opt.quiet) {
      std::printf("checkpoint %llu/%llu written\n", static_cast<unsigned long long>(k), static_cast<unsigned long long>(num_write));
      std::fflush(stdout);
    }
  }

  // Read phase: every checkpoint must be there, whole; then the page cache is emptied (or bypassed) and each is read.
  for (uint64_t k = 1; k <= num_read && st.ok(); ++k) {
    for (const char* m : {kInProgress, kIncomplete}) {
      const std::string path = StepDir(dir, k) + "/" + m;
      if (st.ok() && fs::exists(path)) {
        st = Status::Corruption("checkpoint " + std::to_string(k) + " in " + StepDir(dir, k) + " is not whole (" + m +
                                ": " + FirstLine(path) + "); write it again");
      }
    }
    for (const auto& file : plan.files) {
      if (!st.ok()) break;
      const std::string path = StepDir(dir, k) + "/" + file.name;
      std::error_code ec;
      const auto size = fs::file_size(path, ec);
      if (ec) {
        st = Status::NotFound("checkpoint " + std::to_string(k) + " is missing " + path +
                              " (write it first: --num-checkpoints-write, with the same model, ranks and --scale)");
      } else if (size != file.bytes) {
        st = Status::Corruption(path + ": " + std::to_string(size) + " bytes, the layout says " + std::to_string(file.bytes) +
                                " (another model, world size or --scale?)");
      }
      if (!st.ok()) break;
    }
  }
  err = comm.AgreeFirstError(st);
  if (!err.empty()) return fail(err);
  std::string read_cache = opt.odirect ? "direct (O_DIRECT)" : opt.read_cache;
  if (num_read > 0 && !opt.odirect && opt.read_cache == "drop") {
    Residency before, after;
    for (uint64_t k = 1; k <= num_read && st.ok(); ++k) {
      for (const auto& file : plan.files) {
        const std::string path = StepDir(dir, k) + "/" + file.name;
        if (auto r = ProbeFileResidency(path); r.ok()) before += *r;
        st = EvictFromPageCache(path, true);
        if (!st.ok()) break;
        if (auto r = ProbeFileResidency(path); r.ok()) after += *r;
      }
    }
    if (st.ok() && opt.drop_system_caches && comm.host_leader()) {
      Status d = DropSystemCaches();
      if (!d.ok()) warnings.push_back("--drop-system-caches: " + d.message());
    }
    const double b = comm.SumDouble(static_cast<double>(before.resident_bytes)), a = comm.SumDouble(static_cast<double>(after.resident_bytes));
    read_cache = "drop: resident before " + std::to_string(static_cast<int>(100 * b / std::max(1.0, total_bytes * num_read) + 0.5)) +
                 "%, after " + std::to_string(static_cast<int>(100 * a / std::max(1.0, total_bytes * num_read) + 0.5)) + "%";
    if (a > 0.02 * total_bytes * static_cast<double>(num_read)) {
      warnings.push_back("the page cache kept " + std::to_string(static_cast<int>(100 * a / (total_bytes * num_read))) +
                         "% of the checkpoints after the drop (tmpfs?): the reads measure memory");
    }
  }
  err = comm.AgreeFirstError(st);
  if (!err.empty()) return fail(err);
  for (uint64_t k = 1; k <= num_read && st.ok(); ++k) {
    comm.Barrier();
    const int64_t t0 = NowNs();
    const double cpu0 = ProcessCpuSeconds();
    for (const auto& file : plan.files) {
      const std::string rel = "global_epoch1_step" + std::to_string(k) + "/" + file.name;
      st = io->ReadFile(dir + "/" + rel, file.bytes, opt.verify ? ContentKey(kContentSeed, rel) : 0);
      if (!st.ok()) break;
    }
    read_s.push_back(static_cast<double>(NowNs() - t0) / 1e9);
    read_cpu += ProcessCpuSeconds() - cpu0;
    err = comm.AgreeFirstError(st);
    if (comm.AnyTrue(Interrupted())) {
      if (err.empty()) ++read;
      return fail("interrupted by a signal at checkpoint " + std::to_string(k) + " of the read phase", "interrupted", 130);
    }
    if (!err.empty()) return fail("checkpoint " + std::to_string(k) + " read: " + err);
    ++read;
  }

  // Reduction at rank 0 and the summary under DLIO's names.
  auto all_write = comm.GatherDoubles(write_s), all_read = comm.GatherDoubles(read_s);
  rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  std::vector<double> facts{static_cast<double>(plan.bytes), static_cast<double>(plan.files.size()),
                            static_cast<double>(io->fsyncs()), static_cast<double>(io->buffer_bytes()),
                            static_cast<double>(ru.ru_maxrss) * 1024.0, write_cpu, read_cpu};
  auto all_facts = comm.GatherDoubles(facts);
  const json injected = fault_counts();
  if (!comm.root()) return std::stoi(comm.Broadcast("", 0));
  const json save = Reduce(all_write, size_gib), load = Reduce(all_read, size_gib);
  HostInfo h = ReadHostInfo();
  summary["start"] = start_iso;
  summary["end"] = NowIso8601();
  summary["num_accelerators"] = ranks;
  summary["hostname"] = h.hostname;
  json metric = {{"checkpoint_size_GB", size_gib}};
  for (const auto& [name, phase] : {std::pair{"save", &save}, std::pair{"load", &load}}) {
    if (phase->empty()) continue;
    metric[std::string(name) + "_checkpoint_duration_mean_seconds"] = (*phase)["duration_mean_seconds"];
    metric[std::string(name) + "_checkpoint_duration_stdev_seconds"] = (*phase)["duration_stdev_seconds"];
    metric[std::string(name) + "_checkpoint_io_mean_GB_per_second"] = (*phase)["GiB_per_second_mean"];
    metric[std::string(name) + "_checkpoint_io_stdev_GB_per_second"] = (*phase)["GiB_per_second_stdev"];
  }
  summary["metric"] = metric;
  json per_rank = json::array();
  uint64_t fsyncs = 0, max_buffer = 0, max_rss = 0;
  double cpu_write = 0, cpu_read = 0;
  for (size_t r = 0; r < all_facts.size(); ++r) {
    cpu_write += all_facts[r][5];
    cpu_read += all_facts[r][6];
    per_rank.push_back({{"rank", r}, {"bytes", all_facts[r][0]}, {"files", all_facts[r][1]}});
    fsyncs += static_cast<uint64_t>(all_facts[r][2]);
    max_buffer = std::max(max_buffer, static_cast<uint64_t>(all_facts[r][3]));
    max_rss = std::max(max_rss, static_cast<uint64_t>(all_facts[r][4]));
  }
  f["status"] = "success";
  f["checkpoints_written"] = written;
  f["checkpoints_read"] = read;
  f["version"] = opt.version;
  f["workload"] = cfg.name;
  f["workload_source"] = cfg.source;
  f["model"] = {{"name", model.name}, {"parameters", NumParameters(model)}, {"layers", model.layers},
                {"tensor_parallelism", model.tp}, {"pipeline_parallelism", model.pp}, {"zero_stage", model.zero_stage},
                {"layout_world", world}, {"data_parallelism", world / (model.tp * model.pp)}, {"mode", model.mode}};
  f["scale"] = opt.scale;
  f["checkpoint_folder"] = dir;
  f["checkpoint_bytes"] = total_bytes;
  f["per_rank"] = per_rank;
  f["fsync"] = set.fsync;
  f["fsyncs"] = fsyncs;
  f["engine"] = io->description();
  f["odirect"] = opt.odirect;
  f["read_cache"] = read_cache;
  f["verify"] = opt.verify;
  f["buffer_bytes_per_rank"] = max_buffer;
  f["peak_rss_bytes_max_rank"] = max_rss;  // the whole process (MPI included), largest over ranks
  f["time_between_checkpoints_seconds"] = between;
  f["save"] = save;
  f["load"] = load;
  auto per_gib = [&](double cpu, uint64_t n) { return n > 0 && size_gib > 0 ? cpu / (size_gib * static_cast<double>(n)) : 0.0; };
  f["client_cpu"] = {{"write_seconds", cpu_write}, {"read_seconds", cpu_read},
                     {"write_seconds_per_gib", per_gib(cpu_write, written)},
                     {"read_seconds_per_gib", per_gib(cpu_read, read)},
                     {"note", "user + system CPU of every rank's process (io_uring workers included) during the timed "
                              "write and read phases, summed over ranks"}};
  f["metric_note"] = "duration per checkpoint = the slowest rank's (from the barrier to its last file renamed, fsync "
                     "included); GB/s = checkpoint_size_GB (GiB, as DLIO) / that duration; mean and stdev over checkpoints";
  f["warnings"] = warnings;
  if (faults) f["injected_faults"] = injected;
  f["command_line"] = opt.command_line;
  f["host_facts"] = {{"kernel", KernelRelease()}, {"checkpoint_fs", FileSystemType(dir)}, {"processor", h.processor_name},
                     {"cpu_count", h.cpu_count}, {"memory_bytes", h.mem_total_bytes}};
  summary["feedrate"] = f;
  Status w = WriteFileAtomic(results_dir + "/summary.json", summary.dump(2) + "\n");
  int code = 0;
  if (!w.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", w.ToString().c_str());
    code = 2;
  } else {
    for (const auto& x : warnings) std::fprintf(stderr, "feedrate: warning: %s\n", x.c_str());
    std::printf("\nFeedrate checkpoint %s: %llu rank(s), %.3f GiB per checkpoint (scale %g), %s\n", cfg.name.c_str(),
                static_cast<unsigned long long>(ranks), size_gib, opt.scale, io->description().c_str());
    if (!save.empty()) {
      std::printf("write: %.3f GiB/s mean (stdev %.3f), %.3f s per checkpoint (slowest rank)\n", save["GiB_per_second_mean"].get<double>(),
                  save["GiB_per_second_stdev"].get<double>(), save["duration_mean_seconds"].get<double>());
    }
    if (!load.empty()) {
      std::printf("read:  %.3f GiB/s mean (stdev %.3f), %.3f s per checkpoint (slowest rank); cache %s\n",
                  load["GiB_per_second_mean"].get<double>(), load["GiB_per_second_stdev"].get<double>(),
                  load["duration_mean_seconds"].get<double>(), read_cache.c_str());
    }
    std::printf("results: %s\n", results_dir.c_str());
    std::fflush(stdout);
  }
  return std::stoi(comm.Broadcast(std::to_string(code), 0));
}

}  // namespace feedrate
