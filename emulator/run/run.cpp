// Run orchestration: setup (agreed across ranks; run_setup.cpp), the training loop, gathering to rank 0, results.
#include "emulator/run/run.h"

#include "loader/util/dlio_edition.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "emulator/host/host_cpu.h"
#include "emulator/host/metrics_server.h"
#include "emulator/host/sysinfo.h"
#include "emulator/results/dlio_output.h"
#include "emulator/results/results.h"
#include "emulator/results/validity.h"
#include "emulator/run/run_gather.h"
#include "emulator/run/run_setup.h"
#include "emulator/training/compute_clock.h"
#include "emulator/training/interrupt.h"
#include "emulator/training/live_metrics.h"
#include "emulator/training/progress.h"
#include "emulator/training/timeseries.h"
#include "emulator/training/trainer.h"
#include "loader/s3/s3_engine.h"
#include "loader/util/units.h"

namespace feedrate {
namespace {

// The device counters of the epochs on a host leader (bytes and requests per epoch, as doubles for the JSON).
struct DeviceEpochs {
  std::optional<ReadCounters> start;  // at the current epoch's start
  std::vector<double> bytes, requests;
  uint64_t epochs = 0;                // epochs measured
};

nlohmann::json StorageJson(const Setup& s, const DeviceEpochs& d) {
  nlohmann::json j = {{"host_leader", s.host_leader}, {"kind", s.storage.kind()}, {"device", s.storage.device()},
                      {"model", s.storage.model()}};
  if (const auto& m = s.storage.mount()) {
    j["mount"] = {{"mount_point", m->mount_point}, {"fs_type", m->fs_type}, {"source", m->source}, {"options", m->options},
                  {"super_options", m->super_options}};
  }
  if (s.host_leader && s.storage.kind() != "none" && d.epochs > 0) {
    j["epoch_bytes"] = std::vector<double>(d.bytes.begin(), d.bytes.begin() + static_cast<std::ptrdiff_t>(d.epochs));
    j["epoch_requests"] = std::vector<double>(d.requests.begin(), d.requests.begin() + static_cast<std::ptrdiff_t>(d.epochs));
  }
  return j;
}

// One training run on this rank, in named phases that share the run record, the setup and what the rank reports.
// Construct, then Execute() once; every rank runs the same phases (they contain collectives).
class TrainingRun {
 public:
  // `sized`: the line saying how the edition's DLIO sized the config to this host ("" where it did not).
  TrainingRun(const WorkloadConfig& cfg, const RunOptions& opt, Comm& comm, std::string sized)
      : cfg_(cfg), opt_(opt), comm_(comm), sized_(std::move(sized)) {}
  ~TrainingRun() { comm_.SetAbortHook(nullptr); }  // the hook refers to rec_
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;
  int Execute();
  // The textfile's last write; --metrics-hold: after the run, until a scrape has read its final figures (bounded;
  // not after an interrupt).
  void HoldMetrics();

 private:
  void StartRecord();
  Status StartMetrics();
  void SetFinalPhase(int code);
  Status CreateResultsDir();
  Status CommitResultsDir();
  Status StartRunningRecord();
  Status CheckDeclaredCategory();
  void DescribeSetup();
  void WarnNarrowAffinity() const;
  std::vector<std::string> GatherFacts();
  int FinishFailed(const std::string& status, const std::string& error, int code);
  TrainerOptions MakeTrainerOptions(ProgressReporter& reporter, AcceleratorLive* live);
  void Train();
  void CollectExtras(uint64_t threads);
  int FinishCompleted();

