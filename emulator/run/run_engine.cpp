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

// The DlioEngine the plan describes: its planner over the sample table, TensorFlow's file lanes, the engine itself.
Status OpenDlioEngine(const WorkloadConfig& cfg, const ReadPlan& plan, Setup* s) {
  s->planner = std::make_unique<TableReadPlanner>(plan.kind, s->table, 64ULL << 20, cfg.tf_buffer_size);
  DlioEngineOptions d;
  d.lanes = plan.lanes;
  d.lane_capacity = plan.lane_capacity;
  d.chunk = plan.chunk;
  if (plan.preprocess) d.preprocess = cfg.preprocess_time;
  d.collate_sample_bytes = plan.collate_sample_bytes;
  // A storage fact the engine's build learns, not a decision: a FUSE mount read through the page cache.
  d.async_reads = CachedFuse(*s->file_table);
  if (s->file_table->size() > 0 && FileSystemType(s->file_table->path(0)) == "fuse") {  // (its probe: a byte)
    ++s->setup_opens;
    ++s->setup_reads;
    ++s->setup_bytes;
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto engine, DlioEngine::Create(*s->file_table, s->engine_options, d, *s->planner));
  if (plan.tf_streams) AssignFileLanes(plan.tf_cycle, plan.workers, s);
  s->engine.description = "dlio (" + engine->setup_description() + "): " + plan.reason;
  s->engine.engine = std::move(engine);
  return Status::Ok();
}

// The S3 engine the plan describes (its lanes take the listing's object sizes: the CRT's parts follow them).
Status OpenS3Engine(const WorkloadConfig& cfg, const ReadPlan& plan, Setup* s) {
  S3LaneOptions lanes;
  if (plan.engine == ReadEngineKind::kS3Lanes) {
    lanes.lanes = plan.lanes;
    lanes.lane_capacity = plan.lane_capacity;
    lanes.part_size = cfg.s3_part_size;
    lanes.window = plan.s3_window;
    if (plan.preprocess) lanes.preprocess = cfg.preprocess_time;
    lanes.object_sizes.assign(s->file_table->size(), 0);
    for (size_t i = 0; i < lanes.object_sizes.size(); ++i) {
      if (auto it = s->s3->sizes.find(s->file_table->path(i)); it != s->s3->sizes.end()) lanes.object_sizes[i] = it->second;
    }
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto engine, S3Engine::Create(*s->file_table, s->engine_options, s->s3->store, lanes));
  s->engine.description = engine->description();
  s->engine.engine = std::move(engine);
  return Status::Ok();
}

// The coalesced engines (MakeEngine's auto, uring or posix) and what the run says of them.
Status OpenCoalescedEngine(const WorkloadConfig& cfg, const Comm& comm, const ReadPlan& plan, const ReadFacts& facts,
                           Setup* s) {
  if (plan.lane_decode_only) {  // (DecodesInLanes answered otherwise before set-up: a bug, not a run to make)
    return Status::Unsupported("feedrate.decode: images not opened at set-up, but the run reads coalesced (" +
                               plan.reason + ")");
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto engine, MakeEngine(cfg.engine, *s->file_table, s->engine_options, facts.memory_storage));
  s->engine = std::move(engine);
  if (s->staging.mode == AcceleratorMemory::kDevice) {
    s->engine.description += "; into GPU memory through pinned buffers and a copy (" + s->staging.gds_reason + ")";
  }
  if (!s->engine.fallback_reason.empty()) {
    std::fprintf(stderr, "feedrate: warning: rank %d: io_uring unavailable (%s); using the posix engine\n", comm.rank(),
                 s->engine.fallback_reason.c_str());
  }
  return Status::Ok();
}

// The file table (it takes the paths over: one copy of a million-file listing, not two) and fault injection.
Status OpenFileTable(const WorkloadConfig& cfg, const RunOptions& opt, Setup* s) {
  const FileOpenMode mode = cfg.keep_files_open                             ? FileOpenMode::kOnce
                            : cfg.data_loader == DataLoader::kTensorFlow ? FileOpenMode::kStream
                                                                           : FileOpenMode::kPerSample;
  FEEDRATE_ASSIGN_OR_RETURN(auto table, FileTable::Create(std::move(s->files), s->s3 ? FileOpenMode::kPerSample : mode,
                                                          cfg.odirect ? O_DIRECT : 0));
  s->file_table = std::make_unique<FileTable>(std::move(table));
  if (!opt.inject.empty()) {
    FEEDRATE_ASSIGN_OR_RETURN(auto plan, ParseFaultPlan(opt.inject));
    s->faults = std::make_unique<FaultInjector>(std::move(plan), cfg.odirect ? s->plan.options.direct_align : 1);
    s->faults->BindFiles(*s->file_table);
    s->warnings.push_back("faults injected into the training reads (--inject " + opt.inject +
                          "): the results measure them, not the storage alone");
  }
  return Status::Ok();
}

// The engine's options: the plan's numbers, with the run's fault injection, thread policy and fresh I/O statistics
// (one shard per thread of the plan's).
void TakePlanOptions(const RunOptions& opt, Setup* s) {
  s->io_stats = std::make_unique<IoStats>(s->plan.io_threads);
  s->engine_options = s->plan.options;
  s->engine_options.faults = s->faults.get();
  s->engine_options.stats = s->io_stats.get();
  s->engine_options.thread_policy = opt.io_thread_policy;
}

// The engine the plan names; where the DlioEngine cannot run (no io_uring), the coalesced plan instead.
Status OpenPlanned(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, const ReadFacts& facts,
                   Setup* s) {
  TakePlanOptions(opt, s);
  switch (s->plan.engine) {
    case ReadEngineKind::kS3Lanes:
    case ReadEngineKind::kS3Ranged: return OpenS3Engine(cfg, s->plan, s);
    case ReadEngineKind::kCuFile: return OpenCuFileEngine(s);
    case ReadEngineKind::kCoalesced: return OpenCoalescedEngine(cfg, comm, s->plan, facts, s);
    case ReadEngineKind::kDlio: break;
  }
  Status st = OpenDlioEngine(cfg, s->plan, s);
  if (st.ok()) return st;
  if (s->plan.lane_decode_only) {
    return Status::InvalidArgument("feedrate.decode: the images are decoded in each DataLoader worker's sequence, as "
                                   "DLIO's reader decodes, which needs the DLIO engine (" + st.ToString() +
                                   "); set feedrate.access_pattern=coalesced to decode on the I/O threads instead");
  }
  s->planner.reset();
  s->plan = FallBackToCoalesced(cfg, opt, facts, st.ToString());
  FEEDRATE_RETURN_IF_ERROR(CheckReadBuffers(cfg, opt, facts, s->plan));
  TakePlanOptions(opt, s);
  return OpenCoalescedEngine(cfg, comm, s->plan, facts, s);
}

}  // namespace

Status OpenEngine(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, const ReadFacts& facts,
                  Setup* s) {
  FEEDRATE_RETURN_IF_ERROR(OpenFileTable(cfg, opt, s));
  FEEDRATE_RETURN_IF_ERROR(OpenPlanned(cfg, opt, comm, facts, s));
  s->warnings.insert(s->warnings.end(), s->plan.warnings.begin(), s->plan.warnings.end());
  // The plan's choices the rest of the run reads from the setup: the check the engine makes instead of the prefetcher.
  if (s->plan.engine_check != SampleCheck::kNone) {
    s->head_check = s->plan.engine_check;
    s->table.check = SampleCheck::kNone;  // the prefetcher, which gets no bytes, checks nothing
  }
  return Status::Ok();
}

}  // namespace feedrate
