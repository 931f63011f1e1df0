// A rank's setup before training (PrepareRank) and what it holds for the run (Setup). Internal to emulator/run.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/host/cache_control.h"
#include "emulator/host/comm.h"
#include "emulator/host/storage_stats.h"
#include "emulator/run/read_plan.h"
#include "emulator/run/run.h"
#include "emulator/run/run_gpu.h"
#include "emulator/run/run_s3.h"
#include "loader/config/workload_config.h"
#include "loader/dataset/dataset.h"
#include "loader/format/sample_table.h"
#include "loader/format/dlio_planner.h"
#include "loader/io/engine_factory.h"
#include "loader/io/fault_injection.h"
#include "loader/io/io_stats.h"
#include "loader/pipeline/prefetcher.h"
#include "loader/pipeline/sampler.h"
#include "loader/status.h"

namespace feedrate {

// Owns everything a rank's run reads with. The engine refers to file_table, faults and io_stats: members are
// declared so that it is destroyed first (or released, never destroyed, after a lost read: run.cpp).
struct Setup {
  PathList files;           // training files, then validation files: the paths of those this rank reads
  size_t train_files = 0;   // how many of `files` are training files (dataset.num_files_train)
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
  AcceleratorStaging staging;             // --accelerator-memory; declared before the engine, which reads into it
  EngineOptions engine_options;  // the plan's, with the run's fault injection, thread policy and I/O statistics
  EngineChoice engine;
  // How the run reads (read_plan.h): pattern and why, engine, workers, threads, depths, staging, read buffers. Made
  // once by PrepareRank (again only where the DlioEngine or cuFile's registration could not be set up).
  ReadPlan plan;
  std::vector<uint32_t> file_lanes;           // TensorFlow's streams (plan.tf_streams): each file's lane, else empty
  std::unique_ptr<TableReadPlanner> planner;  // the dlio pattern's calls; outlives the engine
  SampleCheck head_check = SampleCheck::kNone;  // the plan's engine_check: the table's check, now the engine's
  bool images_unopened = false;  // image files not opened at set-up: each sample its whole file, size unknown
  // What set-up asked of the storage before the window: files stat'ed (metadata only: whole-file tables), files
  // opened (headers indexed; FUSE's one-byte page-cache probe) and the reads and bytes those made, for summary.json's
  // feedrate.setup_reads.
  uint64_t setup_stats = 0, setup_opens = 0, setup_reads = 0, setup_bytes = 0;
  SlotReads slot_reads;  // samples with bytes a batch holds at most: what a retained or staged slot has room for
  double dataset_bytes = 0;
  std::vector<std::string> warnings;
  std::unique_ptr<S3RunSetup> s3;  // S3 datasets (storage.storage_type s3): run_s3.h
  // Rank 0's listings, made before any per-sample state (ListDatasetFirst) and shared once the sampler knows which
  // files each rank reads; empty on the other ranks and on S3.
  std::optional<DatasetListing> listed_train, listed_eval;
};


// --cache as the run uses it. Not given, it is what the emulated DLIO does (DlioEditionTraits::flush_rank0_each_epoch):
// MLPerf Storage v3.0's rank 0 drops its node's page cache before every epoch, so ranks on rank 0's host drop and
// the others keep (nothing to drop on memory-backed storage, O_DIRECT or S3); upstream DLIO keeps it.
struct CacheChoice {
  CacheMode mode = CacheMode::kKeep;
  bool rank0_host_only = false;  // the edition's flush: only the ranks on rank 0's host drop
  std::string Describe() const {
    return std::string(CacheModeName(mode)) + (rank0_host_only ? " (rank 0's host, as the emulated DLIO flushes)" : "");
  }
};
CacheChoice ChooseCache(const WorkloadConfig& cfg, const RunOptions& opt);

// The storage and host facts set-up knows before it indexes anything: S3 or files, memory-backed storage, this rank's
// CPUs, `direct_align` (O_DIRECT's, probed). Enough for EngineRequestOf (indexing's thread count).
ReadFacts StorageFactsOf(const WorkloadConfig& cfg, bool s3, uint64_t direct_align);
// What set-up learned that the read plan depends on (read_plan.h's ReadFacts), built once. REQUIRES: the sample table
// indexed, the slots' reads counted, the content keys made, the accelerators set up (SetUpAccelerators). The cuFile
// probe's facts (reads_files, cufile_*) are the caller's to add.
ReadFacts FactsOf(const WorkloadConfig& cfg, uint64_t direct_align, const Setup& s);

// Everything a rank does before training; any failure is a Status naming the file/key and the cause. Call once;
// `s` must be empty. On success s->engine is open and s->warnings holds what rank 0 should print.
Status PrepareRank(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, Setup* s);

}  // namespace feedrate
