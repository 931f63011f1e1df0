// `feedrate checkpoint`: MLPerf Storage's checkpoint write and read emulation (DLIO v2.0's layout, v3.0's rules; emulator/checkpoint/checkpoint.h).
#include <cstdio>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "loader/util/exit_codes.h"
#include "cli/launch.h"
#include "emulator/checkpoint/checkpoint.h"
#include "emulator/results/mlperf_record.h"
#include "emulator/results/validity.h"
#include "emulator/host/comm.h"
#include "emulator/training/interrupt.h"

namespace feedrate::cli {

namespace {

// With --mlperf-root: the run recorded as mlpstorage's checkpointing/<model>/<stamp> folder (DLIO's files, the
// metadata, the output copies, the workload's results.json). Collective.
int CheckpointIntoTree(const WorkloadConfig& cfg, CheckpointOptions o, const MlperfTree& tree,
                       const std::vector<std::string>& overrides, Comm& comm) {
  const std::string model = MlpstorageCheckpointModel(cfg);
  if (model.empty()) {
    if (comm.root()) std::fprintf(stderr, "feedrate: error: --mlperf-root: %s is not one of mlpstorage's checkpoint models "
                                          "(llama3-8b, -70b, -405b, -1t)\n", cfg.name.c_str());
    return kExitError;
  }
  const nlohmann::json args = {{"program", "checkpointing"}, {"command", "run"}, {"model", model},
                               {"num_processes", comm.size()}, {"checkpoint_folder", o.dir}, {"params", overrides},
                               {"results_dir", tree.root},
                               {"num_checkpoints_write", o.num_write}, {"num_checkpoints_read", o.num_read}};
  MlperfRecord::Spec spec{"checkpointing", "run", model, "", true, overrides, o.command_line, args};
  return RunRecorded(tree, spec, cfg, comm, comm.size(), [&](const MlperfRecord& record) {
    o.results_dir = record.dir();
    o.dlio = record.dlio();
    return RunCheckpoint(cfg, o, comm);
  });
}

}  // namespace

Runner AddCheckpoint(CLI::App& app, int* argc, char*** argv) {
  auto* sub = app.add_subcommand("checkpoint", "write then read LLM checkpoints as MLPerf Storage v2.0 and v3.0 do (llama3_8b ... llama3_1t; DLIO v2.0's layout, v3.0's rules; docs/checkpoint.md)");
  auto w = std::make_shared<WorkloadArgs>();
  auto o = std::make_shared<CheckpointOptions>();
  w->Register(sub, false);
  auto launch = std::make_shared<LaunchArgs>();
  launch->Register(sub);
  sub->add_option("--dir,--checkpoint-folder", o->dir,
                  "checkpoint folder (default: the workload's checkpoint.checkpoint_folder; mlpstorage's --checkpoint-folder)");
  sub->add_option("--num-checkpoints-write", o->num_write, "checkpoints to write (default: the workload's, 10)");
  sub->add_option("--num-checkpoints-read", o->num_read, "checkpoints to read back (default: the workload's, 10)");
  sub->add_option("--time-between", o->time_between, "seconds idle before each checkpoint (default: the workload's, 5)")
      ->check(NonNegativeNumber());
  sub->add_option("--scale", o->scale, "multiply every file's size by this (0 < F <= 1), for tests and demos; recorded in the summary");
  sub->add_option("--results-dir", o->results_dir, "where summary.json goes (default feedrate-results/<timestamp>_<workload>)");
  sub->add_option("--engine", o->engine, "auto (io_uring, else pread/pwrite; default), uring or posix")
      ->transform(Choices<EngineKind>({{"auto", EngineKind::kAuto}, {"uring", EngineKind::kUring}, {"posix", EngineKind::kPosix}}));
  sub->add_flag("--odirect", o->odirect, "O_DIRECT writes and reads (the page cache is bypassed)");
  sub->add_option("--read-cache", o->read_cache, "before reading: drop (evict every rank's checkpoint files; default) or keep")
      ->check(CLI::IsMember({"drop", "keep"}));
  sub->add_flag("--drop-system-caches", o->drop_system_caches, "also sync and write 3 to /proc/sys/vm/drop_caches before reading (root)");
  sub->add_option("--queue-depth", o->queue_depth,
                  "requests in flight per I/O thread, as in run (a checkpoint rank has one; default 8)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{256}));
  sub->add_option("--block-size", o->block, "bytes per request (default 4 MiB)")->check(CLI::Range(uint64_t{4096}, uint64_t{64} << 20));
  sub->add_flag("--verify", o->verify, "write a verifiable pattern and check every byte read back");
  sub->add_option("--inject", o->inject, "inject faults into the writes (or the reads: op=read), for tests and demos: enospc|eio|short|eagain|delay[:every=N,after=N,"
                                         "count=N,file=GLOB,offset=A-B,ms=N] (docs/faults.md)")
      ->check(CheckInjectRules);
  sub->add_flag("--quiet,-q", o->quiet, "no per-checkpoint lines");
  auto collective_timeout = std::make_shared<double>(1800);
  sub->add_option("--collective-timeout", *collective_timeout, "seconds any rank waits in a collective (default 1800; 0: forever)")
      ->check(NonNegativeNumber());
  auto mlperf = std::make_shared<MlperfArgs>();
  mlperf->Register(sub);
  return [=] {
    if (launch->requested()) return RelaunchUnderMpirun(*launch, *argc, *argv);
    mlperf->Check();
    if (mlperf->tree.enabled() && !o->results_dir.empty()) {
      throw CLI::ValidationError("--results-dir", "excludes --mlperf-root (the tree names the run's folder)");
    }
    o->command_line = JoinCommandLine(*argc, *argv);
    Comm comm(argc, argv);
    comm.SetCollectiveTimeout(*collective_timeout);
    InstallInterruptHandlers();
    const std::optional<WorkloadConfig> loaded = LoadJobWorkload(w->workload, w->Overrides(), comm);
    if (!loaded) return kExitError;
    const WorkloadConfig& cfg = *loaded;
    if (cfg.on_s3()) {
      if (comm.root()) std::fprintf(stderr, "feedrate: error: %s: checkpoints are written to files (--dir); not to S3 yet\n",
                                    cfg.source.c_str());
      return kExitError;
    }
    if (!w->data_dir.empty()) {  // every rank refuses (only rank 0 says so): none may be left in a collective
      if (comm.root()) std::fprintf(stderr, "feedrate: error: checkpoint takes --dir, not --data-dir\n");
      return kExitError;
    }
    o->version = FEEDRATE_VERSION;
    if (!mlperf->tree.enabled()) return RunCheckpoint(cfg, *o, comm);
    return CheckpointIntoTree(cfg, *o, mlperf->tree, w->Overrides(), comm);
  };
}

}  // namespace feedrate::cli
