// PlanReads: the access pattern and its reason, the engine, its lanes, threads and numbers, the read buffers they
// take, and the notes about them (docs/engines.md, docs/dlio-compatibility.md).
#include "emulator/run/read_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "loader/format/numpy_learn.h"
#include "loader/io/dlio_engine.h"
#include "loader/util/dlio_edition.h"
#include "loader/util/time_draw.h"

namespace feedrate {
namespace {

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

bool Streamed(const WorkloadConfig& cfg) { return !cfg.keep_files_open && cfg.data_loader == DataLoader::kTensorFlow; }

// Whether batches are kept whole in retained memory where the reads are coalesced: asked for (--retain-batches), or
// a check of the samples (the table's, --verify) whose read window may exceed one transfer, since only a whole
// record in one buffer can be checked (an image decoded in its lane needs none). PlanFileReads lowers it where the
// DlioEngine makes the check in DLIO's reader.
bool RetainsBatchesFor(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, const ResolvedEngine& e) {
  const bool lane_decode = f.images_unopened && cfg.decode;  // (IndexRankFiles: DecodesInLanes decided it)
  const bool spans_transfers = e.MaxWindow(f.max_sample) > e.options.transfer_size;
  return RetainsBatches(opt) || (!lane_decode && (f.check != SampleCheck::kNone || f.content) && spans_transfers);
}

// What the pattern choice depends on beyond the configuration (BeforeSetup: what a run whose checks all run where
// DLIO's reader makes them will have).
struct PatternFacts {
  bool retain = false;   // batches kept whole in retained memory
  bool content = false;  // content verification (--verify)
  SampleCheck check = SampleCheck::kNone;  // a check left for the I/O threads
  bool memory_storage = false;
  static PatternFacts BeforeSetup(const RunOptions& opt, bool memory_storage) {
    return {RetainsBatches(opt), opt.verify > 0, SampleCheck::kNone, memory_storage};
  }
};

// Why this run reads coalesced extents rather than replaying DLIO's reader calls; nullptr where it replays them.
// The one decision behind both PlanReads (after set-up) and DecodesInLanes (before it).
const char* CoalescedReason(const WorkloadConfig& cfg, const RunOptions& opt, const PatternFacts& f) {
  const AccessKind kind = PatternKind(cfg);
  const bool streams = kind == AccessKind::kTfRecord;  // TensorFlow's reader: one stream per file
  const bool plain_check = f.check == SampleCheck::kNone || f.check == SampleCheck::kJpegSignature ||
                           f.check == SampleCheck::kPngSignature;
  return cfg.access_pattern != "dlio"                         ? "feedrate.access_pattern: coalesced"
         : kind == AccessKind::kNone                          ? NoPatternReason(cfg.format)
         : cfg.engine != EngineKind::kAuto                    ? "an explicit feedrate.engine (posix, uring) reads coalesced extents; auto replays DLIO's calls"
         : cfg.odirect                                        ? "O_DIRECT (DLIO's readers read buffered)"
         : Streamed(cfg) && !streams                          ? "files streamed per visit (TensorFlow)"
         : opt.accelerator_memory != AcceleratorMemory::kHost ? "batches staged into accelerator memory"
         : f.retain || f.content                              ? "samples checked or retained need their bytes in one buffer"
         : !plain_check                                       ? "samples are checked or decoded on the I/O threads"
         : f.memory_storage && !AskedFor(cfg, "feedrate.access_pattern") && !HasPreprocess(cfg)
             ? "memory-backed storage (tmpfs): no request waits there, every read is a copy (an explicit "
               "feedrate.access_pattern=dlio replays DLIO's calls anyway)"
             : nullptr;
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

// A lane holds at most its accelerator's batches in flight, training's and evaluation's (an epoch's end may overlap
// them): depth x the larger batch, twice.
uint64_t LaneCapacity(const WorkloadConfig& cfg, uint64_t depth) {
  return 2 * std::max<uint64_t>(1, depth) * std::max<uint64_t>({1, cfg.batch_size, cfg.batch_size_eval}) + 1;
}

// The DlioEngine: one lane per DataLoader worker of each accelerator (read_threads; 1 when DLIO reads in the main
// process; TensorFlow: a lane per stream, each file one lane's), one I/O thread per CPU (at most one per lane).
void PlanDlioLanes(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, ReadPlan* p) {
  const bool streams = p->kind == AccessKind::kTfRecord;
  p->engine = ReadEngineKind::kDlio;
  p->workers = streams ? TfStreams(cfg) : static_cast<uint32_t>(std::max<uint64_t>(1, cfg.read_threads));
  uint64_t depth = cfg.batches_in_flight;
  if (streams) {
    p->tf_streams = true;
    p->tf_cycle = std::max<uint64_t>(1, cfg.read_threads);
    if (!AskedFor(cfg, "feedrate.batches_in_flight")) {  // what tf.data reads ahead of its prefetch
      depth += TfRecordReadAhead(cfg.read_threads, cfg.sample_shuffle != "off" ? cfg.shuffle_size : 0, cfg.batch_size);
      p->batches_in_flight = std::min<uint64_t>(depth, 4096);
      depth = p->batches_in_flight;
    }
  }
  p->lanes = static_cast<uint32_t>(opt.accelerators) * p->workers;
  p->lane_capacity = LaneCapacity(cfg, depth);
  p->chunk = std::max<uint64_t>({cfg.transfer_size, uint64_t{1} << 20, streams ? cfg.tf_buffer_size : uint64_t{0}});
  p->preprocess = !streams;
  p->collate_sample_bytes = CollateSampleBytes(cfg);
  p->io_threads = opt.io_threads > 0 ? opt.io_threads : std::min<uint64_t>(std::max<size_t>(1, f.cpus), p->lanes);
  p->options.threads = p->io_threads;
  // The engine checks each file's first read or stream, or decodes each image in its lane (TableReadPlanner).
  if (f.check == SampleCheck::kJpegSignature || f.check == SampleCheck::kPngSignature ||
      f.check == SampleCheck::kTfRecordCrc || f.check == SampleCheck::kTfRecordFrame || f.check == SampleCheck::kImageDecode) {
    p->engine_check = f.check;
  }
}

// The file engines' choice: the DLIO pattern where nothing rules it out, else coalesced extents and why. TFRecord's
// frame and CRC checks run on TensorFlow's stream as its fills come (TableReadPlanner::StreamFeed), so they need no
// record in one buffer (nor the retained batches that gave one); feedrate.decode's image decode runs in each sample's
// lane on the lane's own buffer, as DLIO's worker decodes before it reads its next sample, so it needs none either.
void PlanFileReads(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, ReadPlan* p) {
  const AccessKind kind = PatternKind(cfg);
  const bool streams = kind == AccessKind::kTfRecord;
  const bool tf_checks = streams && (f.check == SampleCheck::kTfRecordCrc || f.check == SampleCheck::kTfRecordFrame);
  const bool lane_decode = f.check == SampleCheck::kImageDecode && (kind == AccessKind::kJpeg || kind == AccessKind::kPng);
  const bool in_reader = tf_checks || lane_decode;  // the check runs where DLIO's reader makes it
  const PatternFacts facts{in_reader ? RetainsBatches(opt) : p->retain, f.content,
                           in_reader ? SampleCheck::kNone : f.check, f.memory_storage};
  if (const char* why = CoalescedReason(cfg, opt, facts); why != nullptr) {
    p->reason = why;
    return;
  }
  p->kind = kind;
  p->pattern = "dlio";
  p->reason = std::string("each sample read as DLIO's ") + std::string(Name(kind)) + " reader reads it";
  if (streams) {
    p->reason += " (buffer_size " + std::to_string(cfg.tf_buffer_size) + " bytes, " + std::to_string(TfStreams(cfg)) +
                 " files streamed at once per accelerator)";
  }
  if (in_reader) p->retain = false;
  PlanDlioLanes(cfg, opt, f, p);
}

// feedrate.s3_reader_window: a worker keeps that many samples' GETs in flight ahead of its batches, so each
// accelerator keeps enough batches requested to fill its workers' windows (unless feedrate.batches_in_flight says).
uint64_t S3WindowDepth(const WorkloadConfig& cfg, uint32_t workers, ReadPlan* p) {
  uint64_t depth = std::max<uint64_t>(1, cfg.batches_in_flight);
  if (cfg.s3_reader_window <= 1 || AskedFor(cfg, "feedrate.batches_in_flight")) return depth;
  const uint64_t batch = std::max<uint64_t>(1, cfg.batch_size);
  depth = std::max<uint64_t>(depth, workers * ((cfg.s3_reader_window + batch - 1) / batch) + workers);
  p->batches_in_flight = std::min<uint64_t>(depth, 4096);
  return p->batches_in_flight;
}

// S3: DLIO's S3 readers (npz and npy: one GET of the whole object per sample, one sample at a time per DataLoader
// worker) as lanes of the S3 engine, where feedrate.access_pattern is dlio and nothing needs the bytes; else ranged
// GETs of transfer_size, as many at once as the loops take.
void PlanS3Reads(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, ReadPlan* p) {
  if (cfg.engine != EngineKind::kAuto) {
    p->warnings.push_back("feedrate.engine " + std::string(Name(cfg.engine)) +
                          " does not apply to an S3 dataset: the s3 engine reads it");
  }
  const uint32_t workers = static_cast<uint32_t>(std::max<uint64_t>(1, cfg.read_threads));
  const uint32_t window = static_cast<uint32_t>(cfg.s3_reader_window);
  const bool whole_objects = cfg.format == DataFormat::kNpz || cfg.format == DataFormat::kNpy ||
                             (window > 1 && IsImage(cfg.format));  // newer DLIO's iterable readers: images too
  const char* why = cfg.access_pattern != "dlio" ? "feedrate.access_pattern: coalesced"
                    : !whole_objects ? "S3: DLIO has S3 readers for npz and npy only (and, iterable, JPEG and PNG: "
                                       "feedrate.s3_reader_window above 1)"
                    : p->staging.mode != AcceleratorMemory::kHost ? "batches staged into accelerator memory"
                    : p->retain || f.content || f.check != SampleCheck::kNone
                        ? "samples checked or retained need their bytes in one buffer"
                        : nullptr;
  if (why != nullptr) {
    p->engine = ReadEngineKind::kS3Ranged;
    p->reason = std::string("S3: ranged GETs of reader.transfer_size (") + why + ")";
    return;
  }
  p->engine = ReadEngineKind::kS3Lanes;
  p->pattern = "dlio";
  p->workers = workers;
  p->lanes = static_cast<uint32_t>(opt.accelerators) * workers;
  p->lane_capacity = LaneCapacity(cfg, S3WindowDepth(cfg, workers, p));
  p->s3_window = window;
  p->preprocess = window == 1;
  p->reason = window > 1
      ? "each sample one GET of its whole object, " + std::to_string(window) + " at once per DataLoader worker, as "
        "newer DLIO's iterable S3 readers prefetch (_s3_iterable_mixin.py, feedrate.s3_reader_window)"
      : "each sample its whole object, one sample at a time per DataLoader worker, as DLIO's S3 readers "
        "(npz_reader_s3.py, npy_reader_s3.py: storage.get_data through s3torchconnector: a first GET of " +
            std::to_string(cfg.s3_part_size) + " bytes, then the rest in GETs of that size at once)";
}

// What rank 0 says of the plan: where the run does not make DLIO's preprocess wait (DLIO's TFReader never calls it;
// the coalesced engines have no DataLoader workers to wait in), the GDS fallback, and the I/O-thread cap of the
// engines that take that count (the DLIO engine runs one thread per CPU whatever it is).
void AddNotes(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, const ResolvedEngine& e,
              ReadPlan* p) {
  if (HasPreprocess(cfg)) {
    const bool tf = cfg.data_loader == DataLoader::kTensorFlow;
    const bool window = f.s3 && cfg.s3_reader_window > 1 && p->pattern == "dlio";
    if (tf || window || p->pattern != "dlio") {
      p->warnings.push_back(
          std::string("reader.preprocess_time is not applied: ") +
          (tf       ? "DLIO's TensorFlow reader does not call preprocess (DLIO makes no such wait either)"
           : window ? "feedrate.s3_reader_window above 1 replays the iterable S3 readers' prefetch, whose window has no "
                      "per-sample wait to place it in"
                    : "the per-sample wait is made by DLIO's access pattern only, and this run reads coalesced (" +
                          p->reason + "): its AU does not include it"));
    }
  }
  if (p->engine == ReadEngineKind::kCoalesced && p->staging.mode == AcceleratorMemory::kDevice &&
      opt.gds == GdsMode::kAuto) {
    p->warnings.push_back("--gds auto: GPUDirect reads not used (" + p->staging.gds_reason +
                          "): each batch goes through pinned host memory and a copy");
  }
  if (e.capped && p->pattern != "dlio") {
    p->warnings.push_back("I/O threads per rank: " + std::to_string(p->io_threads) +
                          " (reader.read_threads x accelerators = " + std::to_string(e.dlio_threads) + ", capped at " +
                          e.cap_reason + "; --io-threads sets it)");
  }
}

// The host memory the plan's buffers take (MemoryBudget). GPUDirect reads land in registered device slots: no engine
// buffers and no slots in host memory (their device memory was allocated, and so checked, with the staging).
void PlanMemory(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, ReadPlan* p) {
  MemoryBudget& m = p->memory;
  if (p->engine == ReadEngineKind::kCuFile) return;
  if (p->engine == ReadEngineKind::kDlio) {
    DlioEngineOptions d;
    d.lanes = p->lanes;
    d.chunk = p->chunk;
    d.collate_sample_bytes = p->collate_sample_bytes;
    const bool stream_check =
        p->engine_check == SampleCheck::kTfRecordCrc || p->engine_check == SampleCheck::kTfRecordFrame;
    const bool learns = NumpyLayoutLearner::Learns(p->kind) && f.sizes_unread;  // (LearnsLayoutInLanes)
    const uint64_t lane = stream_check ? std::max<uint64_t>(cfg.tf_buffer_size, f.max_sample)
                          : learns     ? NumpyLayoutLearner::kMaxWant
                                       : 0;
    m.engine = static_cast<double>(DlioEngineBufferBytes(d, p->io_threads, cfg.batch_size, lane));
  } else {
    m.engine = static_cast<double>(EngineBufferBytes(cfg.engine, p->options));
  }
  // Retained slots hold a batch's reads packed: slot_reads of the largest window (Prefetcher::SlotBytes).
  if (p->retain)
    m.retained = static_cast<double>(opt.accelerators * cfg.batches_in_flight) * static_cast<double>(f.slot_bytes);
  // feedrate.decode under the pattern: each lane keeps its image and the reads that start in it (grown to the largest:
  // at most the largest file and one 64 KiB PIL read past its end, rounded to 64 KiB). Images not opened at set-up
  // have no size yet: the workload's record length (and 4 stdev) stands for the largest.
  if (p->engine_check == SampleCheck::kImageDecode) {
    const double largest =
        f.images_unopened ? cfg.record_length + 4 * cfg.record_length_stdev : static_cast<double>(f.max_sample);
    m.lanes = static_cast<double>(p->lanes) * (largest + (128 << 10));
  }
}

// Why cuFile cannot serve this run's reads ("" when it may), from what is known before any library is loaded.
std::string GdsBlocker(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f) {
  if (opt.accelerator_memory != AcceleratorMemory::kDevice) {
    return std::string("--accelerator-memory ") + Name(opt.accelerator_memory) +
           ": GPUDirect reads land in device memory only";
  }
  if (f.s3) return "an S3 dataset has no file for cuFile to read";
  if (!cfg.odirect) return "reader.odirect is off: cuFile reads O_DIRECT files (--odirect)";
  if (f.check != SampleCheck::kNone)
    return "the samples are checked on the host (TFRecord frames, HDF5 filters, image decoding, Parquet pages)";
  if (f.content) return "--verify checks the samples on the host";
  if (!f.reads_files) return "this rank reads no file";
  return "";
}

// Where batches land, and GDS: used where nothing rules it out and cuFile took this rank's file (and its slots);
// under --gds auto a blocker becomes the reason, under --gds on the refusal.
StagingPlan PlanStaging(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f) {
  StagingPlan st;
  st.mode = opt.accelerator_memory;
  st.requested = Name(opt.gds);
  if (st.mode == AcceleratorMemory::kHost) return st;  // (--gds on with host memory: set-up refuses it first)
  if (opt.gds == GdsMode::kOff) {
    st.gds_reason = "--gds off";
    return st;
  }
  std::string blocker = GdsBlocker(cfg, opt, f);
  if (blocker.empty()) blocker = !f.cufile_probed ? "cuFile was not tried on this rank's files" : f.cufile_error;
  st.gds = blocker.empty();
  if (!st.gds && opt.gds == GdsMode::kOn) st.refusal = "--gds on: " + blocker;
  st.gds_reason = blocker;
  return st;
}

// What every plan starts from: the resolved engine's numbers and threads, the workload's depth, the retained batches.
ReadPlan BasePlan(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, const ResolvedEngine& e) {
  ReadPlan p;
  p.staging = PlanStaging(cfg, opt, f);
  p.batches_in_flight = cfg.batches_in_flight;  // (deepened for TensorFlow's read-ahead and S3 windows)
  p.retain = RetainsBatchesFor(cfg, opt, f, e);
  p.io_threads = e.io_threads;
  p.options = e.options;
  p.lane_decode_only = f.images_unopened && cfg.decode;
  p.prewarm_batches = PrewarmBatches(cfg, f.s3);
  return p;
}

}  // namespace

EngineRequest EngineRequestOf(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f) {
  EngineRequest r;
  r.s3 = f.s3;
  r.posix = cfg.engine == EngineKind::kPosix;
  r.transfer_size = cfg.transfer_size;
  r.queue_depth = cfg.queue_depth;
  r.odirect = cfg.odirect;
  r.direct_align = f.direct_align;
  r.io_threads = opt.io_threads;
  r.read_threads = cfg.read_threads;
  r.accelerators = opt.accelerators;
  r.batches_in_flight = cfg.batches_in_flight;
  r.batch = cfg.batch_size;
  r.cpus = f.cpus;
  r.memory_storage = f.memory_storage;
  return r;
}

ReadPlan PlanReads(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f) {
  const ResolvedEngine e = ResolveEngineOptions(EngineRequestOf(cfg, opt, f));
  ReadPlan p = BasePlan(cfg, opt, f, e);
  if (f.s3) {
    PlanS3Reads(cfg, opt, f, &p);
  } else if (p.staging.gds) {
    p.engine = ReadEngineKind::kCuFile;
    p.reason = "cuFile reads (GPUDirect Storage) straight into accelerator memory";
  } else {
    PlanFileReads(cfg, opt, f, &p);
  }
  PlanMemory(cfg, opt, f, &p);
  AddNotes(cfg, opt, f, e, &p);
  return p;
}

ReadPlan FallBackToCoalesced(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, const std::string& why) {
  const ResolvedEngine e = ResolveEngineOptions(EngineRequestOf(cfg, opt, f));
  ReadPlan p = BasePlan(cfg, opt, f, e);
  p.reason = "the DLIO pattern needs io_uring: " + why;
  PlanMemory(cfg, opt, f, &p);
  AddNotes(cfg, opt, f, e, &p);
  return p;
}

Status CheckReadBuffers(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f, const ReadPlan& p) {
  const double half = f.available_bytes / 2;
  char gib[64];
  if (p.memory.lanes > half) {
    std::snprintf(gib, sizeof gib, "%.2f GiB per rank, more than half of the %.2f GiB available",
                  p.memory.lanes / (1 << 30), f.available_bytes / (1 << 30));
    const double largest = p.memory.lanes / std::max<uint32_t>(1, p.lanes) - (128 << 10);
    return Status::InvalidArgument(
        "feedrate.decode: " + std::to_string(p.lanes) + " DataLoader workers' image buffers (" +
        std::to_string(static_cast<uint64_t>(largest)) + " bytes the largest image) would need " + gib +
        ": lower reader.read_threads or the accelerators per rank");
  }
  if (p.memory.total() <= half) return Status::Ok();
  std::snprintf(gib, sizeof gib, "%.2f GiB", p.memory.total() / (1 << 30));
  return Status::InvalidArgument(std::string("read buffers would need ") + gib + " per rank, more than half of " +
                                 f.available_what + ": lower reader.transfer_size, --queue-depth, the I/O threads" +
                                 (opt.retain_batches ? " or drop --retain-batches" : "") +
                                 (opt.accelerator_memory != AcceleratorMemory::kHost
                                      ? " or keep fewer batches in flight (" + std::to_string(cfg.batches_in_flight) +
                                            ": reader.read_threads and reader.prefetch_size, docs/metrics.md)"
                                      : "") +
                                 (f.check != SampleCheck::kNone ? " or lower reader.batch_size" : ""));
}

bool ProbesCuFile(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& f) {
  return opt.accelerator_memory == AcceleratorMemory::kDevice && opt.gds != GdsMode::kOff &&
         GdsBlocker(cfg, opt, f).empty();
}

bool LearnsLayoutInLanes(const WorkloadConfig& cfg, const RunOptions& opt, bool s3, bool memory_storage) {
  const bool npz = cfg.format == DataFormat::kNpz && PatternKind(cfg) == AccessKind::kNpz && cfg.compression == "none";
  const bool npy = cfg.format == DataFormat::kNpy && PatternKind(cfg) == AccessKind::kNpy;
  return (npz || npy) && cfg.num_samples_per_file == 1 && !s3 && opt.verify <= 0 &&
         CoalescedReason(cfg, opt, PatternFacts::BeforeSetup(opt, memory_storage)) == nullptr;
}

uint64_t PrewarmBatches(const WorkloadConfig& cfg, bool s3) {
  if (!Traits(cfg.rules).restart_workers || cfg.data_loader != DataLoader::kPyTorch || s3) return 0;
  return cfg.main_process_reads ? 1 : std::max<uint64_t>(1, cfg.read_threads) + 1;
}

bool DecodesInLanes(const WorkloadConfig& cfg, const RunOptions& opt, bool s3, bool memory_storage) {
  return cfg.decode && IsImage(cfg.format) && !s3 &&
         CoalescedReason(cfg, opt, PatternFacts::BeforeSetup(opt, memory_storage)) == nullptr;
}

}  // namespace feedrate
