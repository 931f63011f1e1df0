// The engine a rank's run reads with, and the access pattern it replays (docs/engines.md, docs/dlio-compatibility.md).
#include "emulator/run/run_engine.h"

#include <fcntl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "emulator/host/sysinfo.h"
#include "loader/format/dlio_planner.h"
#include "loader/io/dlio_engine.h"
#include "loader/io/page_cache.h"
#include "loader/s3/s3_engine.h"

namespace feedrate {
namespace {

// run --gds: the cuFile engine over the stagings' registered device slots.
Status OpenCuFileEngine(Setup* s) {
  const gpu::CuFile& cufile = *s->staging.cufile;
  FEEDRATE_ASSIGN_OR_RETURN(auto engine, gpu::CuFileEngine::Create(cufile, *s->file_table, s->engine_options,
                                                                   s->staging.Regions()));
  s->engine.engine = std::move(engine);
  s->engine.description = "cufile (cuFileRead into GPU memory, " + std::to_string(s->engine_options.threads) +
                          " threads; " + cufile.driver_info().Describe() + "; " + cufile.library() + ")";
  return Status::Ok();
}

bool AskedFor(const WorkloadConfig& cfg, const std::string& key) {
  return std::find(cfg.overridden_keys.begin(), cfg.overridden_keys.end(), key) != cfg.overridden_keys.end();
}

// Why a format has no DLIO reader calls to replay (docs/dlio-compatibility.md, "Requests per sample").
const char* NoPatternReason(DataFormat format) {
  switch (format) {
    case DataFormat::kTfRecord:
      return "TFRecord read by a loader other than TensorFlow's (DLIO's TFReader runs in tf.data only; DALI's reader is "
             "not replayed)";
    case DataFormat::kParquet:
      return "Parquet: DLIO v3.0's reader reads a row group's span in one request (feedrate.parquet_group_reads=whole "
             "reads so); no per-call pattern is replayed";
    default: return "no DLIO reader pattern is built for this format";
  }
}

// reader.preprocess_time: a wait per sample in each DataLoader worker, which only the DlioEngine's lanes make.
bool HasPreprocess(const WorkloadConfig& cfg) { return !TimeDraw::AlwaysZero(cfg.preprocess_time); }

// Where the run does not make DLIO's preprocess wait, it says so (DLIO's TFReader never calls it; the coalesced
// engines have no DataLoader workers to wait in).
void NotePreprocess(const WorkloadConfig& cfg, Setup* s) {
  if (!HasPreprocess(cfg)) return;
  const bool tf = cfg.data_loader == DataLoader::kTensorFlow;
  const bool window = s->s3 != nullptr && cfg.s3_reader_window > 1 && s->access_pattern == "dlio";
  if (!tf && !window && s->access_pattern == "dlio") return;
  s->warnings.push_back(
      std::string("reader.preprocess_time is not applied: ") +
      (tf       ? "DLIO's TensorFlow reader does not call preprocess (DLIO makes no such wait either)"
       : window ? "feedrate.s3_reader_window above 1 replays the iterable S3 readers' prefetch, whose window has no "
                  "per-sample wait to place it in"
                : "the per-sample wait is made by DLIO's access pattern only, and this run reads coalesced (" +
                      s->access_reason + "): its AU does not include it"));
}

// TensorFlow's ParallelInterleave reads cycle_length (read_threads) files, each on a thread of its own, and 2 x
// cycle_length more on threads that read 2 records of each ahead (prefetch_input_elements, buffer_output_elements):
// files of 1 or 2 records are then read whole, 3 x read_threads at once; larger ones by read_threads streams, the
// next file of each stream after its last (the 2 records read early are a small part of it).
uint32_t TfStreams(const WorkloadConfig& cfg) {
  return static_cast<uint32_t>(std::max<uint64_t>(1, cfg.read_threads) * (cfg.num_samples_per_file <= 2 ? 3 : 1));
}

// The reader calls the format has under its data loader (kNone: none replayed).
AccessKind PatternKind(const WorkloadConfig& cfg) {
  const AccessKind kind = DlioAccessKind(cfg.format, cfg.rules);
  return kind == AccessKind::kTfRecord && cfg.data_loader != DataLoader::kTensorFlow ? AccessKind::kNone : kind;
}

// DLIO's PyTorch readers open every sample's file (on_demand); TensorFlow streams each file through.
FileOpenMode OpenModeFor(const WorkloadConfig& cfg) {
  return cfg.keep_files_open                             ? FileOpenMode::kOnce
         : cfg.data_loader == DataLoader::kTensorFlow ? FileOpenMode::kStream
                                                        : FileOpenMode::kPerSample;
}

// What set-up knows beyond the configuration that the choice depends on (PatternFacts::BeforeSetup: what a run
// whose checks all run where DLIO's reader makes them will have).
struct PatternFacts {
  bool retain = false;   // batches kept whole in retained memory
  bool content = false;  // content verification (--verify)
  SampleCheck check = SampleCheck::kNone;  // a check left for the I/O threads
  static PatternFacts BeforeSetup(const RunOptions& opt) { return {RetainsBatches(opt), opt.verify > 0}; }
};

// Why this run reads coalesced extents rather than replaying DLIO's reader calls; nullptr where it replays them.
// The one decision behind both ChooseAccessPattern (after set-up) and DecodesInLanes (before it).
const char* CoalescedReason(const WorkloadConfig& cfg, const RunOptions& opt, const PatternFacts& f) {
  const AccessKind kind = PatternKind(cfg);
  const bool streams = kind == AccessKind::kTfRecord;  // TensorFlow's reader: one stream per file (kStream)
  const bool plain_check = f.check == SampleCheck::kNone || f.check == SampleCheck::kJpegSignature ||
                           f.check == SampleCheck::kPngSignature;
  return cfg.access_pattern != "dlio"                         ? "feedrate.access_pattern: coalesced"
         : kind == AccessKind::kNone                          ? NoPatternReason(cfg.format)
         : cfg.engine != EngineKind::kAuto                    ? "an explicit feedrate.engine (posix, uring) reads coalesced extents; auto replays DLIO's calls"
         : cfg.odirect                                        ? "O_DIRECT (DLIO's readers read buffered)"
         : OpenModeFor(cfg) == FileOpenMode::kStream && !streams ? "files streamed per visit (TensorFlow)"
         : opt.accelerator_memory != AcceleratorMemory::kHost ? "batches staged into accelerator memory"
         : f.retain || f.content                              ? "samples checked or retained need their bytes in one buffer"
         : !plain_check                                       ? "samples are checked or decoded on the I/O threads"
         : IsMemoryFileSystem(FileSystemType(cfg.data_folder)) && !AskedFor(cfg, "feedrate.access_pattern") &&
                 !HasPreprocess(cfg)
             ? "memory-backed storage (tmpfs): no request waits there, every read is a copy (an explicit "
               "feedrate.access_pattern=dlio replays DLIO's calls anyway)"
             : nullptr;
}

// feedrate.access_pattern: whether this run replays DLIO's reader calls (the DlioEngine), and if not, why.
// TFRecord's frame and CRC checks run on TensorFlow's stream as its fills come (TableReadPlanner::StreamFeed), so
// they need no record in one buffer (nor the retained batches that gave one); feedrate.decode's image decode runs in
// each sample's lane on the lane's own buffer (TableReadPlanner::NewSampleWork), as DLIO's worker decodes before it
// reads its next sample, so it needs no retained batches either.
bool ChooseAccessPattern(const WorkloadConfig& cfg, const RunOptions& opt, Setup* s) {
  const AccessKind kind = PatternKind(cfg);
  const bool streams = kind == AccessKind::kTfRecord;
  const bool tf_checks =
      streams && (s->table.check == SampleCheck::kTfRecordCrc || s->table.check == SampleCheck::kTfRecordFrame);
  const bool lane_decode =
      s->table.check == SampleCheck::kImageDecode && (kind == AccessKind::kJpeg || kind == AccessKind::kPng);
  const bool in_reader = tf_checks || lane_decode;  // the check runs where DLIO's reader makes it
  const PatternFacts facts{in_reader ? RetainsBatches(opt) : s->retain, s->content != nullptr,
                           in_reader ? SampleCheck::kNone : s->table.check};
  if (const char* why = CoalescedReason(cfg, opt, facts); why != nullptr) {
    s->access_pattern = "coalesced";
    s->access_reason = why;
    return false;
  }
  s->access_pattern = "dlio";
  s->access_reason = std::string("each sample read as DLIO's ") + std::string(Name(kind)) + " reader reads it";
  if (streams) {
    s->access_reason += " (buffer_size " + std::to_string(cfg.tf_buffer_size) + " bytes, " +
                        std::to_string(TfStreams(cfg)) + " files streamed at once per accelerator)";
  }
  if (in_reader) s->retain = false;
  return true;
}

// TensorFlow's streams: records in the interleave's order (read_threads files at once; the coalesced engines keep
// file order, whose back-to-back records they merge), each training and validation file's lane among its
// accelerator's `lanes`.
void AssignFileLanes(uint64_t read_threads, uint32_t lanes, Setup* s) {
  s->sampler->set_tf_cycle(read_threads);
  if (s->eval_sampler) s->eval_sampler->set_tf_cycle(read_threads);
  const uint64_t spf = std::max<uint64_t>(1, s->table.samples_per_file());
  s->file_lanes.assign(s->table.num_files(), 0);
  s->sampler->TfFileLanes(lanes, 0, &s->file_lanes);
  if (s->eval_sampler) s->eval_sampler->TfFileLanes(lanes, s->eval_id_offset / spf, &s->file_lanes);
}

// A FUSE mount read through the client's page cache (probed on the first file at set-up: one 1-byte read, its page
// dropped again): the DlioEngine's reads go straight to io-wq there (DlioEngineOptions::async_reads says why).
bool CachedFuse(const FileTable& files) {
  if (files.size() == 0 || FileSystemType(files.path(0)) != "fuse") return false;
  auto cached = ReadsFillPageCache(files.path(0));
  return cached.ok() && *cached;
}

// feedrate.decode under the pattern: each lane keeps its image and the reads that start in it (the lane's buffer,
// grown to the largest: at most the largest file and one 64 KiB PIL read past its end, rounded to 64 KiB). Those
// buffers, not retained batches, are the run's read buffers, and they must fit memory as the others must.
// Images not opened at set-up have no size yet: the workload's record length (and 4 stdev) stands for the largest.
Status CountLaneBuffers(const WorkloadConfig& cfg, uint32_t lanes, uint64_t engine_bytes, Setup* s) {
  const double largest = s->images_unopened ? cfg.record_length + 4 * cfg.record_length_stdev
                                            : static_cast<double>(s->table.MaxLength());
  const double bytes = static_cast<double>(lanes) * (largest + (128 << 10));
  const uint64_t available = ReadHostInfo().usable_available_bytes();
  if (bytes > static_cast<double>(available) / 2) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "%.2f GiB per rank, more than half of the %.2f GiB available", bytes / (1 << 30),
                  static_cast<double>(available) / (1 << 30));
    return Status::InvalidArgument("feedrate.decode: " + std::to_string(lanes) + " DataLoader workers' image buffers (" +
                                   std::to_string(static_cast<uint64_t>(largest)) + " bytes the largest image) would need " + msg +
                                   ": lower reader.read_threads or the accelerators per rank");
  }
  s->buffer_bytes = static_cast<double>(engine_bytes) + bytes;
  return Status::Ok();
}

