// Run results: summary.json (DLIO's field names plus a `feedrate` object), per_epoch.csv, config.yaml and
// report.md, each written to a temporary name and renamed into place. Rank 0 only.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "emulator/training/metrics.h"
#include "loader/config/workload_config.h"
#include "loader/io/unique_fd.h"
#include "loader/status.h"

namespace feedrate {

struct RankInfo {
  int rank = 0;
  std::string hostname;
  std::string cpus;         // affinity list, e.g. "0-1"
  unsigned allowed_cpus = 0;
  unsigned threads = 0;     // accelerator + I/O threads of the rank
  double cpu_seconds = 0;   // user + system, whole process
  double train_cpu_seconds = 0;  // user + system during the training loop (what wall_seconds covers)
  double train_start_unix = 0;   // wall-clock time (s since the epoch) the rank entered the training loop
  unsigned host_cpu_count = 0;
  uint64_t host_mem_bytes = 0;
  uint64_t cgroup_limit_bytes = 0;  // the rank's cgroup memory limit (0: none): what its page cache can hold
  std::string processor;
  uint64_t engine_bytes = 0;  // bytes the engine read (O_DIRECT windows included)
  uint64_t requeued = 0;      // short reads / EAGAIN resubmitted
  double check_seconds = 0;   // I/O threads' time in sample checks (CRC, HDF5/image decoding)
  std::vector<uint64_t> faults_matched, faults_injected;  // per --inject rule
  uint64_t probe_failures = 0;  // page-cache probes that failed
  uint64_t verify_bytes = 0;    // --verify: payload bytes checked against the pattern
  uint64_t net_rx_bytes = 0;    // host leader only: bytes the host's network interfaces received during the epochs'
                                // training blocks (the window of the read rates)
  double verify_seconds = 0;
  nlohmann::json cache = nlohmann::json::object();    // what --cache did on this rank (CacheControl::ToJson)
  // The storage counter: host_leader, kind, device, model, mount{...}, epoch_bytes[], epoch_requests[] (leader only)
  nlohmann::json storage = nlohmann::json::object();
  // run --accelerator-memory: mode, GPUs, copies, h2d_bytes, copy_seconds, copy_stall_seconds (run_gpu.h)
  nlohmann::json accelerator_memory = nlohmann::json::object();
  std::vector<std::pair<uint32_t, uint64_t>> latency_hist;  // read latency histogram (LatencyHistogram buckets), sparse
  uint64_t latency_max_ns = 0;
  double setup_peak_rss_mib = 0;  // peak resident set when training started
  uint64_t files_held = 0;        // paths the rank kept: the files it reads (training and validation)
  uint64_t file_list_bytes = 0;   // what those paths cost it (PathList::bytes)
  nlohmann::json host_cpu = nlohmann::json::object();  // host leader: the host's CPU use in training (host_cpu.h)
  // What the rank's set-up asked of the storage before the window: files stat'ed, files opened, reads, bytes read.
  uint64_t setup_stats = 0, setup_opens = 0, setup_reads = 0, setup_bytes = 0;
  // v3.0's pre-warm passes outside the window (TrainerOptions::prewarm_batches): the rank's batches and bytes, and
  // its longest accelerator's seconds in them.
  uint64_t prewarm_batches = 0, prewarm_bytes = 0;
  double prewarm_seconds = 0;
  nlohmann::json dlio_host;  // a run started as DLIO: DlioHostFacts() of the rank's host (null otherwise)
};
// The one JSON form of a rank's facts, under the members' own names: how a rank sends them to rank 0 (run_gather.h).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RankInfo, rank, hostname, cpus, allowed_cpus, threads, cpu_seconds,
                                                train_cpu_seconds, train_start_unix, host_cpu_count, host_mem_bytes,
                                                cgroup_limit_bytes, processor, engine_bytes, requeued, check_seconds,
                                                faults_matched, faults_injected, probe_failures, verify_bytes,
                                                net_rx_bytes, verify_seconds, cache, storage, accelerator_memory,
                                                latency_hist, latency_max_ns, setup_peak_rss_mib, files_held,
                                                file_list_bytes, host_cpu, setup_stats, setup_opens, setup_reads,
                                                setup_bytes, prewarm_batches, prewarm_bytes, prewarm_seconds, dlio_host)

struct DlioInvocation;

