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
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include <yaml-cpp/yaml.h>

#include "emulator/checkpoint/checkpoint_layout.h"
#include "emulator/checkpoint/checkpoint_metrics.h"
#include "emulator/host/sysinfo.h"
#include "emulator/results/dlio_output.h"
#include "emulator/results/results.h"
#include "emulator/results/validity.h"
#include "emulator/training/compute_clock.h"
#include "emulator/training/interrupt.h"
#include "emulator/training/metrics.h"
#include "loader/io/fault_injection.h"
#include "loader/io/page_cache.h"
#include "loader/util/exit_codes.h"
#include "loader/io/stream_io.h"
#include "loader/util/content_pattern.h"
#include "loader/util/units.h"
#include "loader/io/safe_file.h"

namespace feedrate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
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


// One `feedrate checkpoint` on one rank: set-up, the write phase, the read phase and the summary, each a named step.
// Every rank calls the same collectives in the same order (each step ends in an agreement on the first error).
class CheckpointRun {
 public:
  CheckpointRun(const WorkloadConfig& cfg, const CheckpointOptions& opt, Comm& comm)
      : cfg_(cfg), opt_(opt), comm_(comm), start_iso_(NowIso8601()), ranks_(static_cast<uint64_t>(comm.size())),
        results_dir_(ResultsDirOr(opt.results_dir, cfg.name)) {}

  int Run() {
    std::string err = comm_.AgreeFirstError(Prepare());
    if (err.empty()) err = comm_.AgreeFirstError(CheckSpace());
    if (!err.empty()) return Fail(err);
    for (uint64_t k = 1; k <= num_write_; ++k) {
      if (auto code = WriteCheckpoint(k)) return *code;
    }
    err = comm_.AgreeFirstError(CheckReadable());
    if (err.empty()) err = comm_.AgreeFirstError(EmptyReadCache());
    if (!err.empty()) return Fail(err);
    for (uint64_t k = 1; k <= num_read_; ++k) {
      if (auto code = ReadCheckpoint(k)) return *code;
    }
    return Finish();
  }

 private:
  // --inject's rules with the requests they matched and the faults they injected, summed over ranks (a collective).
  json FaultCounts() const {
    json rules = json::array();
    for (const auto& c : faults_ ? faults_->Counts() : std::vector<FaultInjector::RuleCount>{}) {
      rules.push_back({{"rule", c.rule}, {"matched", comm_.SumDouble(static_cast<double>(c.matched))},
                       {"injected", comm_.SumDouble(static_cast<double>(c.injected))}});
    }
    return rules;
  }

  // Ends the run on every rank alike: the message, and a summary.json that says what failed and what completed.
  int Fail(const std::string& error, const std::string& status = "failed", int code = kExitError) {
    const json injected = FaultCounts();
    if (!comm_.root()) return code;
    if (!injected.empty()) f_["injected_faults"] = injected;
    // (A folder holding an earlier record keeps it when the set-up failed: nothing of this run is worth it.)
    ReportUnfinishedRun(claim_.committed() ? results_dir_ : std::string(), status, error,
                        [&] { return WriteUnfinishedSummary(status, error); });
    return code;
  }