// What DLIO's PyTorch worker collates per sample (feedrate.worker_collate): its resized_image, max_dimension^2 bytes,
// max_dimension the square root of dataset.record_length_bytes_resize (else of the record length), truncated
// (utils/config.py derive_configurations). TensorFlow's loader does no such copy here.
uint64_t CollateSampleBytes(const WorkloadConfig& cfg) {
  if (!cfg.worker_collate || cfg.data_loader != DataLoader::kPyTorch) return 0;
  const double base = cfg.record_length_resize > 0 ? static_cast<double>(cfg.record_length_resize) : cfg.record_length;
  const auto dim = static_cast<uint64_t>(std::sqrt(std::max(0.0, base)));
  return dim * dim;
}

// The DlioEngine: one lane per DataLoader worker of each accelerator (read_threads; 1 when DLIO reads in the
// main process), a few I/O threads (one per CPU) driving them all through io_uring.
Status OpenDlioEngine(const WorkloadConfig& cfg, const RunOptions& opt, Setup* s) {
  const AccessKind kind = DlioAccessKind(cfg.format, cfg.rules);
  const bool streams = kind == AccessKind::kTfRecord;
  // TensorFlow: a lane per stream (TfStreams), each file one lane's.
  const uint32_t workers = streams ? TfStreams(cfg) : static_cast<uint32_t>(std::max<uint64_t>(1, cfg.read_threads));
  s->planner = std::make_unique<TableReadPlanner>(kind, s->table, 64ULL << 20, cfg.tf_buffer_size);
  uint64_t depth = cfg.batches_in_flight;
  if (streams) {
    AssignFileLanes(std::max<uint64_t>(1, cfg.read_threads), workers, s);
    if (!AskedFor(cfg, "feedrate.batches_in_flight")) {  // what tf.data reads ahead of its prefetch
      depth += TfRecordReadAhead(cfg.read_threads, cfg.sample_shuffle != "off" ? cfg.shuffle_size : 0, cfg.batch_size);
      s->batches_in_flight = std::min<uint64_t>(depth, 4096);
      depth = s->batches_in_flight;
    }
  }
  DlioEngineOptions d;
  d.lanes = static_cast<uint32_t>(opt.accelerators) * workers;
  // A lane holds at most its accelerator's batches in flight, training's and evaluation's (an epoch's end may overlap
  // them): depth x the larger batch, twice.
  d.lane_capacity = 2 * std::max<uint64_t>(1, depth) * std::max<uint64_t>({1, cfg.batch_size, cfg.batch_size_eval}) + 1;
  d.chunk = std::max<uint64_t>({cfg.transfer_size, uint64_t{1} << 20, streams ? cfg.tf_buffer_size : uint64_t{0}});  // a fill: one read
  if (!streams) d.preprocess = cfg.preprocess_time;
  d.collate_sample_bytes = CollateSampleBytes(cfg);
  d.async_reads = CachedFuse(*s->file_table);
  if (s->file_table->size() > 0 && FileSystemType(s->file_table->path(0)) == "fuse") ++s->setup_opens;  // (its probe)
  EngineOptions eo = s->engine_options;
  eo.threads = opt.io_threads > 0 ? opt.io_threads : std::min<uint64_t>(std::max<size_t>(1, CpuAffinity().size()), d.lanes);
  if (s->table.check == SampleCheck::kImageDecode) FEEDRATE_RETURN_IF_ERROR(CountLaneBuffers(cfg, d.lanes, d.chunk * eo.threads, s));
  FEEDRATE_ASSIGN_OR_RETURN(auto engine, DlioEngine::Create(*s->file_table, eo, d, *s->planner));
  if (s->table.check == SampleCheck::kJpegSignature || s->table.check == SampleCheck::kPngSignature ||
      s->table.check == SampleCheck::kTfRecordCrc || s->table.check == SampleCheck::kTfRecordFrame ||
      s->table.check == SampleCheck::kImageDecode) {
    // the engine checks each file's first read or stream, or decodes each image in its lane (TableReadPlanner) ...
    s->head_check = s->table.check;
    s->table.check = SampleCheck::kNone;  // ... the prefetcher, which gets no bytes, checks nothing
  }
  s->lanes_per_accelerator = workers;
  s->engine.description = "dlio (" + engine->setup_description() + "): " + s->access_reason;
  s->engine.engine = std::move(engine);
  s->io_threads = eo.threads;
  return Status::Ok();
}

