// Run orchestration: setup (agreed across ranks), the training loop, gathering to rank 0, results.
#include "emulator/run/run.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>

#include "emulator/host/cache_control.h"
#include "emulator/host/storage_stats.h"
#include "emulator/host/sysinfo.h"
#include "emulator/results/results.h"
#include "emulator/run/run_gather.h"
#include "emulator/run/run_s3.h"
#include "emulator/training/compute_clock.h"
#include "emulator/training/interrupt.h"
#include "emulator/training/timeseries.h"
#include "emulator/training/trainer.h"
#include "loader/dataset/dataset.h"
#include "loader/format/sample_index.h"
#include "loader/io/direct_io.h"
#include "loader/io/engine_factory.h"
#include "loader/pipeline/prefetcher.h"
#include "loader/pipeline/sampler.h"
#include "loader/s3/s3_engine.h"
#include "loader/util/content_pattern.h"

namespace feedrate {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Setup {
  std::vector<std::string> files;
  SampleTable table;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<Sampler> eval_sampler;  // workflow.evaluation
  uint64_t eval_id_offset = 0;            // sample ids of the validation files start here
  std::unique_ptr<FileTable> file_table;
  std::unique_ptr<FaultInjector> faults;  // --inject; outlives the engine that applies it
  std::unique_ptr<IoStats> io_stats;      // live read counts and latencies; outlives the engine that fills it
  std::unique_ptr<CacheControl> cache;    // --cache over the files this rank reads
  StorageCounter storage;                 // the data dir's device counters (read by the host leader only)
  bool host_leader = false;               // the lowest rank on its host
  std::unique_ptr<ContentCheck> content;  // --verify
  EngineOptions engine_options;
  EngineChoice engine;
  uint64_t io_threads = 1;
  bool retain = false;  // batches land in per-slot memory (asked for, or needed by the sample check)
  double dataset_bytes = 0;
  double buffer_bytes = 0;
  std::vector<std::string> warnings;
  std::unique_ptr<S3RunSetup> s3;  // S3 datasets (storage.storage_type s3): run_s3.h
};

// The split's files: a directory listing, or the S3 keys rank 0 listed.
Result<std::vector<std::string>> DiscoverSplit(const WorkloadConfig& cfg, const std::string& split, uint64_t n,
                                               uint64_t subfolders, Setup* s) {
  if (s->s3) return split == "train" ? s->s3->train : s->s3->valid;
  return DiscoverFiles(cfg.data_folder, split, cfg.format, n, subfolders);
}

std::string Gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / kGiB);
  return b;
}