  // Rank 0's summary of a run that did not complete. No collectives: the collective watchdog's abort hook calls it
  // while this rank waits in the collective that timed out.
  Status WriteUnfinishedSummary(const std::string& status, const std::string& error) {
    f_["status"] = status;
    f_["checkpoints_written"] = written_;
    f_["checkpoints_read"] = read_;
    if (!error.empty()) f_["error"] = error;
    json summary = {{"start", start_iso_}, {"end", NowIso8601()}, {"feedrate", f_}};
    return WriteFileSafely(results_dir_ + "/summary.json", summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }

  // Set-up: results directory, the checkpoint settings and model, options, faults, the folder and the stream I/O.
  // A job the collective watchdog ends (MPI_Abort) still leaves a failed-run summary: rank 0 writes what it knows.
  Status Prepare() {
    if (comm_.root()) {
      auto claim = ClaimResultsDir(results_dir_, opt_.dlio != nullptr ? ResultsFolder::kDlioRun : FolderKind(opt_.results_dir));
      if (!claim.ok()) {
        results_dir_.clear();  // not ours: no failed-run summary may be written there
        return claim.status();
      }
      claim_ = std::move(*claim);
      results_dir_ = claim_.dir();
      if (claim_.committed()) FEEDRATE_RETURN_IF_ERROR(StartRecord());
    }
    FEEDRATE_RETURN_IF_ERROR(PrepareSettings());
    if (comm_.root() && !claim_.committed()) {  // an earlier record, replaced only now that the set-up succeeded
      FEEDRATE_RETURN_IF_ERROR(claim_.Commit());
      FEEDRATE_RETURN_IF_ERROR(StartRecord());
    }
    return Status::Ok();
  }

  // The "running" summary, and the failed one a job the watchdog ends leaves (rank 0, once the folder is ours).
  Status StartRecord() {
    FEEDRATE_RETURN_IF_ERROR(WriteUnfinishedSummary("running", ""));
    comm_.SetAbortHook([this](const std::string& message) { (void)WriteUnfinishedSummary("failed", message); });
    return Status::Ok();
  }

  // The checkpoint settings, model, options, faults, the folder and the stream I/O.
  Status PrepareSettings() {
    try {
      set_ = CheckpointSettingsFromConfig(cfg_);
    } catch (const YAML::Exception& e) {
      return Status::InvalidArgument(cfg_.source + ": the checkpoint section: " + e.what());
    }
    dir_ = opt_.dir.empty() ? set_.folder : opt_.dir;
    num_write_ = opt_.num_write >= 0 ? static_cast<uint64_t>(opt_.num_write) : set_.num_write;
    num_read_ = opt_.num_read >= 0 ? static_cast<uint64_t>(opt_.num_read) : set_.num_read;
    between_ = opt_.time_between >= 0 ? opt_.time_between : set_.time_between;
    if (!set_.fsync) warnings_.push_back("checkpoint.fsync is off: written checkpoints may still be in the page cache when timed");
    FEEDRATE_RETURN_IF_ERROR(PlanLayout());
    FEEDRATE_RETURN_IF_ERROR(OpenFaults());
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) return Status::Errno("cannot create checkpoint folder " + dir_, ec.value());
    return OpenIo();
  }

  // The model, the world its layout is cut for, and this rank's files at --scale.
  Status PlanLayout() {
    FEEDRATE_ASSIGN_OR_RETURN(auto m, LlmModelFromConfig(cfg_));
    model_ = m;
    FEEDRATE_ASSIGN_OR_RETURN(auto w, LayoutWorld(model_, ranks_));
    world_ = w;
    if (!(opt_.scale > 0 && opt_.scale <= 1)) return Status::InvalidArgument("--scale must be in (0, 1]");
    plan_ = PlanRank(model_, world_, static_cast<uint64_t>(comm_.rank()), opt_.scale);
    return Status::Ok();
  }

  // Checkpoint rules act on the writes unless they say op= (eagain is a read fault either way).
  Status OpenFaults() {
    if (opt_.inject.empty()) return Status::Ok();
    FEEDRATE_ASSIGN_OR_RETURN(auto p, ParseFaultPlan(opt_.inject));
    for (auto& r : p.rules) {
      if (!r.op_explicit && r.kind != FaultKind::kEagain) r.op = FaultOp::kWrite;
    }
    faults_ = std::make_unique<FaultInjector>(std::move(p));
    warnings_.push_back("faults injected into the checkpoint I/O (--inject " + opt_.inject + "): the results measure them");
    return Status::Ok();
  }

  Status OpenIo() {
    StreamOptions so;
    so.queue_depth = opt_.queue_depth;
    so.block = opt_.block;
    so.odirect = opt_.odirect;
    so.uring = opt_.engine != EngineKind::kPosix;
    so.faults = faults_.get();
    so.stop = InterruptFlag();
    FEEDRATE_ASSIGN_OR_RETURN(auto s, StreamIo::Create(so));
    io_ = std::move(s);
    if (opt_.engine == EngineKind::kUring && io_->description().rfind("io_uring", 0) != 0) {
      return Status::Unsupported("--engine uring: " + io_->description());
    }
    return Status::Ok();
  }

