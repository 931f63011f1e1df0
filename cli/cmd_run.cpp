// `feedrate run`: emulate accelerators training on a dataset and report AU (see emulator/run/run.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "cli/launch.h"
#include "emulator/host/comm.h"
#include "emulator/results/mlperf_record.h"
#include "emulator/results/validity.h"
#include "emulator/run/run.h"
#include "emulator/training/interrupt.h"
#include "loader/io/fault_injection.h"
#include "loader/util/choices.h"

namespace feedrate::cli {

namespace {

// `feedrate run`'s options beyond the workload's, as parsed (one object the runner reads).
struct RunCommandArgs {
  WorkloadArgs w;
  RunOptions o;
  LaunchArgs launch;
  bool keep_open = false, odirect = false;
  std::string order, engine, step_barrier = "auto";
  uint64_t queue_depth = 0;
  double collective_timeout = 1800;
  uint64_t total_accelerators = 0;  // mlpstorage's --num-accelerators (the job's), 0: -n per rank
  bool closed = false, open = false;
  MlperfArgs mlperf;
  uint64_t loops = 1;  // back-to-back runs (mlpstorage's --loops: 1 warm-up + 5 is 6)
};

// How the samples are read: accelerators, I/O threads, engine, order, depth, O_DIRECT, retained batches.
void RegisterReadingOptions(CLI::App* sub, RunCommandArgs& a) {
  sub->add_option("--accelerators,-n", a.o.accelerators, "emulated accelerators per rank (threads)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{4096}));
  sub->add_option("--io-threads", a.o.io_threads, "I/O threads per rank (default: reader.read_threads x accelerators, at most 4 per CPU, 1 per CPU for "
                                                   "buffered reads on tmpfs)");
  sub->add_option("--results-dir", a.o.results_dir, "where results go (default feedrate-results/<timestamp>_<workload>)");
  sub->add_flag("--retain-batches", a.o.retain_batches, "keep whole batches in memory (DLIO-like footprint)");
  sub->add_flag("--keep-files-open", a.keep_open, "open each file once instead of per sample read");
  sub->add_option("--order", a.order, "dlio (DLIO v2.0 order, default) or shuffled (seeded per-epoch shuffle)")
      ->check(CLI::IsMember({"dlio", "shuffled"}));
  sub->add_option("--engine", a.engine, "auto (io_uring, else POSIX; default), uring or posix")
      ->check(CLI::IsMember({"auto", "uring", "posix"}));
  sub->add_option("--queue-depth", a.queue_depth, "reads in flight per I/O thread (io_uring; default 1 buffered, 16 with O_DIRECT)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{4096}));
  sub->add_flag("--odirect", a.odirect, "O_DIRECT reads (same as reader.odirect: true)");
}

// mlpstorage's run options where they mean what Feedrate's do (docs/mlpstorage.md "Option names").
void RegisterMlpstorageOptions(CLI::App* sub, RunCommandArgs& a) {
  sub->add_option("--num-accelerators", a.total_accelerators,
                  "mlpstorage's spelling: accelerators in the whole job, split evenly over the ranks (excludes -n)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20))
      ->excludes("--accelerators");
  sub->add_option("--client-host-memory-in-gb", a.o.client_memory_gib,
                  "memory per client host the rules' dataset-size check counts, GiB (mlpstorage's; default: each host's "
                  "MemTotal)")
      ->check(PositiveNumber());
  auto* closed = sub->add_flag("--closed", a.closed, "refuse to start unless the run is CLOSED by its edition's rules "
                                                     "(mlpstorage's; --allow-invalid-params runs it anyway)");
  sub->add_flag("--open", a.open, "refuse to start when the run is INVALID by its edition's rules (mlpstorage's)")->excludes(closed);
  sub->add_flag("--allow-invalid-params", a.o.allow_invalid_params,
                "with --closed/--open: run even when the rules' verdict is below it (the verdict is still recorded)");
  sub->add_option("--loops", a.loops, "runs back to back, each its own results folder (mlpstorage's; a submission has "
                                      "6: 1 warm-up + 5)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000}));
  a.mlperf.Register(sub);
}

// The exit code of several runs: an error wins, then an interrupt, then a missed AU bar.
int WorstCode(int a, int b) {
  for (int code : {kExitError, kExitInterrupted, kExitMissedAu}) {
    if (a == code || b == code) return code;
  }
  return a;
}

// mlpstorage's args for the tree's metadata: the run's options under mlpstorage's names.
nlohmann::json MlpstorageArgs(const RunCommandArgs& a, const WorkloadConfig& cfg, const Comm& comm,
                              const std::vector<std::string>& overrides) {
  std::vector<std::string> hosts;
  for (int r = 0; r < comm.size(); ++r) {
    if (std::find(hosts.begin(), hosts.end(), comm.hostname(r)) == hosts.end()) hosts.push_back(comm.hostname(r));
  }
  const uint64_t total = static_cast<uint64_t>(comm.size()) * a.o.accelerators;
  return {{"program", "training"}, {"command", "run"}, {"model", MlpstorageTrainingModel(cfg)}, {"accelerator_type", WorkloadAccelerator(cfg)},
          {"num_accelerators", total}, {"num_processes", total}, {"client_host_memory_in_gb", a.o.client_memory_gib},
          {"data_dir", cfg.data_folder}, {"results_dir", a.mlperf.tree.root}, {"loops", a.loops}, {"closed", a.closed},
          {"open", a.open}, {"params", overrides}, {"hosts", hosts}, {"ranks", comm.size()},
          {"accelerators_per_rank", a.o.accelerators}};
}

// `--loops N` runs, each into its own folder: the tree's next timestamped run folder (with its record), or a
// default results folder. Collective.
int RunLoops(const RunCommandArgs& a, const WorkloadConfig& cfg, const std::vector<std::string>& overrides, Comm& comm) {
  int worst = kExitPass;
  for (uint64_t k = 1; k <= a.loops; ++k) {
    if (a.loops > 1 && comm.root()) std::printf("run %llu of %llu\n", static_cast<unsigned long long>(k),
                                                static_cast<unsigned long long>(a.loops));
    int code = kExitPass;
    if (a.mlperf.tree.enabled()) {
      MlperfRecord::Spec spec{"training", "run", MlpstorageTrainingModel(cfg), WorkloadAccelerator(cfg), true, overrides,
                              a.o.command_line, MlpstorageArgs(a, cfg, comm, overrides)};
      code = RunRecorded(a.mlperf.tree, spec, cfg, comm, comm.size() * static_cast<int>(a.o.accelerators),
                         [&](const MlperfRecord& record) {
                           RunOptions o = a.o;
                           o.results_dir = record.dir();
                           o.dlio = record.dlio();
                           return RunTraining(cfg, o, comm);
                         });
    } else {
      code = RunTraining(cfg, a.o, comm);
    }
    worst = WorstCode(worst, code);
    if (code == kExitError || code == kExitInterrupted) break;
  }
  return worst;
}

// What the run says while it goes, and how long ranks wait for each other.
void RegisterProgressOptions(CLI::App* sub, RunCommandArgs& a) {
  sub->add_flag("--quiet,-q", a.o.quiet, "no progress output (the result is still printed)");
  sub->add_flag("--json-events", a.o.json_events, "progress (each second), epochs and the result as JSON lines on stdout");
  sub->add_option("--inject", a.o.inject, "inject faults into the training reads, for tests and demos: RULE[;RULE...], "
                                         "RULE = short|eagain|eio|delay[:every=N,after=N,count=N,file=GLOB,offset=A-B,us=N,ms=N] "
                                         "(docs/faults.md); the run is then INVALID")
      ->check(CheckInjectRules);
  sub->add_option("--collective-timeout", a.collective_timeout,
                  "seconds any rank waits in a collective (step barrier, reductions) before the job ends naming the "
                  "rank(s) and host(s) that did not arrive (default 1800; 0: forever)")
      ->check(NonNegativeNumber());
  sub->add_option("--step-barrier", a.step_barrier,
                  "how each step's agreement travels between ranks: flat (one allreduce), hierarchical (within each "
                  "host, then across hosts) or auto (hierarchical with several hosts and several ranks on one; default)")
      ->check(CLI::IsMember({"auto", "flat", "hierarchical"}));
}

// What served the bytes and what is measured about them: the page cache, verification, residency, time series.
void RegisterMeasurementOptions(CLI::App* sub, RunCommandArgs& a) {
  sub->add_option("--cache", a.o.cache,
                  "client page cache (default: as the emulated DLIO: with --rules v3.0 the ranks on rank 0's host drop "
                  "it before every epoch, as its DLIO does; upstream keeps it): keep, drop (evict the dataset's files before the run and "
                  "before every epoch), drop-once (before the run only: epoch 1 cold, later ones show what the cache "
                  "holds) or direct (O_DIRECT reads)")
      ->check(CLI::IsMember({"keep", "drop", "drop-once", "direct"}));
  sub->add_flag("--drop-system-caches", a.o.drop_system_caches,
                "with --cache drop/drop-once: also sync and write 3 to /proc/sys/vm/drop_caches, once per host (root)");
  sub->add_option("--verify", a.o.verify,
                  "check this fraction (0-1; 1 = every byte) of each sample's payload against the dataset's pattern "
                  "(needs datagen --content verifiable); a mismatch fails the run naming file and offset")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--residency", a.o.residency,
                  "sample (default): the I/O threads look up the page-cache residency of about 512 reads per "
                  "accelerator and epoch just before reading them (cachestat, else a mincore window; "
                  "feedrate.epochs[].resident_fraction); off: no probe")
      ->check(CLI::IsMember({"sample", "off"}));
  sub->add_option("--io-thread-policy", a.o.io_thread_policy,
                  "nice (default): the I/O threads run at nice +10, so the copies they do on a busy client do not "
                  "delay the accelerator threads' wake-ups (compute deadlines, step barriers) that the metrics time; "
                  "idle: SCHED_IDLE, the strongest (they run only when nothing else wants a CPU); normal: as every "
                  "other thread (on a client shared with other work)")
      ->transform(Choices<IoThreadPolicy>(
          {{"idle", IoThreadPolicy::kIdle}, {"nice", IoThreadPolicy::kNice}, {"normal", IoThreadPolicy::kNormal}}));
  sub->add_option("--io-timeout", a.o.io_timeout,
                  "seconds an accelerator waits for its batch without one of its reads completing before the run "
                  "fails naming the read (a storage that stopped answering; default 600; 0: wait forever)")
      ->check(NonNegativeNumber());
  sub->add_option("--timeseries-interval", a.o.timeseries_interval,
                  "seconds between time-series samples in timeseries.csv (default 1; 0: none)")
      ->check(NonNegativeNumber());
  sub->add_option("--metrics-listen", a.o.metrics_listen,
                  "HOST:PORT: serve live Prometheus metrics of each rank there (AU, stall, bytes, reads, latency "
                  "histogram, CPU, phase; docs/metrics.md); a host's further ranks serve the ports after PORT")
      ->type_name("HOST:PORT");
  sub->add_option("--metrics-textfile", a.o.metrics_textfile,
                  "DIR: write the same metrics to DIR/feedrate_rank<R>.prom every second and at the end, for "
                  "node_exporter's textfile collector (--collector.textfile.directory DIR)")
      ->type_name("DIR");
  sub->add_option("--metrics-hold", a.o.metrics_hold,
                  "with --metrics-listen: seconds the run waits at its end until a scrape has read its final figures "
                  "(default 60, Prometheus's default scrape interval; 0: no wait)")
      ->check(NonNegativeNumber());
}

// Where a batch must land before it counts (host, pinned or GPU memory) and how it gets there.
void RegisterDeviceOptions(CLI::App* sub, RunCommandArgs& a) {
  sub->add_option("--accelerator-memory", a.o.accelerator_memory,
                  "where a batch must be before it counts as delivered: host (default: the reads' own memory), pinned "
                  "(page-locked host memory, cuMemHostAlloc) or device (each accelerator's GPU memory: cuFile reads (--gds) or "
                  "reads into pinned buffers, then cuMemcpyHtoDAsync on a stream per accelerator; copy time the compute "
                  "did not hide is stall). pinned and device load the CUDA driver at run time (docs/gpu.md)")
      ->transform(Choices<AcceleratorMemory>(
          {{"host", AcceleratorMemory::kHost}, {"pinned", AcceleratorMemory::kPinned}, {"device", AcceleratorMemory::kDevice}}));
  sub->add_option("--gds", a.o.gds,
                  "with --accelerator-memory device: on = GPUDirect Storage, cuFileRead from the O_DIRECT files straight "
                  "into each accelerator's GPU memory (needs --odirect and libcufile.so.0); off = reads into pinned "
                  "memory and a copy; auto (default) = on where cuFile opens and takes the files, else off, the reason "
                  "in engine_detail (docs/gpu.md)")
      ->transform(Choices<GdsMode>({{"auto", GdsMode::kAuto}, {"on", GdsMode::kOn}, {"off", GdsMode::kOff}}));
  sub->add_option("--gpus", a.o.gpus, "GPU ordinals the accelerators map onto, round-robin over all ranks' accelerators "
                                     "(default: every GPU the driver sees), e.g. --gpus 0,1")
      ->delimiter(',')
      ->check(NonNegativeNumber());
}

// The workload with the run's own switches as overrides (they are workload keys underneath).
std::vector<std::string> RunOverrides(const RunCommandArgs& a) {
  auto overrides = a.w.Overrides();
  if (a.keep_open) overrides.push_back("feedrate.keep_files_open=true");
  if (!a.order.empty()) overrides.push_back("feedrate.order=" + a.order);
  if (!a.engine.empty()) overrides.push_back("feedrate.engine=" + a.engine);
  if (a.queue_depth > 0) overrides.push_back("feedrate.queue_depth=" + std::to_string(a.queue_depth));
  if (a.odirect || a.o.cache == "direct") overrides.push_back("reader.odirect=true");
  return overrides;
}

int ExecuteRun(RunCommandArgs a, int* argc, char*** argv) {
  if (a.launch.requested()) return RelaunchUnderMpirun(a.launch, *argc, *argv);
  a.mlperf.Check();
  if (a.loops > 1 && !a.o.results_dir.empty() && !a.mlperf.tree.enabled()) {
    throw CLI::ValidationError("--loops", "writes a folder per run: the default feedrate-results/<timestamp>_<workload> ones or "
                                          "an --mlperf-root tree, not one --results-dir");
  }
  if (a.mlperf.tree.enabled() && !a.o.results_dir.empty()) {
    throw CLI::ValidationError("--results-dir", "excludes --mlperf-root (the tree names each run's folder)");
  }
  a.o.command_line = JoinCommandLine(*argc, *argv);
  Comm comm(argc, argv);
  comm.SetCollectiveTimeout(a.collective_timeout);
  const bool hierarchical = a.step_barrier == "hierarchical" ||
                            (a.step_barrier == "auto" && comm.num_hosts() > 1 && comm.size() > comm.num_hosts());
  comm.SetStepBarrier(hierarchical ? StepBarrierMode::kHierarchical : StepBarrierMode::kFlat);
  InstallInterruptHandlers();
  const std::optional<WorkloadConfig> cfg = LoadJobWorkload(a.w.workload, RunOverrides(a), comm);
  if (!cfg) return kExitError;
  if (a.total_accelerators > 0) {  // every rank refuses alike (only rank 0 says so)
    if (a.total_accelerators % static_cast<uint64_t>(comm.size()) != 0) {
      if (comm.root()) {
        std::fprintf(stderr, "feedrate: error: --num-accelerators %llu does not split evenly over %d rank(s); give a "
                             "multiple of the ranks, or -n per rank\n",
                     static_cast<unsigned long long>(a.total_accelerators), comm.size());
      }
      return kExitError;
    }
    a.o.accelerators = a.total_accelerators / static_cast<uint64_t>(comm.size());
    if (a.o.accelerators > 4096) {  // (-n's own bound: a rank emulates at most 4096)
      if (comm.root()) {
        std::fprintf(stderr, "feedrate: error: --num-accelerators %llu gives %llu accelerators per rank over %d rank(s), "
                             "more than the 4096 a rank emulates; use more ranks\n",
                     static_cast<unsigned long long>(a.total_accelerators), static_cast<unsigned long long>(a.o.accelerators),
                     comm.size());
      }
      return kExitError;
    }
  }
  a.o.declared_category = a.closed ? "CLOSED" : a.open ? "OPEN" : "";
  a.o.version = FEEDRATE_VERSION;
  return RunLoops(a, *cfg, RunOverrides(a), comm);
}

}  // namespace

Runner AddRun(CLI::App& app, int* argc, char*** argv) {
  auto* sub = app.add_subcommand("run", "emulate accelerators training on a dataset; exit 0 pass, 3 AU missed, 2 error");
  auto a = std::make_shared<RunCommandArgs>();
  a->w.Register(sub, true, true);
  a->launch.Register(sub);
  RegisterReadingOptions(sub, *a);
  RegisterProgressOptions(sub, *a);
  RegisterMeasurementOptions(sub, *a);
  RegisterDeviceOptions(sub, *a);
  RegisterMlpstorageOptions(sub, *a);
  return [=] { return ExecuteRun(*a, argc, argv); };
}

}  // namespace feedrate::cli