// A run's feedrate.status in summary.json: completed with the AU bar met or missed, failed (an error), interrupted,
// or still running. "missed_au" was "fail" before 2026-12-05 (one letter from "failed"): readers take both.
inline constexpr const char* kStatusPassed = "success";
inline constexpr const char* kStatusMissedAu = "missed_au";
inline constexpr const char* kStatusFailed = "failed";
inline constexpr const char* kStatusInterrupted = "interrupted";
inline constexpr const char* kStatusRunning = "running";
// The run completed (every epoch measured), whatever its AU; takes the old "fail" of earlier records.
inline bool CompletedStatus(const std::string& s) { return s == kStatusPassed || s == kStatusMissedAu || s == "fail"; }

struct RunRecord {
  const WorkloadConfig* cfg = nullptr;
  std::string results_dir;
  std::string version;
  std::string start_iso, end_iso;
  double start_unix = 0, end_unix = 0;  // the same instants, seconds since the epoch (DLIO's local-time stamps)
  double client_memory_gib = 0;  // --client-host-memory-in-gb: the rules' memory per host (0: each host's MemTotal)
  const DlioInvocation* dlio = nullptr;  // started as DLIO (`feedrate dlio`): DLIO's files too (dlio_output.h)
  int ranks = 1;
  uint64_t accelerators_per_rank = 1;
  std::string engine = "posix";
  std::string engine_description;
  std::string io_thread_policy = "normal";  // the I/O threads' scheduling: nice (+10), idle (SCHED_IDLE) or normal
  uint64_t queue_depth = 0;  // effective reads in flight per I/O thread
  uint64_t io_threads_per_rank = 1;
  std::string access_pattern = "coalesced";  // feedrate.access_pattern as it ran ("dlio" or "coalesced")
  std::string access_reason;                 // what the dlio pattern replays, or why the run read coalesced
  uint64_t setup_stats = 0, setup_opens = 0;  // rank 0's set-up requests before the window (Setup's)
  uint64_t setup_reads = 0, setup_bytes = 0;  // and the reads and bytes those made (every rank's: rank_info)
  std::string cache_scope;                   // the cache mode as chosen, with its scope ("drop (rank 0's host, ...)")
  uint64_t collates = 0;                     // rank 0's DataLoader workers' batch collates (DlioEngine) and their time
  double collate_seconds = 0;
  uint64_t batches_in_flight = 0;            // per accelerator, as the run kept them (0: the workload's)
  uint64_t prewarm_batches = 0;              // v3.0's pre-warm: batches per accelerator and pass (0: none)
  bool retain_batches = false;
  std::string sample_check = "none";  // what each sample is checked for once read
  std::string file_open_mode = "per_sample";  // per_sample | per_file_visit | keep_open
  uint64_t coalesce_bytes = 0;        // back-to-back samples read together up to this many bytes (0: off)
  uint64_t steps_per_epoch = 0;
  double dataset_bytes = 0;        // sum of the extents the run reads from (whole dataset)
  double buffer_bytes_per_rank = 0;
  std::vector<RankInfo> rank_info;
  RunMetrics metrics;
  std::vector<std::vector<AcceleratorEpoch>> per_accelerator;  // [rank * accelerators_per_rank + a][epoch]
  std::vector<double> stall_seconds;    // every step of every accelerator
  std::vector<double> barrier_seconds;  // every step of every accelerator
  std::vector<double> compute_seconds;  // every step of every accelerator (the same order)
  double wall_seconds = 0;              // training loop, all epochs
  double setup_seconds = -1;            // rank 0: process start to the first step (listing, indexing, engine)
  double setup_peak_rss_mib = 0;        // rank 0: peak resident set when training started
  std::vector<std::string> warnings;
  std::string inject;  // --inject rules ("" = none)
  std::string cache_mode = "keep";  // --cache
  std::string residency = "off";    // how the reads' residency was sampled: cachestat, mincore_window or off
  uint64_t residency_every = 0;     // every Nth read request probed (0: none)
  std::string command_line;         // the command as given
  double verify_fraction = 0;       // --verify (0: off)
  std::string accelerator_memory = "host";  // --accelerator-memory: host, pinned or device
  std::string step_barrier_mode;    // "flat" or "hierarchical": how each step's agreement travelled
  std::vector<double> barrier_flat_s, barrier_hierarchical_s;  // rank 0's calibration rounds (seconds each)
  int num_hosts = 1;
  uint64_t gather_bytes = 0;  // what rank 0 received at the end of the run (step figures, rank facts)
  double gather_seconds = 0;  // and how long that took (time series included)
  std::string timeseries_csv;       // merged timeseries.csv ("" = not recorded)
  double timeseries_interval = 0;
  std::string status;  // kStatusPassed | kStatusMissedAu | kStatusFailed | kStatusInterrupted (| kStatusRunning)
  std::string error;
};