// Everything a rank does before training; any failure is a Status naming the file/key and the cause.
Status PrepareRank(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, Setup* s) {
  if (opt.accelerators == 0) return Status::InvalidArgument("--accelerators must be at least 1");
  if (!cfg.do_train) {
    const bool checkpointing = cfg.tree["workflow"] && cfg.tree["workflow"]["checkpoint"];
    return Status::InvalidArgument(cfg.source + ": key workflow.train is False: nothing to run" +
                                   std::string(checkpointing ? " (a checkpointing workload? `feedrate checkpoint` runs those)" : ""));
  }
  auto cache_mode = ParseCacheMode(opt.cache);
  if (!cache_mode.ok()) return cache_mode.status();
  if (cfg.odirect && (*cache_mode == CacheMode::kDrop || *cache_mode == CacheMode::kDropOnce)) {
    return Status::InvalidArgument("--cache " + opt.cache + " with O_DIRECT reads (reader.odirect): O_DIRECT already "
                                   "bypasses the page cache; use --cache direct");
  }
  if (*cache_mode == CacheMode::kDirect && !cfg.odirect) {
    return Status::InvalidArgument("--cache direct needs O_DIRECT reads (reader.odirect: true)");
  }
  if (cfg.odirect) cache_mode = CacheMode::kDirect;
  if (!TrainingFormatSupported(cfg.format)) {
    return Status::Unsupported(cfg.source + ": key dataset.format: '" + cfg.format +
                               "' training reads are not supported yet (npz, npy, tfrecord, hdf5, indexed_binary, jpeg and png are)");
  }
  if (cfg.on_s3()) {
    s->s3 = std::make_unique<S3RunSetup>();
    FEEDRATE_RETURN_IF_ERROR(PrepareS3(cfg, comm, *cache_mode, opt.cache, s->s3.get()));
  }
  auto files = DiscoverSplit(cfg, "train", cfg.num_files_train, cfg.num_subfolders_train, s);
  if (!files.ok()) return files.status();
  s->files = std::move(*files);

  SamplerConfig sc;
  sc.num_files = cfg.num_files_train;
  sc.samples_per_file = cfg.num_samples_per_file;
  sc.batch_size = cfg.batch_size;
  sc.world = static_cast<uint64_t>(comm.size()) * opt.accelerators;
  sc.data_loader = cfg.data_loader;
  sc.order = cfg.order;
  sc.file_shuffle = cfg.file_shuffle != "off";
  sc.sample_shuffle = cfg.sample_shuffle != "off";
  sc.shuffle_size = cfg.shuffle_size;
  sc.seed = static_cast<uint32_t>(cfg.seed);
  sc.seed_change_epoch = cfg.seed_change_epoch;
  sc.total_training_steps = cfg.total_training_steps;
  auto sampler = Sampler::Create(sc);
  if (!sampler.ok()) return sampler.status().WithContext(cfg.source);
  s->sampler = std::make_unique<Sampler>(std::move(*sampler));
  for (const auto& w : s->sampler->warnings()) s->warnings.push_back(w);
  uint64_t steps = s->sampler->steps_per_epoch();
  if (steps <= cfg.metric_exclude_start_steps + cfg.metric_exclude_end_steps) {
    return Status::InvalidArgument(cfg.source + ": an epoch has " + std::to_string(steps) +
                                   " step(s) per accelerator, not more than the " +
                                   std::to_string(cfg.metric_exclude_start_steps + cfg.metric_exclude_end_steps) +
                                   " excluded from the metrics: use more files or fewer accelerators");
  }

  // Evaluation: the validation files follow the training files in the file table and the sample table.
  const size_t train_files = s->files.size();
  if (cfg.do_eval) {
    if (cfg.num_files_eval == 0) {
      return Status::InvalidArgument(cfg.source + ": workflow.evaluation is True but dataset.num_files_eval is 0");
    }
    auto eval_files = DiscoverSplit(cfg, "valid", cfg.num_files_eval, cfg.num_subfolders_eval, s);
    if (!eval_files.ok()) return eval_files.status();
    s->files.insert(s->files.end(), eval_files->begin(), eval_files->end());
    SamplerConfig ec = sc;
    ec.num_files = cfg.num_files_eval;
    ec.batch_size = cfg.batch_size_eval;
    ec.total_training_steps = -1;
    auto eval_sampler = Sampler::Create(ec);
    if (!eval_sampler.ok()) return eval_sampler.status().WithContext(cfg.source + " (evaluation)");
    s->eval_sampler = std::make_unique<Sampler>(std::move(*eval_sampler));
    s->eval_id_offset = train_files * cfg.num_samples_per_file;
  }

  // Index only the files this rank's accelerators read (the same files every epoch in DLIO order).
  std::vector<char> needed(s->files.size(), 0);
  std::vector<uint64_t> ids;
  // Orders that change between epochs (Feedrate's shuffle, tf.data's shuffle buffer) may touch other files later.
  const bool varies = cfg.order == "shuffled" || (cfg.data_loader == "tensorflow" && cfg.sample_shuffle != "off");
  uint64_t epochs_to_scan = varies ? cfg.epochs : 1;
  for (uint64_t a = 0; a < opt.accelerators; ++a) {
    for (uint64_t e = 1; e <= epochs_to_scan; ++e) {
      s->sampler->EpochSamples(e, static_cast<uint64_t>(comm.rank()) * opt.accelerators + a, &ids);
      for (uint64_t id : ids) needed[id / cfg.num_samples_per_file] = 1;
      if (s->eval_sampler) {
        s->eval_sampler->EpochSamples(e, static_cast<uint64_t>(comm.rank()) * opt.accelerators + a, &ids);
        for (uint64_t id : ids) needed[(id + s->eval_id_offset) / cfg.num_samples_per_file] = 1;
      }
    }
  }
  std::vector<std::string> to_index;
  std::vector<size_t> which, which_eval;
  for (size_t i = 0; i < s->files.size(); ++i) {
    if (needed[i]) {
      to_index.push_back(s->files[i]);
      (i < train_files ? which : which_eval).push_back(i);
    }
  }
  s->host_leader = comm.host_leader();
  s->cache = std::make_unique<CacheControl>(*cache_mode, s->s3 ? std::vector<std::string>() : to_index,
                                            opt.drop_system_caches, s->host_leader);
  if (!s->s3) s->storage = StorageCounter::For(cfg.data_folder);
  // DLIO runs reader.read_threads workers per accelerator. Feedrate's I/O threads serve all of a rank's
  // accelerators; beyond a few per CPU they only fight over the cores (measured: 10 emulated A100s on 2 CPUs
  // kept 97% AU with 4-10 threads, 71% with 40). The cap does not apply to POSIX O_DIRECT reads, whose only
  // concurrency is blocked threads.
  const uint64_t dlio_threads = cfg.read_threads * opt.accelerators;
  const uint64_t cap = std::max<uint64_t>(cfg.read_threads, 4 * std::max<size_t>(1, CpuAffinity().size()));
  const bool capped = opt.io_threads == 0 && !(cfg.engine == "posix" && cfg.odirect) && dlio_threads > cap;
  s->io_threads = opt.io_threads > 0 ? opt.io_threads : (capped ? cap : dlio_threads);
  if (capped) {
    s->warnings.push_back("I/O threads per rank: " + std::to_string(cap) + " (reader.read_threads x accelerators = " +
                          std::to_string(dlio_threads) + ", capped at 4 per CPU; --io-threads sets it)");
  }
  IndexOptions io;
  io.format = cfg.format;
  io.samples_per_file = cfg.num_samples_per_file;
  io.data_folder = s->s3 ? cfg.S3DataPrefix() : cfg.data_folder;  // (S3: index keys under the normalised prefix)
  std::unique_ptr<S3SourceOpener> opener;
  if (s->s3) {
    opener = std::make_unique<S3SourceOpener>(s->s3->store, s->s3->sizes);
    io.opener = opener.get();
  }
  s->table = SampleTable(s->files.size(), cfg.num_samples_per_file);
  FEEDRATE_RETURN_IF_ERROR(IndexTrainingFiles(s->files, which, io, std::min<size_t>(s->io_threads, 16), &s->table));
  io.split = "valid";
  FEEDRATE_RETURN_IF_ERROR(IndexTrainingFiles(s->files, which_eval, io, std::min<size_t>(s->io_threads, 16), &s->table));
  if (cfg.format == "tfrecord") s->table.check = cfg.verify_crc ? SampleCheck::kTfRecordCrc : SampleCheck::kTfRecordFrame;
  if (!s->table.codecs().empty()) s->table.check = SampleCheck::kHdf5Decode;
  const bool image = cfg.format == "jpeg" || cfg.format == "jpg" || cfg.format == "png";
  if (cfg.decode_images && image) s->table.check = SampleCheck::kImageDecode;
  if (cfg.decode_images && !image) {
    s->warnings.push_back("feedrate.decode_images applies to jpeg and png datasets; '" + cfg.format + "' samples are not decoded");
  }
  double local_bytes = 0;
  for (size_t f : which) local_bytes += static_cast<double>(s->table.FileDataBytes(static_cast<uint32_t>(f)));
  // Dataset size estimate for the page-cache check: this rank's files scaled to the whole dataset.
  s->dataset_bytes = which.empty() ? 0 : local_bytes / static_cast<double>(which.size()) * static_cast<double>(train_files);

  EngineOptions& eo = s->engine_options;
  eo.threads = s->io_threads;
  eo.transfer_size = cfg.transfer_size;
  // Cached (buffered) reads are CPU-bound copies: depth beyond 1 makes io_uring punt them to worker threads
  // (measured on tmpfs, 5 emulated H100s: qd 1 91.9% AU at 0.135 CPU s/GiB, qd 2 74% at 0.17). O_DIRECT needs
  // depth to keep a device busy.
  eo.queue_depth = cfg.queue_depth > 0 ? cfg.queue_depth : (cfg.odirect ? 16 : 1);
  if (s->s3) {
    // An event loop per CPU at most (each drives many requests); GETs wait on the network, not on a copy, so
    // they need depth: 16 per loop unless reader/--queue-depth says otherwise.
    eo.threads = std::min<uint64_t>(s->io_threads, std::max<size_t>(1, CpuAffinity().size()));
    eo.queue_depth = cfg.queue_depth > 0 ? cfg.queue_depth : 16;
  }
  eo.queue_capacity = opt.accelerators * std::max<uint64_t>(1, cfg.prefetch_size) * cfg.batch_size + 16;
  eo.odirect = cfg.odirect;
  if (cfg.odirect && !to_index.empty()) {
    auto align = DirectIoAlignment(to_index.front());
    if (!align.ok()) return align.status();
    eo.direct_align = *align;
  }

  if (opt.verify > 0) {
    if (!ContentVerifiable(cfg.format)) {
      return Status::InvalidArgument("--verify: content checks cover npz, npy, tfrecord and indexed_binary datasets, not '" +
                                     cfg.format + "'");
    }
    Result<uint64_t> seed = Status::Ok();
    if (s->s3) {
      seed = ReadS3ContentMarker(*s->s3);
    } else {
      seed = ReadContentMarker(cfg.data_folder);
    }
    if (!seed.ok()) return seed.status();
    s->content = std::make_unique<ContentCheck>();
    s->content->format = cfg.format;
    s->content->fraction = std::min(1.0, opt.verify);
    for (const auto& f : s->files) {
      const std::string rel = s->s3 ? f.substr(s->s3->store.Key("").size())
                                    : std::filesystem::path(f).lexically_relative(cfg.data_folder).string();
      s->content->keys.push_back(ContentKey(*seed, rel));
    }
  }
  uint64_t max_extent = s->table.MaxLength();
  // Checking a record needs all of it in one buffer: the engine hands over samples that fit one transfer in
  // place; larger ones are checked in retained batch memory.
  s->retain = opt.retain_batches ||
              ((s->table.check != SampleCheck::kNone || s->content) && max_extent + 2 * eo.direct_align > eo.transfer_size);
  double engine_bytes = static_cast<double>(EngineBufferBytes(cfg.engine, eo));
  double retain_bytes = s->retain ? static_cast<double>(opt.accelerators * std::max<uint64_t>(1, cfg.prefetch_size) *
                                                                 cfg.batch_size) * static_cast<double>(max_extent + 2 * eo.direct_align)
                                           : 0;
  s->buffer_bytes = engine_bytes + retain_bytes;
  HostInfo host = ReadHostInfo();
  if (s->buffer_bytes > static_cast<double>(host.mem_available_bytes) / 2) {
    return Status::InvalidArgument("read buffers would need " + Gib(s->buffer_bytes) + " per rank, more than half of " +
                                   "MemAvailable (" + Gib(static_cast<double>(host.mem_available_bytes)) +
                                   "): lower reader.transfer_size, --queue-depth, the I/O threads" +
                                   (opt.retain_batches ? " or drop --retain-batches" : "") +
                                   (s->table.check != SampleCheck::kNone ? " or lower reader.batch_size" : ""));
  }
  // DLIO's PyTorch readers open every sample's file (on_demand); TensorFlow streams each file through.
  const FileOpenMode mode = cfg.keep_files_open ? FileOpenMode::kOnce
                            : cfg.data_loader == "tensorflow" ? FileOpenMode::kStream
                                                              : FileOpenMode::kPerSample;
  auto table = FileTable::Create(s->files, s->s3 ? FileOpenMode::kPerSample : mode, cfg.odirect ? O_DIRECT : 0);
  if (!table.ok()) return table.status();
  s->file_table = std::make_unique<FileTable>(std::move(*table));
  if (!opt.inject.empty()) {
    auto plan = ParseFaultPlan(opt.inject);
    if (!plan.ok()) return plan.status();
    s->faults = std::make_unique<FaultInjector>(std::move(*plan), cfg.odirect ? eo.direct_align : 1);
    s->faults->BindFiles(*s->file_table);
    eo.faults = s->faults.get();
    s->warnings.push_back("faults injected into the training reads (--inject " + opt.inject +
                          "): the results measure them, not the storage alone");
  }
  s->io_stats = std::make_unique<IoStats>(s->io_threads);
  eo.stats = s->io_stats.get();
  if (s->s3) {
    if (cfg.engine != "auto") {
      s->warnings.push_back("feedrate.engine " + cfg.engine + " does not apply to an S3 dataset: the s3 engine reads it");
    }
    auto engine = S3Engine::Create(*s->file_table, eo, s->s3->store);
    if (!engine.ok()) return engine.status();
    s->engine.description = (*engine)->description();
    s->engine.engine = std::move(*engine);
    return Status::Ok();
  }
  auto engine = MakeEngine(cfg.engine, *s->file_table, eo);
  if (!engine.ok()) return engine.status();
  s->engine = std::move(*engine);
  if (!s->engine.fallback_reason.empty()) {
    std::fprintf(stderr, "feedrate: warning: rank %d: io_uring unavailable (%s); using the posix engine\n", comm.rank(),
                 s->engine.fallback_reason.c_str());
  }
  return Status::Ok();
}

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

}  // namespace