// feedrate.s3_reader_window: a worker keeps that many samples' GETs in flight ahead of its batches, so each
// accelerator keeps enough batches requested to fill its workers' windows (unless feedrate.batches_in_flight says).
uint64_t S3WindowDepth(const WorkloadConfig& cfg, uint32_t workers, Setup* s) {
  uint64_t depth = std::max<uint64_t>(1, cfg.batches_in_flight);
  if (cfg.s3_reader_window <= 1 || AskedFor(cfg, "feedrate.batches_in_flight")) return depth;
  const uint64_t batch = std::max<uint64_t>(1, cfg.batch_size);
  depth = std::max<uint64_t>(depth, workers * ((cfg.s3_reader_window + batch - 1) / batch) + workers);
  s->batches_in_flight = std::min<uint64_t>(depth, 4096);
  return s->batches_in_flight;
}

// S3: DLIO's S3 readers (npz and npy: one GET of the whole object per sample, one sample at a time per DataLoader
// worker) as lanes of the S3 engine, where feedrate.access_pattern is dlio and nothing needs the bytes; else ranged
// GETs of transfer_size, as many at once as the loops take.
Status OpenS3Engine(const WorkloadConfig& cfg, const RunOptions& opt, Setup* s) {
  if (cfg.engine != EngineKind::kAuto) {
    s->warnings.push_back("feedrate.engine " + std::string(Name(cfg.engine)) +
                          " does not apply to an S3 dataset: the s3 engine reads it");
  }
  const uint32_t workers = static_cast<uint32_t>(std::max<uint64_t>(1, cfg.read_threads));
  const uint32_t window = static_cast<uint32_t>(cfg.s3_reader_window);
  const bool whole_objects = cfg.format == DataFormat::kNpz || cfg.format == DataFormat::kNpy ||
                             (window > 1 && IsImage(cfg.format));  // newer DLIO's iterable readers: images too
  const char* why = cfg.access_pattern != "dlio" ? "feedrate.access_pattern: coalesced"
                    : !whole_objects ? "S3: DLIO has S3 readers for npz and npy only (and, iterable, JPEG and PNG: "
                                       "feedrate.s3_reader_window above 1)"
                    : s->staging.mode != AcceleratorMemory::kHost ? "batches staged into accelerator memory"
                    : s->retain || s->content != nullptr || s->table.check != SampleCheck::kNone
                        ? "samples checked or retained need their bytes in one buffer"
                        : nullptr;
  S3LaneOptions lanes;
  if (why == nullptr) {
    lanes.lanes = static_cast<uint32_t>(opt.accelerators) * workers;
    const uint64_t depth = S3WindowDepth(cfg, workers, s);
    lanes.lane_capacity = 2 * depth * std::max<uint64_t>({1, cfg.batch_size, cfg.batch_size_eval}) + 1;
    lanes.part_size = cfg.s3_part_size;
    lanes.window = window;
    if (window == 1) lanes.preprocess = cfg.preprocess_time;
    lanes.object_sizes.assign(s->file_table->size(), 0);  // the listing's sizes: the CRT's parts follow them
    for (size_t i = 0; i < lanes.object_sizes.size(); ++i) {
      if (auto it = s->s3->sizes.find(s->file_table->path(i)); it != s->s3->sizes.end()) lanes.object_sizes[i] = it->second;
    }
    s->lanes_per_accelerator = workers;
    s->access_pattern = "dlio";
    s->access_reason = window > 1
        ? "each sample one GET of its whole object, " + std::to_string(window) + " at once per DataLoader worker, as "
          "newer DLIO's iterable S3 readers prefetch (_s3_iterable_mixin.py, feedrate.s3_reader_window)"
        : "each sample its whole object, one sample at a time per DataLoader worker, as DLIO's S3 readers "
          "(npz_reader_s3.py, npy_reader_s3.py: storage.get_data through s3torchconnector: a first GET of " +
              std::to_string(cfg.s3_part_size) + " bytes, then the rest in GETs of that size at once)";
  } else {
    s->access_reason = std::string("S3: ranged GETs of reader.transfer_size (") + why + ")";
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto engine, S3Engine::Create(*s->file_table, s->engine_options, s->s3->store, lanes));
  s->engine.description = engine->description();
  s->engine.engine = std::move(engine);
  return Status::Ok();
}