  const WorkloadConfig& cfg_;
  const RunOptions& opt_;
  Comm& comm_;
  std::string sized_;  // how the edition's DLIO sized the config to this host (RunTraining)
  RunRecord rec_;
  ResultsDirClaim claim_;  // rank 0: the results folder, held for the run
  Setup setup_;
  RankExtras extras_;                            // what this rank reports at the end (filled in as the run goes)
  uint64_t s3_requests_ = 0, s3_retries_ = 0;    // the S3 engine's GETs (retries included) and retries
  uint64_t s3_max_in_flight_ = 0;                 // and the most it had in flight at once
  std::unique_ptr<TimeSeriesRecorder> recorder_;  // once training started
  std::unique_ptr<LiveMetrics> metrics_;           // --metrics-listen: what this rank's endpoint shows
  std::unique_ptr<MetricsServer> metrics_server_;  // declared after metrics_: stops before metrics_ goes
  std::unique_ptr<MetricsTextfile> metrics_file_;  // --metrics-textfile: the same, as a node_exporter textfile
  DeviceEpochs device_;
  TrainingResult result_;
  EngineCounters counters_;
  std::atomic<uint64_t> check_ns_{0};  // I/O threads' time in sample checks (CRC, decoding)
  TrainProgress progress_;             // live counters: rank 0's status line, every rank's metrics endpoint
  ProgressMode progress_mode_ = ProgressMode::kQuiet;
  int64_t t0_ = 0;                     // training start: wall, process CPU, network, Unix time (skew between hosts)
  double cpu0_ = 0, start_unix_ = 0;
  HostCpuSample host_cpu0_;  // host leader: /proc at training start
  uint64_t net_block_start_ = 0, net_rx_blocks_ = 0;  // host leader: rx at the block's start; summed over blocks
};

// The record's facts from the configuration and the command line; the configuration's warnings.
void TrainingRun::StartRecord() {
  rec_.cfg = &cfg_;
  rec_.version = opt_.version;
  rec_.ranks = comm_.size();
  rec_.accelerators_per_rank = opt_.accelerators;
  rec_.start_iso = NowIso8601();
  rec_.start_unix = UnixNow();
  rec_.dlio = opt_.dlio;
  rec_.client_memory_gib = opt_.client_memory_gib;
  rec_.inject = opt_.inject;
  rec_.cache_mode = cfg_.odirect ? "direct" : cfg_.on_s3() ? "s3" : CacheModeName(ChooseCache(cfg_, opt_).mode);
  rec_.cache_scope = ChooseCache(cfg_, opt_).Describe();
  rec_.command_line = opt_.command_line;
  rec_.verify_fraction = opt_.verify;
  rec_.accelerator_memory = Name(opt_.accelerator_memory);
  rec_.num_hosts = comm_.num_hosts();
  rec_.step_barrier_mode = comm_.step_barrier() == StepBarrierMode::kHierarchical ? "hierarchical" : "flat";
  if (!cfg_.warnings.empty()) {
    std::string keys;
    for (const auto& k : cfg_.warnings) keys += (keys.empty() ? "" : ", ") + k;
    rec_.warnings.push_back("keys accepted but not implemented by Feedrate yet (no effect): " + keys);
  }
  if (std::string note = TrainingCheckpointNote(cfg_); !note.empty()) rec_.warnings.push_back(note);
  if (!sized_.empty()) rec_.warnings.push_back(sized_);
}

// Rank 0 chooses and creates the results directory first, so an unwritable one fails before any work. A job the
// collective watchdog ends (MPI_Abort) still leaves a failed-run record: rank 0 writes what it knows.
Status TrainingRun::CreateResultsDir() {
  if (!comm_.root()) return Status::Ok();
  const ResultsFolder kind = opt_.dlio != nullptr ? ResultsFolder::kDlioRun : FolderKind(opt_.results_dir);
  FEEDRATE_ASSIGN_OR_RETURN(claim_, ClaimResultsDir(ResultsDirOr(opt_.results_dir, cfg_.name), kind));
  rec_.results_dir = claim_.dir();
  return claim_.committed() ? StartRunningRecord() : Status::Ok();
}

// Once set-up succeeded, a folder holding an earlier run's record becomes this run's (rank 0).
Status TrainingRun::CommitResultsDir() {
  if (!comm_.root() || claim_.committed()) return Status::Ok();
  FEEDRATE_RETURN_IF_ERROR(claim_.Commit());
  return StartRunningRecord();
}

// The "running" summary, and the failed record a job the watchdog ends leaves (rank 0, the folder ours).
Status TrainingRun::StartRunningRecord() {
  FEEDRATE_RETURN_IF_ERROR(WriteRunningSummary(rec_));
  comm_.SetAbortHook([this](const std::string& message) {
    RunRecord failed = rec_;
    failed.status = kStatusFailed;
    failed.error = message;
    failed.end_iso = NowIso8601();
    failed.end_unix = UnixNow();
    (void)WriteRunResults(failed);
  });
  return Status::Ok();
}

// mlpstorage's --closed/--open: the rules' verdict from what is known before the first step (the job's
// accelerators per host, the hosts' memory or --client-host-memory-in-gb) must reach the declared category. The same
// facts the summary's validity uses at the end. Collective (every rank sends its host).
Status TrainingRun::CheckDeclaredCategory() {
  if (opt_.declared_category.empty()) return Status::Ok();
  const HostInfo h = ReadHostInfo();
  const auto all = comm_.GatherStrings(h.hostname + "\n" + std::to_string(h.mem_total_bytes));
  if (!comm_.root()) return Status::Ok();
  std::map<std::string, std::pair<uint64_t, double>> hosts;  // accelerators, memory
  for (const auto& s : all) {
    const size_t nl = s.find('\n');
    auto& [acc, mem] = hosts[s.substr(0, nl)];
    acc += opt_.accelerators;
    mem = opt_.client_memory_gib > 0 ? opt_.client_memory_gib * kGiB : std::stod(s.substr(nl + 1));
  }
  RunFacts facts;
  facts.accelerators = static_cast<uint64_t>(comm_.size()) * opt_.accelerators;
  for (const auto& [name, am] : hosts) {
    facts.accelerators_per_host.push_back(am.first);
    facts.client_memory_bytes += am.second;
  }
  facts.injected_faults = opt_.inject;
  const Validity v = CheckTrainingRun(cfg_, facts);
  const bool below = opt_.declared_category == "CLOSED" ? v.category != "CLOSED" : v.category == "INVALID";
  if (!below) return Status::Ok();
  std::string why;
  for (const auto& r : v.reasons) why += "\n  " + r;
  const std::string text = "--" + std::string(opt_.declared_category == "CLOSED" ? "closed" : "open") + ": the run is " +
                           v.category + " by the MLPerf Storage " + v.edition + " rules:" + why;
  if (opt_.allow_invalid_params) {
    std::fprintf(stderr, "feedrate: warning: %s\n(--allow-invalid-params: running anyway)\n", text.c_str());
    return Status::Ok();
  }
  return Status::InvalidArgument(text + "\n(--allow-invalid-params runs it anyway)");
}

// The record's facts from the rank's setup.
void TrainingRun::DescribeSetup() {
  rec_.io_threads_per_rank = setup_.plan.io_threads;
  rec_.access_pattern = setup_.plan.pattern;
  rec_.access_reason = setup_.plan.reason;
  rec_.setup_stats = setup_.setup_stats;
  rec_.setup_opens = setup_.setup_opens;
  rec_.setup_reads = setup_.setup_reads;
  rec_.setup_bytes = setup_.setup_bytes;
  rec_.batches_in_flight = setup_.plan.batches_in_flight;
  rec_.prewarm_batches = setup_.plan.prewarm_batches;
  rec_.retain_batches = setup_.plan.retain;
  if (setup_.file_table) rec_.file_open_mode = FileOpenModeName(setup_.file_table->mode());
  const SampleCheck check = setup_.head_check != SampleCheck::kNone ? setup_.head_check : setup_.table.check;
  rec_.sample_check = check == SampleCheck::kTfRecordCrc     ? "tfrecord: length and payload CRC-32C"
                     : check == SampleCheck::kTfRecordFrame ? "tfrecord: length field and its CRC (feedrate.verify_crc off)"
                     : check == SampleCheck::kHdf5Decode
                         ? "hdf5: filtered chunks read raw through the I/O engine, each whole chunk per sample, decoded on the "
                           "I/O threads (" + setup_.table.codecs().front().description + ")"
                     : check == SampleCheck::kParquetPages
                         ? "parquet: each row group's span read whole by its first row; the selected column chunks' page headers walked on the I/O threads"
                     : check == SampleCheck::kParquetDecode
                         ? "parquet: each row group's span read whole by its first row; every page of the selected column chunks decompressed and its levels and values decoded on the I/O threads, as pyarrow's read_row_group"
                     : check == SampleCheck::kImageDecode
                         ? std::string("image: every sample decoded to pixels on the I/O threads (libjpeg-turbo / libpng), as DLIO's PIL reader does") +
                               (setup_.plan.pattern == "dlio" ? ", each in its DataLoader worker's sequence before that worker's next sample" : "")
                     : check == SampleCheck::kJpegSignature || check == SampleCheck::kPngSignature
                         ? "image: whole files, not opened at setup; each file's signature checked once read"
                         : "none";
  rec_.dataset_bytes = setup_.dataset_bytes;
  rec_.buffer_bytes_per_rank = setup_.plan.memory.total();
  for (const auto& w : setup_.warnings) rec_.warnings.push_back(w);
}

// OpenMPI binds each rank to one core when it starts few ranks: say so when that is narrower than the threads.
void TrainingRun::WarnNarrowAffinity() const {
  const unsigned threads = static_cast<unsigned>(opt_.accelerators + setup_.plan.io_threads);
  auto cpus = CpuAffinity();
  HostInfo host = ReadHostInfo();
  if (cpus.size() < host.cpu_count && cpus.size() < threads) {
    std::fprintf(stderr,
                 "feedrate: warning: rank %d may run on CPUs %s only (%zu of %u) but runs %u threads; "
                 "with mpirun use --bind-to none or --map-by slot:PE=N\n",
                 comm_.rank(), CpuListString(cpus).c_str(), cpus.size(), host.cpu_count, threads);
  }
}

// Every rank's facts (and time series) at rank 0. Collective.
std::vector<std::string> TrainingRun::GatherFacts() {
  extras_.faults = setup_.faults.get();
  if (setup_.cache) extras_.cache = setup_.cache->ToJson();
  extras_.storage = StorageJson(setup_, device_);
  if (setup_.s3) AddS3Facts(*setup_.s3, {s3_requests_, s3_retries_, s3_max_in_flight_}, &extras_.storage);
  auto infos = comm_.GatherStrings(RankInfoJson(comm_, extras_));
  if (recorder_) {
    recorder_->Stop();
    auto rows = comm_.GatherStrings(TimeSeriesRows(comm_.rank(), ReadHostInfo().hostname, recorder_->rows()));
    if (comm_.root()) {
      rec_.timeseries_csv = MergeTimeSeries(rows, static_cast<double>(comm_.size() * opt_.accelerators), opt_.timeseries_interval);
      rec_.timeseries_interval = opt_.timeseries_interval;
    }
  }
  return infos;
}

// A run that ends without a result: rank 0 says why and writes the failed-run record. Collective.
int TrainingRun::FinishFailed(const std::string& status, const std::string& error, int code) {
  rec_.status = status;
  rec_.error = error;
  if (metrics_) metrics_->SetPhase(code == kExitInterrupted ? RunPhase::kInterrupted : RunPhase::kFailed);
  rec_.end_iso = NowIso8601();
  rec_.end_unix = UnixNow();
  auto infos = GatherFacts();
  if (!comm_.root()) return code;
  ParseRankInfos(infos, &rec_);
  if (opt_.json_events) {
    std::printf("%s\n", nlohmann::json{{"event", "done"}, {"status", status}, {"error", error},
                                       {"results_dir", rec_.results_dir}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    std::fflush(stdout);
  }
  // (A folder holding an earlier record keeps it when the set-up failed: nothing of this run is worth it.)
  ReportUnfinishedRun(claim_.committed() ? rec_.results_dir : std::string(), status, error,
                      [this] { return WriteRunResults(rec_); });
  return code;
}

// What the trainer needs from the setup, the record and this run (its callbacks refer to this object).
TrainerOptions TrainingRun::MakeTrainerOptions(ProgressReporter& reporter, AcceleratorLive* live) {
  TrainerOptions to;
  to.accelerators = opt_.accelerators;
  to.retain_batches = setup_.plan.retain;
  to.lanes_per_accelerator = setup_.plan.workers;
  to.file_lanes = setup_.file_lanes.empty() ? nullptr : &setup_.file_lanes;
  to.batches_in_flight = setup_.plan.batches_in_flight;
  to.slot_reads = setup_.slot_reads.train;
  to.eval_slot_reads = setup_.slot_reads.eval;
  to.direct_align = cfg_.odirect ? setup_.engine_options.direct_align : 0;
  to.progress = comm_.root() || metrics_ ? &progress_ : nullptr;  // the status line's and the endpoint's counters
  const uint64_t steps = setup_.sampler->steps_per_epoch();
  to.on_epoch = [this, steps, &reporter](uint64_t epoch, const std::vector<AcceleratorLog>& logs) {
    ReportEpoch(cfg_, comm_, epoch, steps, logs, &reporter);
  };
  to.files = setup_.file_table.get();
  // The dlio pattern reads each sample as its reader does: never two records in one request.
  to.coalesce_bytes = cfg_.coalesce_reads && setup_.plan.pattern != "dlio" ? setup_.engine_options.transfer_size : 0;
  to.eval_sampler = setup_.eval_sampler.get();
  to.eval_id_offset = setup_.eval_id_offset;
  to.prewarm_batches = setup_.plan.prewarm_batches;
  to.check_ns = setup_.table.check != SampleCheck::kNone ? &check_ns_ : nullptr;
  // Page cache and device counters around each epoch: drop (when asked), then the device counters start; they
  // stop when the training block ends.
  device_.bytes.assign(cfg_.epochs, 0);
  device_.requests.assign(cfg_.epochs, 0);
  const bool count_device = setup_.host_leader && setup_.storage.kind() != "none";
  // The network counters too (host leaders): over the same training blocks as the read rates, so a drop's or a
  // setup's traffic (opening every file of a FUSE mount to evict it) does not dilute the rate beside them.
  to.before_epoch = [this, count_device](uint64_t epoch) -> Status {
    Status drop = setup_.cache->BeforeEpoch(epoch);
    if (count_device) device_.start = setup_.storage.Read();
    if (setup_.host_leader) net_block_start_ = NetworkRxBytes();
    return drop;
  };
  to.after_block = [this, count_device](uint64_t epoch) {
    if (setup_.host_leader) net_rx_blocks_ += NetworkRxBytes() - net_block_start_;
    if (!count_device || !device_.start) return;
    auto end = setup_.storage.Read();
    if (!end) return;
    device_.bytes[epoch - 1] = static_cast<double>(end->bytes - device_.start->bytes);
    device_.requests[epoch - 1] = static_cast<double>(end->requests - device_.start->requests);
    device_.epochs = epoch;
  };
  // About 512 probes per accelerator and epoch: enough for the fraction, cheap beside the reads.
  to.residency_every = setup_.cache->mode() == CacheMode::kDirect || setup_.s3 || !opt_.residency
                           ? 0
                           : std::max<uint64_t>(1, setup_.sampler->samples_per_epoch_per_accelerator() / 512);
  to.live = live;
  to.content = setup_.content.get();
  to.io_timeout_ns = static_cast<int64_t>(opt_.io_timeout * 1e9);
  to.staging = setup_.staging.train_slots;
  to.eval_staging = setup_.staging.eval_slots;
  to.compute = setup_.staging.compute_steps;
  return to;
}

// The accelerators train; result_, counters_ and the record's engine facts are filled in.
void TrainingRun::Train() {
  IoEngine& engine = *setup_.engine.engine;
  rec_.engine = engine.name();
  rec_.engine_description = setup_.engine.description;
  rec_.io_thread_policy = Name(opt_.io_thread_policy);
  rec_.queue_depth = setup_.engine_options.queue_depth;
  // Rank 0 reports; the other ranks only take part in the per-epoch reductions.
  ProgressReporter::Shape shape{cfg_.epochs, setup_.sampler->steps_per_epoch(), opt_.accelerators, comm_.rank(),
                                comm_.size()};
  ProgressReporter reporter(progress_, shape, comm_.root() ? progress_mode_ : ProgressMode::kQuiet);
  std::unique_ptr<AcceleratorLive[]> live(new AcceleratorLive[opt_.accelerators]);
  TrainerOptions to = MakeTrainerOptions(reporter, live.get());
  rec_.residency_every = to.residency_every;
  rec_.residency = to.residency_every > 0 ? ResidencyMethodName(DefaultResidencyMethod()) : "off";
  rec_.coalesce_bytes = to.coalesce_bytes;
  if (opt_.timeseries_interval > 0) {
    recorder_ = std::make_unique<TimeSeriesRecorder>(*setup_.io_stats, live.get(), opt_.accelerators, opt_.timeseries_interval);
    recorder_->Start();
  }
  if (metrics_) metrics_->Attach(setup_.io_stats.get(), &progress_, live.get());
  Trainer trainer(cfg_, *setup_.sampler, engine, setup_.table, comm_, std::move(to));
  // Set-up ends here: process start (loader, MPI_Init, listing, indexing, engine) to the first step.
  rec_.setup_seconds = ProcessAgeSeconds();
  rec_.setup_peak_rss_mib = PeakRssMib();
  extras_.setup_peak_rss_mib = rec_.setup_peak_rss_mib;
  extras_.files_held = setup_.file_table->paths().held_count();
  extras_.file_list_bytes = setup_.file_table->paths().bytes();
  if (opt_.json_events && comm_.root()) {
    std::printf("%s\n", nlohmann::json{{"event", "training_start"}, {"setup_seconds", rec_.setup_seconds},
                                       {"peak_rss_mib", rec_.setup_peak_rss_mib}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    std::fflush(stdout);
  }
  result_ = trainer.Run();
  if (recorder_) recorder_->Stop();  // before `live` goes
  if (metrics_) {  // the same
    metrics_->Freeze();
    metrics_->SetPhase(RunPhase::kFinishing);
  }
  counters_ = engine.counters();
  rec_.collates = counters_.collates;
  rec_.collate_seconds = static_cast<double>(counters_.collate_ns) / 1e9;
  if (const auto* s3e = dynamic_cast<const S3Engine*>(&engine)) {
    s3_requests_ = s3e->requests();
    s3_retries_ = s3e->retries();
    s3_max_in_flight_ = s3e->max_gets_in_flight();
  }
}

// This rank's figures of the training block, for the gather.
void TrainingRun::CollectExtras(uint64_t threads) {
  extras_.threads = static_cast<unsigned>(threads);
  extras_.setup_stats = setup_.setup_stats;
  extras_.setup_opens = setup_.setup_opens;
  extras_.setup_reads = setup_.setup_reads;
  extras_.setup_bytes = setup_.setup_bytes;
  extras_.counters = counters_;
  // The prefetchers' checks, and the DlioEngine's per-sample work (a decode in each lane's chain).
  extras_.check_seconds = static_cast<double>(check_ns_.load() + counters_.sample_work_ns) / 1e9;
  extras_.train_cpu_seconds = ProcessCpuSeconds() - cpu0_;
  if (setup_.host_leader) {
    extras_.net_rx_bytes = net_rx_blocks_;
    const double wall = static_cast<double>(NowNs() - t0_) / 1e9;
    extras_.host_cpu = HostCpuBetween(host_cpu0_, SampleHostCpu(), wall, ReadHostInfo().cpu_count, ProcessName()).ToJson();
  }
  extras_.train_start_unix = start_unix_;
  if (opt_.dlio != nullptr && setup_.host_leader) extras_.dlio_host = DlioHostFacts();
  extras_.io = setup_.io_stats.get();
  if (setup_.content) {
    extras_.verify_bytes = setup_.content->bytes_checked.load();
    extras_.verify_seconds = static_cast<double>(setup_.content->ns.load()) / 1e9;
  }
  for (const auto& log : result_.logs) {
    extras_.probe_failures += log.probe_failures;
    extras_.prewarm_batches += log.prewarm_batches;
    extras_.prewarm_bytes += log.prewarm_bytes;
    extras_.prewarm_seconds = std::max(extras_.prewarm_seconds, static_cast<double>(log.prewarm_ns) / 1e9);
  }
  extras_.accelerator_memory = setup_.staging.ToJson(counters_.device_bytes);
}

// Gathers every rank's metrics and facts at rank 0, which writes the results and prints the table. Collective.
int TrainingRun::FinishCompleted() {
  const int64_t gather_t0 = NowNs();
  auto packed = comm_.GatherDoubles(PackRank(cfg_, result_, t0_));
  auto infos = GatherFacts();
  rec_.end_iso = NowIso8601();
  rec_.end_unix = UnixNow();
  // What the end-of-run gather cost rank 0 (an input to the many-host scale model, docs/multihost.md).
  rec_.gather_seconds = static_cast<double>(NowNs() - gather_t0) / 1e9;
  for (const auto& v : packed) rec_.gather_bytes += v.size() * sizeof(double);
  for (const auto& i : infos) rec_.gather_bytes += i.size();
  int code = kExitError;
  if (comm_.root()) {
    std::vector<std::vector<AcceleratorEpoch>> per_acc;
    UnpackRanks(packed, &rec_, &per_acc);
    ParseRankInfos(infos, &rec_);
    rec_.metrics = AggregateRun(per_acc, cfg_.record_length, cfg_.au, Traits(cfg_.rules).throughput_counts_window);
    rec_.per_accelerator = std::move(per_acc);
    rec_.status = rec_.metrics.meets_au ? kStatusPassed : kStatusMissedAu;
    if (metrics_) {
      metrics_->SetJob({rec_.metrics.au_mean_pct, 100 * cfg_.au, static_cast<uint64_t>(rec_.ranks) * rec_.accelerators_per_rank,
                        rec_.metrics.throughput_mean});
    }
    Status w = WriteRunResults(rec_);
    if (!w.ok()) {
      std::fprintf(stderr, "feedrate: error: %s\n", w.ToString().c_str());
      code = kExitError;
    } else {
      if (progress_mode_ == ProgressMode::kJsonEvents) {
        std::printf("%s\n", nlohmann::json{{"event", "done"}, {"status", rec_.status},
                                           {"au_pct", rec_.metrics.au_mean_pct}, {"au_bar_pct", 100 * cfg_.au},
                                           {"accelerators", static_cast<uint64_t>(rec_.ranks) * rec_.accelerators_per_rank},
                                           {"results_dir", rec_.results_dir}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      } else {
        std::printf("%s", FormatResultTable(rec_).c_str());
        std::printf("results: %s\n", rec_.results_dir.c_str());
      }
      std::fflush(stdout);
      code = rec_.metrics.meets_au ? kExitPass : kExitMissedAu;
    }
  }
  code = std::stoi(comm_.Broadcast(std::to_string(code), 0));
  SetFinalPhase(code);
  return code;
}

void TrainingRun::SetFinalPhase(int code) {
  if (!metrics_) return;
  metrics_->SetPhase(code == kExitPass ? RunPhase::kPassed : code == kExitMissedAu ? RunPhase::kMissedAu : RunPhase::kFailed);
}

// The endpoint, before set-up: a host's ranks serve PORT, PORT+1, ... in rank order (one process per port).
Status TrainingRun::StartMetrics() {
  if (opt_.metrics_listen.empty() && opt_.metrics_textfile.empty()) return Status::Ok();
  const std::string& host = comm_.hostname(comm_.rank());
  metrics_ = std::make_unique<LiveMetrics>(LiveMetrics::Labels{cfg_.name, host, opt_.version, comm_.rank()}, opt_.accelerators);
  if (!opt_.metrics_textfile.empty()) {
    metrics_file_ = std::make_unique<MetricsTextfile>(
        *metrics_, opt_.metrics_textfile + "/feedrate_rank" + std::to_string(comm_.rank()) + ".prom", 1.0);
    FEEDRATE_RETURN_IF_ERROR(metrics_file_->Start());
  }
  if (opt_.metrics_listen.empty()) return Status::Ok();
  int local = 0;
  for (int r = 0; r < comm_.rank(); ++r) local += comm_.hostname(r) == host ? 1 : 0;
  FEEDRATE_ASSIGN_OR_RETURN(const ListenAddress where, ParseListenAddress(opt_.metrics_listen, local));
  FEEDRATE_ASSIGN_OR_RETURN(metrics_server_, MetricsServer::Start(where, [m = metrics_.get()] { return m->Render(); }));
  if (comm_.root()) {
    std::fprintf(stderr, "feedrate: metrics at http://%s/metrics%s\n", metrics_server_->address().c_str(),
                 comm_.size() > comm_.num_hosts() ? " (a host's further ranks: the ports after it)" : "");
  }
  return Status::Ok();
}

void TrainingRun::HoldMetrics() {
  if (metrics_file_) {  // the final figures, for the collector's next read
    const Status st = metrics_file_->Stop();
    if (!st.ok()) std::fprintf(stderr, "feedrate: warning: --metrics-textfile: %s\n", st.ToString().c_str());
  }
  if (!metrics_server_ || opt_.metrics_hold <= 0 || Interrupted()) return;
  const RunPhase p = metrics_->phase();
  if (p == RunPhase::kSetup || p == RunPhase::kInterrupted) return;  // nothing ran, or the user stopped it
  const uint64_t after = metrics_server_->begun();  // a scrape begun from now on renders the final figures
  if (comm_.root()) {  // (said, so a run nobody scrapes is not taken for a hang)
    std::fprintf(stderr, "feedrate: metrics: waiting up to %g s for a scrape of the final figures (--metrics-hold)\n",
                 opt_.metrics_hold);
  }
  const int64_t deadline = NowNs() + static_cast<int64_t>(opt_.metrics_hold * 1e9);
  while (!Interrupted() && NowNs() < deadline) {
    if (metrics_server_->WaitForScrape(after, 0.2)) return;
  }
  if (comm_.root()) std::fprintf(stderr, "feedrate: metrics: no scrape came for the final figures\n");
}

int TrainingRun::Execute() {
  StartRecord();
  Status st = CreateResultsDir();
  if (st.ok()) st = StartMetrics();
  if (st.ok()) st = PrepareRank(cfg_, opt_, comm_, &setup_);
  DescribeSetup();
  std::string setup_error = comm_.AgreeFirstError(st);
  if (!setup_error.empty()) return FinishFailed("failed", setup_error, kExitError);
  setup_error = comm_.AgreeFirstError(CommitResultsDir());
  if (!setup_error.empty()) return FinishFailed("failed", setup_error, kExitError);
  const std::string refused = comm_.AgreeFirstError(CheckDeclaredCategory());
  if (!refused.empty()) return FinishFailed("failed", refused, kExitError);
  // A signal during set-up (listing, indexing, a cache drop): no step is started; every rank agrees.
  if (comm_.AnyTrue(Interrupted())) return FinishFailed("interrupted", "interrupted by a signal during set-up", kExitInterrupted);
  if (comm_.root()) {
    for (const auto& w : rec_.warnings) std::fprintf(stderr, "feedrate: warning: %s\n", w.c_str());
  }
  WarnNarrowAffinity();
  // The step agreement's own cost, both ways, while nobody is late (the training steps then add waiting).
  rec_.barrier_flat_s = comm_.TimeStepBarriers(StepBarrierMode::kFlat, opt_.barrier_calibration_rounds);
  rec_.barrier_hierarchical_s = comm_.TimeStepBarriers(StepBarrierMode::kHierarchical, opt_.barrier_calibration_rounds);

  t0_ = NowNs();
  cpu0_ = ProcessCpuSeconds();
  if (setup_.host_leader) host_cpu0_ = SampleHostCpu();  // the whole host's, beside this process's
  start_unix_ = UnixNow();
  progress_mode_ = ChooseProgressMode(opt_.quiet, opt_.json_events);
  Train();
  // Joins the I/O threads before results are gathered; not when a read was lost: its thread may never return.
  if (!result_.lost_completion) setup_.engine.engine.reset();
  rec_.wall_seconds = static_cast<double>(NowNs() - t0_) / 1e9;
  rec_.steps_per_epoch = result_.steps_per_epoch;
  CollectExtras(opt_.accelerators + setup_.plan.io_threads);

  std::string run_error = comm_.AgreeFirstError(result_.error);
  if (!run_error.empty()) {
    const int code = FinishFailed("failed", run_error, kExitError);
    // A lost read may still complete into this run's buffers: record written, end without freeing them.
    if (result_.lost_completion) comm_.FinalizeAndExit(code);
    return code;
  }
  // Every rank makes this collective: a signal seen by one rank only must not leave the others in it alone.
  if (comm_.AnyTrue(result_.stopped || result_.interrupted)) {
    const int code = FinishFailed("interrupted", "interrupted by a signal", kExitInterrupted);
    if (result_.lost_completion) comm_.FinalizeAndExit(code);  // reads left in flight at the stop (see above)
    return code;
  }
  return FinishCompleted();
}

}  // namespace

// The run reads with the configuration as the edition's DLIO holds it on this host: v3.0's sizes reader.read_threads 1
// to the host's CPUs per accelerator (SizeReadThreadsForHost; DLIO's ranks on a node are the accelerators here).
int RunTraining(const WorkloadConfig& cfg, const RunOptions& opt, Comm& comm) {
  WorkloadConfig sized = cfg;
  std::string note = SizeReadThreadsForHost(&sized, ReadHostInfo().cpu_count,
                                            opt.accelerators * static_cast<uint64_t>(comm.ranks_on_host()),
                                            std::getenv("DLIO_MAX_AUTO_THREADS"));
  TrainingRun run(sized, opt, comm, std::move(note));
  const int code = run.Execute();
  run.HoldMetrics();
  return code;
}

}  // namespace feedrate