int RunTraining(const WorkloadConfig& cfg, const RunOptions& opt, Comm& comm) {
  RunRecord rec;
  rec.cfg = &cfg;
  rec.version = opt.version;
  rec.ranks = comm.size();
  rec.accelerators_per_rank = opt.accelerators;
  rec.start_iso = NowIso8601();
  rec.inject = opt.inject;
  rec.cache_mode = cfg.odirect ? "direct" : cfg.on_s3() ? "s3" : opt.cache;
  rec.command_line = opt.command_line;
  rec.verify_fraction = opt.verify;
  rec.num_hosts = comm.num_hosts();
  rec.step_barrier_mode = comm.step_barrier() == StepBarrierMode::kHierarchical ? "hierarchical" : "flat";
  if (!cfg.warnings.empty()) {
    std::string keys;
    for (const auto& k : cfg.warnings) keys += (keys.empty() ? "" : ", ") + k;
    rec.warnings.push_back("keys accepted but not implemented by Feedrate yet (no effect): " + keys);
  }
  if (std::string note = TrainingCheckpointNote(cfg); !note.empty()) rec.warnings.push_back(note);

  // Rank 0 chooses and creates the results directory first, so an unwritable one fails before any work.
  Status st;
  if (comm.root()) {
    rec.results_dir = opt.results_dir.empty() ? "results/" + NowCompact() + "_" + cfg.name : opt.results_dir;
    std::error_code ec;
    std::filesystem::create_directories(rec.results_dir, ec);
    if (ec) st = Status::Errno("cannot create results directory " + rec.results_dir, ec.value());
  }
  // A job the collective watchdog ends (MPI_Abort) still leaves a failed-run record: rank 0 writes what it knows.
  if (comm.root() && st.ok()) {
    comm.SetAbortHook([&rec](const std::string& message) {
      RunRecord failed = rec;
      failed.status = "failed";
      failed.error = message;
      failed.end_iso = NowIso8601();
      (void)WriteRunResults(failed);
    });
  }
  struct ClearHook {
    Comm& comm;
    ~ClearHook() { comm.SetAbortHook(nullptr); }
  } clear_hook{comm};
  Setup setup;
  if (st.ok()) st = PrepareRank(cfg, opt, comm, &setup);
  rec.io_threads_per_rank = setup.io_threads;
  rec.retain_batches = setup.retain;
  if (setup.file_table) rec.file_open_mode = FileOpenModeName(setup.file_table->mode());
  rec.sample_check = setup.table.check == SampleCheck::kTfRecordCrc     ? "tfrecord: length and payload CRC-32C"
                     : setup.table.check == SampleCheck::kTfRecordFrame ? "tfrecord: length field and its CRC (feedrate.verify_crc off)"
                     : setup.table.check == SampleCheck::kHdf5Decode
                         ? "hdf5: filtered chunks read raw through the I/O engine, each whole chunk per sample, decoded on the "
                           "I/O threads (" + setup.table.codecs().front().description + ")"
                     : setup.table.check == SampleCheck::kImageDecode
                         ? "image: every sample decoded to pixels on the I/O threads (libjpeg-turbo / libpng), as DLIO's PIL reader does"
                         : "none";
  rec.dataset_bytes = setup.dataset_bytes;
  rec.buffer_bytes_per_rank = setup.buffer_bytes;
  for (const auto& w : setup.warnings) rec.warnings.push_back(w);

  auto agree_error = [&](const Status& local) -> std::string {
    int bad = comm.LowestTrue(!local.ok());
    if (bad < 0) return "";
    std::string msg = comm.rank() == bad ? local.ToString() : "";
    std::string host = comm.rank() == bad ? ReadHostInfo().hostname : "";
    msg = comm.Broadcast(msg, bad);
    host = comm.Broadcast(host, bad);
    return comm.size() > 1 ? "rank " + std::to_string(bad) + " (" + host + "): " + msg : msg;
  };
  // What this rank reports at the end (filled in as the run goes), and its time series once training started.
  RankExtras extras;
  uint64_t s3_requests = 0, s3_retries = 0;  // the S3 engine's GETs (retries included) and retries
  std::unique_ptr<TimeSeriesRecorder> recorder;
  DeviceEpochs device;
  auto gather_facts = [&] {
    extras.faults = setup.faults.get();
    if (setup.cache) extras.cache = setup.cache->ToJson();
    extras.storage = StorageJson(setup, device);
    if (setup.s3) AddS3Facts(*setup.s3, s3_requests, s3_retries, &extras.storage);
    auto infos = comm.GatherStrings(RankInfoJson(comm, extras));
    if (recorder) {
      recorder->Stop();
      auto rows = comm.GatherStrings(TimeSeriesRows(comm.rank(), ReadHostInfo().hostname, recorder->rows()));
      if (comm.root()) {
        rec.timeseries_csv = MergeTimeSeries(rows, static_cast<double>(comm.size() * opt.accelerators), opt.timeseries_interval);
        rec.timeseries_interval = opt.timeseries_interval;
      }
    }
    return infos;
  };
  auto finish_failed = [&](const std::string& status, const std::string& error, int code) {
    rec.status = status;
    rec.error = error;
    rec.end_iso = NowIso8601();
    auto infos = gather_facts();
    if (comm.root()) {
      ParseRankInfos(infos, &rec);
      std::fprintf(stderr, "feedrate: error: %s\n", error.c_str());
      if (opt.json_events) {
        std::printf("%s\n", nlohmann::json{{"event", "done"}, {"status", status}, {"error", error},
                                           {"results_dir", rec.results_dir}}.dump().c_str());
        std::fflush(stdout);
      }
      std::error_code ec;
      if (!rec.results_dir.empty() && std::filesystem::is_directory(rec.results_dir, ec)) {
        Status w = WriteRunResults(rec);
        if (!w.ok()) std::fprintf(stderr, "feedrate: error: %s\n", w.ToString().c_str());
      }
    }
    return code;
  };

  std::string setup_error = agree_error(st);
  if (!setup_error.empty()) return finish_failed("failed", setup_error, kExitError);

  if (comm.root()) {
    for (const auto& w : rec.warnings) std::fprintf(stderr, "feedrate: warning: %s\n", w.c_str());
  }
  const unsigned threads = static_cast<unsigned>(opt.accelerators + setup.io_threads);
  auto cpus = CpuAffinity();
  HostInfo host = ReadHostInfo();
  if (cpus.size() < host.cpu_count && cpus.size() < threads) {
    std::fprintf(stderr,
                 "feedrate: warning: rank %d may run on CPUs %s only (%zu of %u) but runs %u threads; "
                 "with mpirun use --bind-to none or --map-by slot:PE=N\n",
                 comm.rank(), CpuListString(cpus).c_str(), cpus.size(), host.cpu_count, threads);
  }

  // The step agreement's own cost, both ways, while nobody is late (the training steps then add waiting).
  rec.barrier_flat_s = comm.TimeStepBarriers(StepBarrierMode::kFlat, opt.barrier_calibration_rounds);
  rec.barrier_hierarchical_s = comm.TimeStepBarriers(StepBarrierMode::kHierarchical, opt.barrier_calibration_rounds);

  TrainingResult result;
  int64_t t0 = NowNs();
  const double cpu0 = ProcessCpuSeconds();
  const uint64_t net_rx0 = setup.host_leader ? NetworkRxBytes() : 0;
  const double start_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();  // skew between hosts
  EngineCounters counters;
  std::atomic<uint64_t> check_ns{0};  // I/O threads' time in sample checks (CRC, decoding)
  TrainProgress progress;             // rank 0's live counters
  const ProgressMode progress_mode = ChooseProgressMode(opt.quiet, opt.json_events);
  {
    IoEngine& engine = *setup.engine.engine;
    rec.engine = engine.name();
    rec.engine_description = setup.engine.description;
    rec.queue_depth = setup.engine_options.queue_depth;
    TrainerOptions to;
    to.accelerators = opt.accelerators;
    to.retain_batches = setup.retain;
    to.direct_align = cfg.odirect ? setup.engine_options.direct_align : 0;
    uint64_t steps = setup.sampler->steps_per_epoch();
    // Rank 0 reports; the other ranks only take part in the per-epoch reductions.
    ProgressReporter::Shape shape{cfg.epochs, steps, opt.accelerators, comm.rank(), comm.size()};
    ProgressReporter reporter(progress, shape, comm.root() ? progress_mode : ProgressMode::kQuiet);
    to.progress = comm.root() ? &progress : nullptr;
    to.on_epoch = [&](uint64_t epoch, const std::vector<AcceleratorLog>& logs) {
      ReportEpoch(cfg, comm, epoch, steps, logs, &reporter);
    };
    to.files = setup.file_table.get();
    to.coalesce_bytes = cfg.coalesce_reads ? setup.engine_options.transfer_size : 0;
    to.eval_sampler = setup.eval_sampler.get();
    to.eval_id_offset = setup.eval_id_offset;
    to.check_ns = setup.table.check != SampleCheck::kNone ? &check_ns : nullptr;
    // Page cache and device counters around each epoch: drop (when asked), then the device counters start; they
    // stop when the training block ends.
    device.bytes.assign(cfg.epochs, 0);
    device.requests.assign(cfg.epochs, 0);
    const bool count_device = setup.host_leader && setup.storage.kind() != "none";
    to.before_epoch = [&](uint64_t epoch) -> Status {
      Status drop = setup.cache->BeforeEpoch(epoch);
      if (count_device) device.start = setup.storage.Read();
      return drop;
    };
    to.after_block = [&](uint64_t epoch) {
      if (!count_device || !device.start) return;
      auto end = setup.storage.Read();
      if (!end) return;
      device.bytes[epoch - 1] = static_cast<double>(end->bytes - device.start->bytes);
      device.requests[epoch - 1] = static_cast<double>(end->requests - device.start->requests);
      device.epochs = epoch;
    };
    // About 512 probes per accelerator and epoch: enough for the fraction, cheap beside the reads.
    to.residency_every = setup.cache->mode() == CacheMode::kDirect || setup.s3 || opt.residency == "off"
                             ? 0
                             : std::max<uint64_t>(1, setup.sampler->samples_per_epoch_per_accelerator() / 512);
    rec.residency_every = to.residency_every;
    rec.residency = to.residency_every > 0 ? ResidencyMethodName(DefaultResidencyMethod()) : "off";
    std::unique_ptr<AcceleratorLive[]> live(new AcceleratorLive[opt.accelerators]);
    to.live = live.get();
    to.content = setup.content.get();
    rec.coalesce_bytes = to.coalesce_bytes;
    if (opt.timeseries_interval > 0) {
      recorder = std::make_unique<TimeSeriesRecorder>(*setup.io_stats, live.get(), opt.accelerators, opt.timeseries_interval);
      recorder->Start();
    }
    Trainer trainer(cfg, *setup.sampler, engine, setup.table, comm, std::move(to));
    result = trainer.Run();
    if (recorder) recorder->Stop();  // before `live` goes
    counters = engine.counters();
    if (const auto* s3e = dynamic_cast<const S3Engine*>(&engine)) {
      s3_requests = s3e->requests();
      s3_retries = s3e->retries();
    }
  }
  setup.engine.engine.reset();  // joins the I/O threads before results are gathered
  rec.wall_seconds = static_cast<double>(NowNs() - t0) / 1e9;
  rec.steps_per_epoch = result.steps_per_epoch;

  extras.threads = threads;
  extras.counters = counters;
  extras.check_seconds = static_cast<double>(check_ns.load()) / 1e9;
  extras.train_cpu_seconds = ProcessCpuSeconds() - cpu0;
  if (setup.host_leader) extras.net_rx_bytes = NetworkRxBytes() - net_rx0;
  extras.train_start_unix = start_unix;
  extras.io = setup.io_stats.get();
  if (setup.content) {
    extras.verify_bytes = setup.content->bytes_checked.load();
    extras.verify_seconds = static_cast<double>(setup.content->ns.load()) / 1e9;
  }
  for (const auto& log : result.logs) extras.probe_failures += log.probe_failures;
  std::string run_error = agree_error(result.error);
  if (!run_error.empty()) return finish_failed("failed", run_error, kExitError);
  // Every rank makes this collective: a signal seen by one rank only must not leave the others in it alone.
  if (comm.AnyTrue(result.stopped || result.interrupted)) {
    return finish_failed("interrupted", "interrupted by a signal", kExitInterrupted);
  }

  const int64_t gather_t0 = NowNs();
  auto packed = comm.GatherDoubles(PackRank(cfg, result));
  auto infos = gather_facts();
  rec.end_iso = NowIso8601();
  // What the end-of-run gather cost rank 0 (an input to the many-host scale model, docs/multihost.md).
  rec.gather_seconds = static_cast<double>(NowNs() - gather_t0) / 1e9;
  for (const auto& v : packed) rec.gather_bytes += v.size() * sizeof(double);
  for (const auto& i : infos) rec.gather_bytes += i.size();
  int code = kExitError;
  if (comm.root()) {
    std::vector<std::vector<AcceleratorEpoch>> per_acc;
    UnpackRanks(packed, &rec, &per_acc);
    ParseRankInfos(infos, &rec);
    rec.metrics = AggregateRun(per_acc, cfg.record_length, cfg.au);
    rec.per_accelerator = std::move(per_acc);
    rec.status = rec.metrics.meets_au ? "success" : "fail";
    Status w = WriteRunResults(rec);
    if (!w.ok()) {
      std::fprintf(stderr, "feedrate: error: %s\n", w.ToString().c_str());
      code = kExitError;
    } else {
      if (progress_mode == ProgressMode::kJsonEvents) {
        std::printf("%s\n", nlohmann::json{{"event", "done"}, {"status", rec.status},
                                           {"au_pct", rec.metrics.au_mean_pct}, {"au_bar_pct", 100 * cfg.au},
                                           {"accelerators", static_cast<uint64_t>(rec.ranks) * rec.accelerators_per_rank},
                                           {"results_dir", rec.results_dir}}.dump().c_str());
      } else {
        std::printf("%s", FormatResultTable(rec).c_str());
        std::printf("results: %s\n", rec.results_dir.c_str());
      }
      std::fflush(stdout);
      code = rec.metrics.meets_au ? kExitPass : kExitMissedAu;
    }
  }
  return std::stoi(comm.Broadcast(std::to_string(code), 0));
}

}  // namespace feedrate