// OpenEngine's choice and opening.
Status OpenAnyEngine(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, Setup* s) {
  EngineOptions& eo = s->engine_options;
  const FileOpenMode mode = OpenModeFor(cfg);
  // The table takes the paths over: one copy of a million-file listing, not two.
  FEEDRATE_ASSIGN_OR_RETURN(auto table, FileTable::Create(std::move(s->files), s->s3 ? FileOpenMode::kPerSample : mode,
                                                          cfg.odirect ? O_DIRECT : 0));
  s->file_table = std::make_unique<FileTable>(std::move(table));
  if (!opt.inject.empty()) {
    FEEDRATE_ASSIGN_OR_RETURN(auto plan, ParseFaultPlan(opt.inject));
    s->faults = std::make_unique<FaultInjector>(std::move(plan), cfg.odirect ? eo.direct_align : 1);
    s->faults->BindFiles(*s->file_table);
    eo.faults = s->faults.get();
    s->warnings.push_back("faults injected into the training reads (--inject " + opt.inject +
                          "): the results measure them, not the storage alone");
  }
  s->io_stats = std::make_unique<IoStats>(s->io_threads);
  eo.stats = s->io_stats.get();
  eo.thread_policy = opt.io_thread_policy == "idle"   ? IoThreadPolicy::kIdle
                     : opt.io_thread_policy == "nice" ? IoThreadPolicy::kNice
                                                      : IoThreadPolicy::kNormal;
  if (s->s3) return OpenS3Engine(cfg, opt, s);
  if (s->staging.gds) {
    s->access_reason = "cuFile reads (GPUDirect Storage) straight into accelerator memory";
    return OpenCuFileEngine(s);
  }
  const bool lane_decode_only = s->images_unopened && cfg.decode;  // no sizes: only the lanes can decode
  if (ChooseAccessPattern(cfg, opt, s)) {
    Status st = OpenDlioEngine(cfg, opt, s);
    if (st.ok()) return st;
    if (lane_decode_only) {
      return Status::InvalidArgument("feedrate.decode: the images are decoded in each DataLoader worker's sequence, as "
                                     "DLIO's reader decodes, which needs the DLIO engine (" + st.ToString() +
                                     "); set feedrate.access_pattern=coalesced to decode on the I/O threads instead");
    }
    s->access_pattern = "coalesced";  // no io_uring here: the coalesced engines' own fallback follows
    s->access_reason = "the DLIO pattern needs io_uring: " + st.ToString();
    s->planner.reset();
    s->file_lanes.clear();
    s->sampler->set_tf_cycle(1);  // file order again: the coalesced engines merge its back-to-back records
    if (s->eval_sampler) s->eval_sampler->set_tf_cycle(1);
  }
  if (lane_decode_only) {  // (CoalescedReason answered otherwise before set-up: a bug, not a run to make)
    return Status::Unsupported("feedrate.decode: images not opened at set-up, but the run reads coalesced (" +
                               s->access_reason + ")");
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto engine, MakeEngine(cfg.engine, *s->file_table, eo));
  s->engine = std::move(engine);
  if (s->staging.mode == AcceleratorMemory::kDevice) {
    s->engine.description += "; into GPU memory through pinned buffers and a copy (" + s->staging.gds_reason + ")";
    if (opt.gds == GdsMode::kAuto) {
      s->warnings.push_back("--gds auto: GPUDirect reads not used (" + s->staging.gds_reason +
                            "): each batch goes through pinned host memory and a copy");
    }
  }
  if (!s->engine.fallback_reason.empty()) {
    std::fprintf(stderr, "feedrate: warning: rank %d: io_uring unavailable (%s); using the posix engine\n", comm.rank(),
                 s->engine.fallback_reason.c_str());
  }
  return Status::Ok();
}

}  // namespace

bool DecodesInLanes(const WorkloadConfig& cfg, const RunOptions& opt, bool s3) {
  return cfg.decode && IsImage(cfg.format) && !s3 &&
         CoalescedReason(cfg, opt, PatternFacts::BeforeSetup(opt)) == nullptr;
}

// The file table, fault injection, I/O statistics and the engine (S3, cuFile, or MakeEngine's choice).
Status OpenEngine(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, Setup* s) {
  FEEDRATE_RETURN_IF_ERROR(OpenAnyEngine(cfg, opt, comm, s));
  NotePreprocess(cfg, s);
  return Status::Ok();
}

}  // namespace feedrate
