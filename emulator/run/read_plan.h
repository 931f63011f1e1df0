// How a run reads, decided in one place: from the workload (its rules edition included), the run's options and what
// set-up learned of the storage and the samples, PlanReads returns which engine reads, whether it replays the
// emulated DLIO's reader calls (and why, or why not), its workers, lanes, threads, depths and engine numbers, the
// read buffers they take, and what rank 0 says of them. Pure (no file, no MPI, no clock): run_engine.cpp builds the
// engine the plan names and nothing else decides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "emulator/run/run.h"
#include "loader/config/workload_config.h"
#include "loader/format/access_pattern.h"
#include "loader/format/sample_table.h"
#include "loader/io/engine_factory.h"

namespace feedrate {

enum class ReadEngineKind {
  kDlio,       // the DlioEngine: the edition's reader calls, one lane per DataLoader worker (or TensorFlow stream)
  kCoalesced,  // MakeEngine's choice (auto, uring, posix): one read per extent
  kS3Lanes,    // the S3 engine's lanes: one whole-object GET per sample, as DLIO's S3 readers
  kS3Ranged,   // the S3 engine: ranged GETs of reader.transfer_size
  kCuFile,     // cuFile reads (GPUDirect Storage) into the accelerators' memory
};

// What set-up learned that the decision depends on (nothing else is read).
struct ReadFacts {
  bool s3 = false;
  bool reads_files = true;       // this rank reads at least one file (one to probe cuFile on)
  bool cufile_probed = false;    // cuFile was opened and took a handle on a file of the rank (ProbesCuFile asked)...
  std::string cufile_error;      // ... or why not; or why registering the device slots failed after it did
  uint64_t max_sample = 0;       // the largest sample's bytes (SampleTable::MaxLength: 0 for unsized whole files)
  bool sizes_unread = false;     // every sample its whole file, nothing indexed (SampleTable::WholeFilesUnsized)
  uint64_t slot_bytes = 0;       // a retained batch's slot (Prefetcher::SlotBytes of the training batches)
  uint64_t direct_align = 4096;  // O_DIRECT's alignment, probed on a file the rank reads
  bool content = false;                                  // --verify
  SampleCheck check = SampleCheck::kNone;                // the sample table's check
  bool images_unopened = false;                          // images not opened at set-up: no sizes known
  bool memory_storage = false;                           // the data folder is memory-backed (tmpfs, ramfs)
  size_t cpus = 1;                                       // CPUs this rank may run on
  double available_bytes = 0;  // memory the read buffers may take half of (a cgroup's limit where lower)
  std::string available_what;  // how that was found, for the refusal: "MemAvailable (3.2 GiB)"
};

// Where batches land and whether cuFile reads them there (--accelerator-memory, --gds).
struct StagingPlan {
  AcceleratorMemory mode = AcceleratorMemory::kHost;
  bool gds = false;                // reads land in registered device slots through cuFile (no copy)
  std::string requested = "auto";  // --gds as given
  std::string gds_reason;          // why cuFile does not serve a device-memory run ("" when it does)
  std::string refusal;             // --gds on that cannot be honoured: set-up stops with this
};

// The host memory the plan's read buffers take, per rank.
struct MemoryBudget {
  double engine = 0;    // the engine's: transfers in flight per thread (the DlioEngine: one chunk per I/O thread)
  double retained = 0;  // retained batch slots (ReadPlan::retain), in host memory
  double lanes = 0;     // feedrate.decode under the pattern: each lane's image buffer (at most the largest image)
  double total() const { return engine + retained + lanes; }
};

struct ReadPlan {
  ReadEngineKind engine = ReadEngineKind::kCoalesced;
  AccessKind kind = AccessKind::kNone;  // the reader calls the DlioEngine replays
  std::string pattern = "coalesced";    // summary.json's feedrate.access_pattern: "dlio" or "coalesced"
  std::string reason;                   // why (summary.json's access_pattern_reason)
  uint32_t workers = 0;                 // lanes per accelerator (DataLoader workers, TF streams); 0 coalesced
  uint32_t lanes = 0;                   // workers x accelerators
  uint64_t lane_capacity = 0;           // samples a lane may hold queued
  uint64_t chunk = 0;                   // the DlioEngine's largest single read
  uint64_t io_threads = 1;              // the rank's I/O threads (the DlioEngine's: one per CPU, at most a lane each)
  uint64_t batches_in_flight = 0;       // per accelerator: the workload's, deepened for TF's read-ahead and S3 windows
  bool tf_streams = false;              // TensorFlow's interleave: samplers cycle read_threads files, a lane per file
  uint64_t tf_cycle = 1;                //   the cycle (reader.read_threads)
  bool retain = false;                  // batches retained, after the choice (a check the reader makes needs none)
  SampleCheck engine_check = SampleCheck::kNone;  // the check the DlioEngine makes; the prefetcher then makes none
  bool preprocess = false;              // the lanes wait reader.preprocess_time a sample
  uint64_t collate_sample_bytes = 0;    // what each DataLoader worker collates a sample (feedrate.worker_collate)
  uint64_t prewarm_batches = 0;         // v3.0's pre-warm: batches per accelerator before each epoch (PrewarmBatches)
  bool lane_decode_only = false;        // feedrate.decode of images with no sizes: only the DlioEngine can
  uint32_t s3_window = 1;               // kS3Lanes: GETs in flight per worker (feedrate.s3_reader_window)
  StagingPlan staging;                  // where batches land, and whether cuFile reads them there
  EngineOptions options;                // the engine's numbers (ResolveEngineOptions; threads: the engine's own)
  MemoryBudget memory;                  // the read buffers all this takes
  std::vector<std::string> warnings;    // what rank 0 prints (and summary.json keeps)
};

// The plan. REQUIRES: the facts of this rank's set-up (sample table indexed, cuFile probed where ProbesCuFile says).
ReadPlan PlanReads(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& facts);

// Whether the GDS choice needs cuFile tried first (device memory, --gds not off, nothing else ruling it out): set-up
// then opens cuFile and registers a handle on a file of the rank, and says how it went in facts.cufile_*.
bool ProbesCuFile(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& facts);

// What the engine's numbers are resolved from: the workload's reader settings, the run's options and the rank's
// facts (ResolveEngineOptions turns them into threads, transfer size, depth). Set-up's indexing takes its thread
// count from the same request before the plan exists.
EngineRequest EngineRequestOf(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& facts);

// Whether the plan's read buffers fit: half of facts.available_bytes at most (the rest is the page cache's and the
// process's). The error says what takes the memory and what lowers it (decode's lane buffers are named apart).
Status CheckReadBuffers(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& facts, const ReadPlan& plan);

// The plan when the DlioEngine could not be built (no io_uring): the coalesced engines, `why` said, its notes anew.
ReadPlan FallBackToCoalesced(const WorkloadConfig& cfg, const RunOptions& opt, const ReadFacts& facts, const std::string& why);

// Upstream DLIO's np.load on npz files of one sample each, stored (dataset.compression: none), or on npy files of one
// sample each, where the run replays DLIO's reader calls and nothing needs the samples' extents first (no --verify, no
// retained batches): set-up indexes none of them, and each lane learns its file's layout (an npz's zip layout, an
// npy's header length) from np.load's own reads in the window (loader/format/numpy_learn.h), as DLIO reads nothing
// before training. Decided from the configuration alone, before set-up indexes anything (the plan then agrees).
bool LearnsLayoutInLanes(const WorkloadConfig& cfg, const RunOptions& opt, bool s3, bool memory_storage);

// The batches v3.0's DLIO pre-warms its PyTorch DataLoader with before every epoch and after the last (main.py run):
// the next epoch's first batch of each of its read_threads workers, and worker 0's second, which it begins as soon as
// it has handed batch 0 over, before the main process deletes the iterator (its main process's one batch with no
// workers); 0 for other editions, TensorFlow, and S3 (s3dlio's iterable readers are not replayed). From the
// configuration alone: set-up keeps the paths of the epoch after the last that the final pass reads
// (ReadPlan::prewarm_batches agrees).
uint64_t PrewarmBatches(const WorkloadConfig& cfg, bool s3);

// feedrate.decode on JPEG/PNG where the run replays DLIO's reader calls: each image is decoded in its lane, which
// needs no size before training, so set-up opens no image file (DLIO opens none either). Decided from the
// configuration alone, before set-up indexes anything (the plan then agrees).
bool DecodesInLanes(const WorkloadConfig& cfg, const RunOptions& opt, bool s3, bool memory_storage);

}  // namespace feedrate