  // Refuses a write phase the file system cannot hold (every checkpoint stays, as DLIO keeps them).
  Status CheckSpace() {
    total_bytes_ = comm_.SumDouble(static_cast<double>(plan_.bytes));
    size_gib_ = total_bytes_ / kGiB;
    if (!comm_.root() || num_write_ == 0) return Status::Ok();
    struct statvfs v {};
    if (::statvfs(dir_.c_str(), &v) != 0) return Status::Ok();
    const double free_bytes = static_cast<double>(v.f_bavail) * static_cast<double>(v.f_frsize);
    if (total_bytes_ * static_cast<double>(num_write_) <= free_bytes) return Status::Ok();
    char b[256];
    std::snprintf(b, sizeof b, "%s: not enough space: %llu checkpoint(s) of %.2f GiB need %.2f GiB, the file system has %.2f GiB free",
                  dir_.c_str(), static_cast<unsigned long long>(num_write_), size_gib_,
                  size_gib_ * static_cast<double>(num_write_), free_bytes / kGiB);
    return Status::IoError(b);
  }

  // Checkpoint k of the write phase: idle, the in-progress mark, a barrier, this rank's files (timed), agreement.
  // Returns the exit code when the run ends here.
  std::optional<int> WriteCheckpoint(uint64_t k) {
    if (between_ > 0) SleepUntilUnlessInterrupted(NowNs() + static_cast<int64_t>(between_ * 1e9));
    const std::string marker = StepDir(dir_, k) + "/" + kInProgress;
    Status st;
    std::error_code ec;
    if (comm_.root()) {  // marked before any rank starts: a job that dies mid-checkpoint leaves the mark
      fs::create_directories(StepDir(dir_, k), ec);
      fs::remove(StepDir(dir_, k) + "/" + kIncomplete, ec);
      st = WriteFileSafely(marker, "checkpoint " + std::to_string(k) + " is being written by " +
                                       std::to_string(comm_.size()) + " rank(s) since " + NowIso8601() +
                                       "; this file is removed once every rank's files are whole\n");
    }
    comm_.Barrier();
    const int64_t t0 = NowNs();
    write_at_.push_back(UnixNow());
    const double cpu0 = ProcessCpuSeconds();
    if (st.ok()) st = WriteFiles(k);
    write_s_.push_back(static_cast<double>(NowNs() - t0) / 1e9);
    write_cpu_ += ProcessCpuSeconds() - cpu0;
    const std::string err = comm_.AgreeFirstError(st);
    // Every rank's files are whole: the mark goes, before the next collective, so no rank reads the checkpoint
    // while rank 0 still holds the mark.
    if (err.empty() && comm_.root()) fs::remove(marker, ec);
    const bool interrupted = comm_.AnyTrue(Interrupted());
    if (err.empty() && !interrupted) {
      ++written_;
      if (comm_.root() && !opt_.quiet) {
        std::printf("checkpoint %llu/%llu written\n", static_cast<unsigned long long>(k), static_cast<unsigned long long>(num_write_));
        std::fflush(stdout);
      }
      return std::nullopt;
    }
    // The files that did complete stay; a marker says the checkpoint is not whole (each failed file's temporary
    // name is already gone). An interrupt that came after the last file still counts the checkpoint as done.
    if (!err.empty() && comm_.root()) {
      (void)WriteFileSafely(StepDir(dir_, k) + "/" + kIncomplete, "checkpoint " + std::to_string(k) + " write failed: " + err + "\n");
      fs::remove(marker, ec);
    }
    if (interrupted) {
      if (err.empty()) ++written_;
      return Fail("interrupted by a signal at checkpoint " + std::to_string(k) + " of the write phase", "interrupted", kExitInterrupted);
    }
    return Fail("checkpoint " + std::to_string(k) + " write: " + err);
  }