// A YAML tree as JSON, scalars typed the way YAML 1.1 reads them (bool, int, float, string).
nlohmann::json YamlToJson(const YAML::Node& n);
nlohmann::json BuildSummary(const RunRecord& r);
// The `feedrate` figures on what served the bytes (results_storage.cpp): cache_mode, cache, devices,
// device_bytes_read, epochs[], cold/warm MiB/s (completed runs), read_latency_us, timeseries.
void AddStorageFigures(const RunRecord& r, bool completed, nlohmann::json* feedrate);
// host_facts: kernel, data dir, its file system, mount and device, the command line.
nlohmann::json HostManifest(const RunRecord& r);
// Writes all result files into r.results_dir (which must exist).
Status WriteRunResults(const RunRecord& r);
// summary.json with status "running" and what is known so far: written as soon as the folder is claimed, so a run
// killed before it ends (a launcher's SIGKILL, a crash) is recognisable as such and never success-shaped.
Status WriteRunningSummary(const RunRecord& r);
// The table printed at the end of a run.
std::string FormatResultTable(const RunRecord& r);  // (result_table.cpp)
// Shared by the results files: a number with `digits` decimals, and the bytes and seconds summed over epochs.
std::string Fixed(double v, int digits);
uint64_t TotalBytes(const RunMetrics& m);
double TotalSeconds(const RunMetrics& m);
// summary.json's feedrate.accelerator_memory: mode, path, GPUs per rank and, for device memory, the copies.
nlohmann::json AcceleratorMemoryFigures(const RunRecord& r);
// feedrate.compute over every rank (summary.json feedrate.compute).
nlohmann::json ComputeFigures(const RunRecord& r);

// UTC "2026-11-30T16:01:38Z" for now, and a compact "20261130T160138Z" for directory names.
std::string NowIso8601();
std::string NowCompact();
// Where a command's results go: `given` when set, else feedrate-results/<NowCompact()>_<name> (run, checkpoint, sweep,
// iobench name theirs the same way).
std::string ResultsDirOr(const std::string& given, const std::string& name);
// Rank 0 creates the results directory before any work, so an unwritable one fails first (iobench).
Status CreateResultsDir(const std::string& dir);

// Whose folder a command writes its record into, which decides what a claim may do there.
enum class ResultsFolder {
  kNew,      // the command's own default (feedrate-results/<time>_<name>): the first of dir, dir-2, ... that did not exist
  kNamed,    // the user's --results-dir: new, empty, or holding an earlier Feedrate record (its summary.json or
             // sweep.json says so); any other folder is the user's and is refused before any work
  kDlioRun,  // `feedrate dlio`'s hydra.run.dir: written as DLIO writes it, DLIO's file names only, nothing removed
};

// A results folder owned by one run, held under an exclusive flock(2) on the folder itself while the claim lives,
// so a second run into it is refused (exit 2) instead of mixing or overwriting. A folder Feedrate did not create is
// the user's: nothing in it is removed or replaced unless it is an earlier Feedrate run's record, and that only at
// Commit (after the run's set-up succeeded), said on stderr. Run, checkpoint and sweep claim theirs before any work.
class ResultsDirClaim {
 public:
  ResultsDirClaim() = default;
  const std::string& dir() const { return dir_; }
  // Whether the run may write its record now: at once in a new or empty folder (or a DLIO run folder); in one
  // holding an earlier record only after Commit, so a run that fails in set-up leaves that record as it was.
  bool committed() const { return committed_; }
  // The earlier record's files (RunRecordFiles) removed, once, naming the folder on stderr; then committed().
  Status Commit();

 private:
  friend Result<ResultsDirClaim> ClaimResultsDir(const std::string& dir, ResultsFolder kind);
  std::string dir_;
  UniqueFd lock_;  // the folder, opened O_DIRECTORY and flock()ed LOCK_EX
  bool committed_ = false;
};
Result<ResultsDirClaim> ClaimResultsDir(const std::string& dir, ResultsFolder kind);
// kNew for a default folder (`given` empty), else kNamed.
inline ResultsFolder FolderKind(const std::string& given) { return given.empty() ? ResultsFolder::kNew : ResultsFolder::kNamed; }
// The record files a run or checkpoint writes into its folder (what a Commit replaces).
const std::vector<std::string>& RunRecordFiles();
// How a run that did not complete ends on rank 0, run and checkpoint alike: the error on stderr ("feedrate:
// error: ..." for status "failed", else "feedrate: <status>: ..."), then `write_summary` (a summary.json that says
// what failed and what completed) when the results directory exists; a summary that cannot be written is said.
void ReportUnfinishedRun(const std::string& dir, const std::string& status, const std::string& error,
                         const std::function<Status()>& write_summary);

}  // namespace feedrate