  // This rank's files of checkpoint k. A file's fsync (and rename) runs on a helper thread while the next file is
  // written, as the device can drain one file while the next one streams in; the checkpoint's time still ends when
  // the last file is durable and named.
  Status WriteFiles(uint64_t k) {
    std::error_code ec;
    fs::create_directories(StepDir(dir_, k), ec);
    if (ec) return Status::Errno("cannot create " + StepDir(dir_, k), ec.value());
    Status st;
    std::future<Status> committing;
    auto settle = [&] {  // the previous file's commit
      if (!committing.valid()) return;
      Status c = committing.get();
      if (st.ok()) st = c;
    };
    for (const auto& file : plan_.files) {
      const std::string rel = "global_epoch1_step" + std::to_string(k) + "/" + file.name;
      auto pending = io_->WriteData(dir_ + "/" + rel, file.bytes, opt_.verify ? ContentKey(kContentSeed, rel) : 0);
      settle();
      if (!pending.ok() && st.ok()) st = pending.status();
      if (!st.ok()) break;  // (a pending file is dropped: its temporary name goes)
      committing = std::async(std::launch::async, [this, f = std::move(*pending), fsync = set_.fsync]() mutable {
        return io_->Commit(std::move(f), fsync);
      });
    }
    settle();
    return st;
  }

  // Every checkpoint to read must be there and whole, with the sizes this layout gives.
  Status CheckReadable() const {
    for (uint64_t k = 1; k <= num_read_; ++k) {
      for (const char* m : {kInProgress, kIncomplete}) {
        const std::string path = StepDir(dir_, k) + "/" + m;
        if (fs::exists(path)) {
          return Status::Corruption("checkpoint " + std::to_string(k) + " in " + StepDir(dir_, k) + " is not whole (" +
                                    m + ": " + FirstLine(path) + "); write it again");
        }
      }
      for (const auto& file : plan_.files) {
        const std::string path = StepDir(dir_, k) + "/" + file.name;
        std::error_code ec;
        const auto size = fs::file_size(path, ec);
        if (ec) {
          return Status::NotFound("checkpoint " + std::to_string(k) + " is missing " + path +
                                  " (write it first: --num-checkpoints-write, with the same model, ranks and --scale)");
        }
        if (size != file.bytes) {
          return Status::Corruption(path + ": " + std::to_string(size) + " bytes, the layout says " +
                                    std::to_string(file.bytes) + " (another model, world size or --scale?)");
        }
      }
    }
    return Status::Ok();
  }

  // Before reading (--read-cache drop, buffered): every rank evicts its files, checked by residency before and after.
  Status EmptyReadCache() {
    read_cache_ = opt_.odirect ? "direct (O_DIRECT)" : opt_.read_cache;
    if (num_read_ == 0 || opt_.odirect || opt_.read_cache != "drop") return Status::Ok();
    Status st;
    Residency before, after;
    for (uint64_t k = 1; k <= num_read_ && st.ok(); ++k) {
      for (const auto& file : plan_.files) {
        const std::string path = StepDir(dir_, k) + "/" + file.name;
        if (auto r = ProbeFileResidency(path); r.ok()) before += *r;
        st = EvictFromPageCache(path, true);
        if (!st.ok()) break;
        if (auto r = ProbeFileResidency(path); r.ok()) after += *r;
      }
    }
    if (st.ok() && opt_.drop_system_caches && comm_.host_leader()) {
      Status d = DropSystemCaches();
      if (!d.ok()) warnings_.push_back("--drop-system-caches: " + d.message());
    }
    const double all = std::max(1.0, total_bytes_ * static_cast<double>(num_read_));
    const double b = comm_.SumDouble(static_cast<double>(before.resident_bytes));
    const double a = comm_.SumDouble(static_cast<double>(after.resident_bytes));
    read_cache_ = "drop: resident before " + std::to_string(static_cast<int>(100 * b / all + 0.5)) + "%, after " +
                  std::to_string(static_cast<int>(100 * a / all + 0.5)) + "%";
    if (a > 0.02 * total_bytes_ * static_cast<double>(num_read_)) {
      warnings_.push_back("the page cache kept " + std::to_string(static_cast<int>(100 * a / (total_bytes_ * num_read_))) +
                          "% of the checkpoints after the drop (tmpfs?): the reads measure memory");
    }
    return st;
  }

  // Checkpoint k of the read phase: a barrier, this rank's files read back (timed), agreement.
  std::optional<int> ReadCheckpoint(uint64_t k) {
    comm_.Barrier();
    const int64_t t0 = NowNs();
    read_at_.push_back(UnixNow());
    const double cpu0 = ProcessCpuSeconds();
    Status st;
    for (const auto& file : plan_.files) {
      const std::string rel = "global_epoch1_step" + std::to_string(k) + "/" + file.name;
      st = io_->ReadFile(dir_ + "/" + rel, file.bytes, opt_.verify ? ContentKey(kContentSeed, rel) : 0);
      if (!st.ok()) break;
    }
    read_s_.push_back(static_cast<double>(NowNs() - t0) / 1e9);
    read_cpu_ += ProcessCpuSeconds() - cpu0;
    const std::string err = comm_.AgreeFirstError(st);
    if (comm_.AnyTrue(Interrupted())) {
      if (err.empty()) ++read_;
      return Fail("interrupted by a signal at checkpoint " + std::to_string(k) + " of the read phase", "interrupted", kExitInterrupted);
    }
    if (!err.empty()) return Fail("checkpoint " + std::to_string(k) + " read: " + err);
    ++read_;
    return std::nullopt;
  }

  // Reduction at rank 0, summary.json under DLIO's names and the printed result; the exit code, the same on all ranks.
  int Finish() {
    auto all_write = comm_.GatherDoubles(write_s_), all_read = comm_.GatherDoubles(read_s_);
    rusage ru {};
    ::getrusage(RUSAGE_SELF, &ru);
    std::vector<double> facts{static_cast<double>(plan_.bytes), static_cast<double>(plan_.files.size()),
                              static_cast<double>(io_->fsyncs()), static_cast<double>(io_->buffer_bytes()),
                              static_cast<double>(ru.ru_maxrss) * 1024.0, write_cpu_, read_cpu_};
    auto all_facts = comm_.GatherDoubles(facts);
    const std::vector<DlioCheckpointRank> ranks = GatherRankTimes();
    const json injected = FaultCounts();
    if (!comm_.root()) return std::stoi(comm_.Broadcast("", 0));
    const json save = ReduceCheckpointPhase(all_write, size_gib_), load = ReduceCheckpointPhase(all_read, size_gib_);
    json summary = Summary(save, load, all_facts, injected);
    AddDlioHostKeys(ranks, &summary);
    const Validity validity = CheckCheckpointRun(cfg_, RuleFacts(ranks, all_facts));
    summary["feedrate"]["validity"] = validity.ToJson();
    summary["feedrate"]["model"]["mlpstorage_name"] = MlpstorageCheckpointModel(cfg_);
    Status w = WriteDlioFiles(ranks, &summary);
    if (w.ok()) w = WriteFileSafely(results_dir_ + "/summary.json", summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    int code = 0;
    if (!w.ok()) {
      std::fprintf(stderr, "feedrate: error: %s\n", w.ToString().c_str());
      code = kExitError;
    } else {
      PrintResult(save, load);
      std::printf("rules (MLPerf Storage %s): %s%s\n", validity.edition.c_str(), validity.category.c_str(),
                  validity.reasons.empty() ? "" : " (why: summary.json feedrate.validity)");
      std::fflush(stdout);
    }
    return std::stoi(comm_.Broadcast(std::to_string(code), 0));
  }

  // What the v3.0 checkpoint rules look at: ranks, mode, counts, settings, and each host's bytes written against its
  // memory (the cache-flush rule).
  CheckpointFacts RuleFacts(const std::vector<DlioCheckpointRank>& ranks, const std::vector<std::vector<double>>& facts) const {
    CheckpointFacts f;
    f.ranks = ranks_;
    f.mode = model_.mode;
    f.num_write = written_;
    f.num_read = read_;
    f.fsync = set_.fsync;
    f.odirect = opt_.odirect;
    f.scale = opt_.scale;
    f.time_between_changed = opt_.time_between >= 0 && opt_.time_between != set_.time_between;
    f.injected_faults = opt_.inject;
    AddHostBytes(ranks, facts, written_, &f);
    return f;
  }

  // Every rank's checkpoint start times and seconds, and its host (a collective; rank 0 gets them all).
  std::vector<DlioCheckpointRank> GatherRankTimes() {
    auto at_w = comm_.GatherDoubles(write_at_), at_r = comm_.GatherDoubles(read_at_), sw = comm_.GatherDoubles(write_s_),
         sr = comm_.GatherDoubles(read_s_);
    auto hosts = comm_.GatherStrings(CheckpointHost(opt_.dlio != nullptr).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    std::vector<DlioCheckpointRank> ranks(hosts.size());
    for (size_t r = 0; r < hosts.size(); ++r) {
      ranks[r] = {at_w[r], sw[r], at_r[r], sr[r], json::parse(hosts[r])};
    }
    return ranks;
  }

  // Started as DLIO: its per-rank files and dlio.log, and summary.json's times and host facts as DLIO writes them.
  Status WriteDlioFiles(const std::vector<DlioCheckpointRank>& ranks, json* summary) const {
    if (opt_.dlio == nullptr) return Status::Ok();
    const double end = UnixNow();
    (*summary)["start"] = DlioTime(start_unix_);
    (*summary)["end"] = DlioTime(end);
    (*summary)["epochs"] = 0;
    for (const char* k : {"host_cpuinfo", "host_meminfo"}) {
      if (!ranks.empty() && ranks.front().host.contains(k)) (*summary)[k] = ranks.front().host[k];
    }
    DlioCheckpointRecord rec{opt_.dlio, results_dir_, opt_.version, start_unix_, end, size_gib_, ranks, (*summary)["metric"]};
    return WriteDlioCheckpointFiles(rec);
  }

  json Summary(const json& save, const json& load, const std::vector<std::vector<double>>& all_facts,
               const json& injected) {
    HostInfo h = ReadHostInfo();
    json summary = {{"start", start_iso_}, {"end", NowIso8601()}, {"num_accelerators", ranks_}, {"hostname", h.hostname}};
    json metric = {{"checkpoint_size_GB", size_gib_}};
    for (const auto& [name, phase] : {std::pair{"save", &save}, std::pair{"load", &load}}) {
      if (phase->empty()) continue;
      metric[std::string(name) + "_checkpoint_duration_mean_seconds"] = (*phase)["duration_mean_seconds"];
      metric[std::string(name) + "_checkpoint_duration_stdev_seconds"] = (*phase)["duration_stdev_seconds"];
      metric[std::string(name) + "_checkpoint_io_mean_GB_per_second"] = (*phase)["GiB_per_second_mean"];
      metric[std::string(name) + "_checkpoint_io_stdev_GB_per_second"] = (*phase)["GiB_per_second_stdev"];
    }
    summary["metric"] = metric;
    RankFacts(all_facts);
    f_["status"] = "success";
    f_["checkpoints_written"] = written_;
    f_["checkpoints_read"] = read_;
    f_["version"] = opt_.version;
    f_["workload"] = cfg_.name;
    f_["workload_source"] = cfg_.source;
    f_["model"] = {{"name", model_.name}, {"parameters", NumParameters(model_)}, {"layers", model_.layers},
                   {"tensor_parallelism", model_.tp}, {"pipeline_parallelism", model_.pp}, {"zero_stage", model_.zero_stage},
                   {"layout_world", world_}, {"data_parallelism", world_ / (model_.tp * model_.pp)}, {"mode", model_.mode}};
    f_["scale"] = opt_.scale;
    f_["checkpoint_folder"] = dir_;
    f_["checkpoint_bytes"] = total_bytes_;
    f_["fsync"] = set_.fsync;
    f_["engine"] = io_->description();
    f_["odirect"] = opt_.odirect;
    f_["read_cache"] = read_cache_;
    f_["verify"] = opt_.verify;
    f_["time_between_checkpoints_seconds"] = between_;
    f_["save"] = save;
    f_["load"] = load;
    f_["metric_note"] = "duration per checkpoint = the slowest rank's (from the barrier to its last file renamed, fsync "
                        "included); GB/s = checkpoint_size_GB (GiB, as DLIO) / that duration; mean and stdev over checkpoints";
    f_["warnings"] = warnings_;
    if (faults_) f_["injected_faults"] = injected;
    f_["command_line"] = opt_.command_line;
    f_["host_facts"] = {{"kernel", KernelRelease()}, {"checkpoint_fs", FileSystemType(dir_)}, {"processor", h.processor_name},
                        {"cpu_count", h.cpu_count}, {"memory_bytes", h.mem_total_bytes}};
    summary["feedrate"] = f_;
    return summary;
  }

  // Per-rank bytes and files, fsyncs, the largest buffers and RSS, and the client CPU of the timed phases.
  void RankFacts(const std::vector<std::vector<double>>& all_facts) {
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
    f_["per_rank"] = per_rank;
    f_["fsyncs"] = fsyncs;
    f_["buffer_bytes_per_rank"] = max_buffer;
    f_["peak_rss_bytes_max_rank"] = max_rss;  // the whole process (MPI included), largest over ranks
    auto per_gib = [&](double cpu, uint64_t n) { return n > 0 && size_gib_ > 0 ? cpu / (size_gib_ * static_cast<double>(n)) : 0.0; };
    f_["client_cpu"] = {{"write_seconds", cpu_write}, {"read_seconds", cpu_read},
                        {"write_seconds_per_gib", per_gib(cpu_write, written_)},
                        {"read_seconds_per_gib", per_gib(cpu_read, read_)},
                        {"note", "user + system CPU of every rank's process (io_uring workers included) during the timed "
                                 "write and read phases, summed over ranks"}};
  }

  void PrintResult(const json& save, const json& load) const {
    for (const auto& x : warnings_) std::fprintf(stderr, "feedrate: warning: %s\n", x.c_str());
    std::printf("\nFeedrate checkpoint %s: %llu rank(s), %.3f GiB per checkpoint (scale %g), %s\n", cfg_.name.c_str(),
                static_cast<unsigned long long>(ranks_), size_gib_, opt_.scale, io_->description().c_str());
    if (!save.empty()) {
      std::printf("write: %.3f GiB/s mean (stdev %.3f), %.3f s per checkpoint (slowest rank)\n", save["GiB_per_second_mean"].get<double>(),
                  save["GiB_per_second_stdev"].get<double>(), save["duration_mean_seconds"].get<double>());
    }
    if (!load.empty()) {
      std::printf("read:  %.3f GiB/s mean (stdev %.3f), %.3f s per checkpoint (slowest rank); cache %s\n",
                  load["GiB_per_second_mean"].get<double>(), load["GiB_per_second_stdev"].get<double>(),
                  load["duration_mean_seconds"].get<double>(), read_cache_.c_str());
    }
    std::printf("results: %s\n", results_dir_.c_str());
    std::fflush(stdout);
  }

  const WorkloadConfig& cfg_;
  const CheckpointOptions& opt_;
  Comm& comm_;
  const std::string start_iso_;
  const uint64_t ranks_;
  std::string results_dir_;  // rank 0: the claimed folder ("" when it could not be claimed)
  ResultsDirClaim claim_;
  json f_ = json::object();  // summary.json's "feedrate" object
  std::vector<std::string> warnings_;
  uint64_t written_ = 0, read_ = 0;  // checkpoints completed
  std::unique_ptr<FaultInjector> faults_;
  CheckpointSettings set_;
  LlmModel model_;
  uint64_t world_ = 0;
  RankPlan plan_;
  std::unique_ptr<StreamIo> io_;
  std::string dir_, read_cache_;
  uint64_t num_write_ = 0, num_read_ = 0;
  double between_ = 0, total_bytes_ = 0, size_gib_ = 0;
  std::vector<double> write_s_, read_s_;  // this rank's seconds per checkpoint
  std::vector<double> write_at_, read_at_;  // and when each began (seconds since the epoch)
  const double start_unix_ = UnixNow();
  double write_cpu_ = 0, read_cpu_ = 0;   // this process's CPU seconds (io_uring workers included) in the timed phases
};

}  // namespace

int RunCheckpoint(const WorkloadConfig& cfg, const CheckpointOptions& opt, Comm& comm) {
  return CheckpointRun(cfg, opt, comm).Run();
}

}  // namespace feedrate
