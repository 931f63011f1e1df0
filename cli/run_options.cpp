// `feedrate run`'s option table: the options sweep forwards and the ones only run takes (run_options.h).
#include "cli/run_options.h"

#include <algorithm>

#include "loader/io/fault_injection.h"
#include "loader/util/choices.h"

namespace feedrate::cli {

void ForwardedRunOptions::Add(CLI::Option* opt, std::function<std::string()> text) {
  entries_.push_back({opt, std::move(text)});
}

std::vector<std::string> ForwardedRunOptions::Argv() const {
  std::vector<std::string> v;
  for (const auto& e : entries_) {
    if (e.opt->count() == 0) continue;
    v.push_back("--" + e.opt->get_lnames().front());  // (every forwarded option has a long name)
    if (e.opt->get_expected_max() == 0) continue;  // a flag (CLI11 stores "true" as its result)
    if (e.text) {
      v.push_back(e.text());
      continue;
    }
    std::string joined;
    for (const auto& r : e.opt->results()) joined += (joined.empty() ? "" : ",") + r;
    v.push_back(joined);
  }
  return v;
}

namespace {

// How the samples are read: I/O threads, engine, order, depth, O_DIRECT, retained batches.
void RegisterReadingOptions(CLI::App* sub, RunCommandArgs& a, ForwardedRunOptions& out) {
  out.Add(sub->add_option("--io-threads", a.o.io_threads, "I/O threads per rank (default: with the DLIO engine one per CPU, at most one per "
                                                           "DataLoader worker; with the coalesced engines reader.read_threads x "
                                                           "accelerators, at most 4 per CPU, 1 per CPU for buffered reads on "
                                                           "memory-backed storage)"));
  out.Add(sub->add_flag("--retain-batches", a.o.retain_batches, "keep whole batches in memory (DLIO-like footprint)"));
  out.Add(sub->add_flag("--keep-files-open", a.keep_open, "open each file once instead of per sample read"));
  out.Add(sub->add_option("--order", a.order, "dlio (DLIO v2.0 order, default) or shuffled (seeded per-epoch shuffle)")
              ->check(CLI::IsMember({"dlio", "shuffled"})));
  out.Add(sub->add_option("--engine", a.engine, "auto (io_uring, else POSIX; default), uring or posix")
              ->check(CLI::IsMember({"auto", "uring", "posix"})));
  out.Add(sub->add_option("--queue-depth", a.queue_depth, "reads in flight per I/O thread (io_uring; default 1 buffered, 16 with O_DIRECT)")
              ->check(CLI::Range(uint64_t{1}, uint64_t{4096})));
  out.Add(sub->add_flag("--odirect", a.odirect, "O_DIRECT reads (same as reader.odirect: true)"));
}

// Faults, and how long ranks and reads wait.
void RegisterWaitOptions(CLI::App* sub, RunCommandArgs& a, ForwardedRunOptions& out) {
  out.Add(sub->add_option("--inject", a.o.inject, "inject faults into the training reads, for tests and demos: RULE[;RULE...], "
                                                 "RULE = short|eagain|eio|delay[:every=N,after=N,count=N,file=GLOB,offset=A-B,us=N,ms=N] "
                                                 "(docs/faults.md); the run is then INVALID")
              ->check(CheckInjectRules));
  out.Add(sub->add_option("--collective-timeout", a.collective_timeout,
                          "seconds any rank waits in a collective (step barrier, reductions) before the job ends naming the "
                          "rank(s) and host(s) that did not arrive (default 1800; 0: forever)")
              ->check(NonNegativeNumber()));
  out.Add(sub->add_option("--step-barrier", a.step_barrier,
                          "how each step's agreement travels between ranks: flat (one allreduce), hierarchical (within each "
                          "host, then across hosts) or auto (hierarchical with several hosts and several ranks on one; default)")
              ->check(CLI::IsMember({"auto", "flat", "hierarchical"})));
  out.Add(sub->add_option("--io-timeout", a.o.io_timeout,
                          "seconds an accelerator waits for its batch without one of its reads completing before the run "
                          "fails naming the read (a storage that stopped answering; default 600; 0: wait forever)")
              ->check(NonNegativeNumber()));
}

// What served the bytes and what is measured about them: the page cache, verification, residency, time series.
void RegisterMeasurementOptions(CLI::App* sub, RunCommandArgs& a, ForwardedRunOptions& out) {
  out.Add(sub->add_option_function<std::string>(
                          "--cache", [&a](const std::string& v) { a.o.cache = *ParseCacheMode(v); },
                          "client page cache (default: as the emulated DLIO: with --rules v3.0 the ranks on rank 0's host drop "
                          "it before every epoch, as its DLIO does; upstream keeps it): keep, drop (evict the dataset's files before the run and "
                          "before every epoch), drop-once (before the run only: epoch 1 cold, later ones show what the cache "
                          "holds) or direct (O_DIRECT reads)")
              ->check(CLI::IsMember({"keep", "drop", "drop-once", "direct"})));
  out.Add(sub->add_flag("--drop-system-caches", a.o.drop_system_caches,
                        "with --cache drop/drop-once: also sync and write 3 to /proc/sys/vm/drop_caches, once per host (root)"));
  // Alone, --verify checks every byte, as checkpoint's and iobench's --verify do; a fraction checks part.
  out.Add(
      sub->add_option("--verify", a.o.verify,
                      "check every byte of each sample's payload against the dataset's pattern, or this fraction of "
                      "it (0-1) (needs datagen --content verifiable); a mismatch fails the run naming file and offset")
          ->expected(0, 1)
          ->default_str("1")
          ->check(CLI::Range(0.0, 1.0))
          ->option_text("[FRACTION]"));
  out.Add(sub->add_option_function<std::string>(
                          "--residency", [&a](const std::string& v) { a.o.residency = v == "sample"; },
                          "sample (default): the I/O threads look up the page-cache residency of about 512 reads per "
                          "accelerator and epoch just before reading them (cachestat, else a mincore window; "
                          "feedrate.epochs[].resident_fraction); off: no probe")
              ->check(CLI::IsMember({"sample", "off"})));
  out.Add(sub->add_option("--io-thread-policy", a.o.io_thread_policy,
                          "nice (default): the I/O threads run at nice +10, so the copies they do on a busy client do not "
                          "delay the accelerator threads' wake-ups (compute deadlines, step barriers) that the metrics time; "
                          "idle: SCHED_IDLE, the strongest (they run only when nothing else wants a CPU); normal: as every "
                          "other thread (on a client shared with other work)")
              ->transform(Choices<IoThreadPolicy>(
                  {{"idle", IoThreadPolicy::kIdle}, {"nice", IoThreadPolicy::kNice}, {"normal", IoThreadPolicy::kNormal}})),
          [&a] { return std::string(Name(a.o.io_thread_policy)); });
  out.Add(sub->add_option("--timeseries-interval", a.o.timeseries_interval,
                          "seconds between time-series samples in timeseries.csv (default 1; 0: none)")
              ->check(NonNegativeNumber()));
}

// Where a batch must land before it counts (host, pinned or GPU memory) and how it gets there.
void RegisterDeviceOptions(CLI::App* sub, RunCommandArgs& a, ForwardedRunOptions& out) {
  out.Add(sub->add_option("--accelerator-memory", a.o.accelerator_memory,
                          "where a batch must be before it counts as delivered: host (default: the reads' own memory), pinned "
                          "(page-locked host memory, cuMemHostAlloc) or device (each accelerator's GPU memory: cuFile reads (--gds) or "
                          "reads into pinned buffers, then cuMemcpyHtoDAsync on a stream per accelerator; copy time the compute "
                          "did not hide is stall). pinned and device load the CUDA driver at run time (docs/gpu.md)")
              ->transform(Choices<AcceleratorMemory>({{"host", AcceleratorMemory::kHost},
                                                      {"pinned", AcceleratorMemory::kPinned},
                                                      {"device", AcceleratorMemory::kDevice}})),
          [&a] { return std::string(Name(a.o.accelerator_memory)); });
  out.Add(sub->add_option("--gds", a.o.gds,
                          "with --accelerator-memory device: on = GPUDirect Storage, cuFileRead from the O_DIRECT files straight "
                          "into each accelerator's GPU memory (needs --odirect and libcufile.so.0); off = reads into pinned "
                          "memory and a copy; auto (default) = on where cuFile opens and takes the files, else off, the reason "
                          "in engine_detail (docs/gpu.md)")
              ->transform(Choices<GdsMode>({{"auto", GdsMode::kAuto}, {"on", GdsMode::kOn}, {"off", GdsMode::kOff}})),
          [&a] { return std::string(Name(a.o.gds)); });
  out.Add(sub->add_option("--gpus", a.o.gpus, "GPU ordinals the accelerators map onto, round-robin over all ranks' accelerators "
                                             "(default: every GPU the driver sees), e.g. --gpus 0,1")
              ->delimiter(',')
              ->check(NonNegativeNumber()));
}

// The rules' verdict the run must reach (mlpstorage's --closed/--open) and the client memory it counts.
void RegisterCategoryOptions(CLI::App* sub, RunCommandArgs& a, ForwardedRunOptions& out) {
  out.Add(sub->add_option("--client-host-memory-in-gb", a.o.client_memory_gib,
                          "memory per client host the rules' dataset-size check counts, GiB (mlpstorage's; default: each host's "
                          "MemTotal)")
              ->check(PositiveNumber()));
  auto* closed = sub->add_flag("--closed", a.closed, "refuse to start unless the run is CLOSED by its edition's rules "
                                                     "(mlpstorage's; --allow-invalid-params runs it anyway)");
  out.Add(closed);
  out.Add(sub->add_flag("--open", a.open, "refuse to start when the run is INVALID by its edition's rules (mlpstorage's)")->excludes(closed));
  out.Add(sub->add_flag("--allow-invalid-params", a.o.allow_invalid_params,
                        "with --closed/--open: run even when the rules' verdict is below it (the verdict is still recorded)"));
}

// What the run says while it goes, and the live metrics it serves.
void RegisterProgressOptions(CLI::App* sub, RunCommandArgs& a) {
  sub->add_flag("--quiet,-q", a.o.quiet, "no progress output (the result is still printed)");
  sub->add_flag("--json-events", a.o.json_events, "progress (each second), epochs and the result as JSON lines on stdout");
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

}  // namespace

void RegisterForwardableRunOptions(CLI::App* sub, RunCommandArgs& a, ForwardedRunOptions& out) {
  RegisterReadingOptions(sub, a, out);
  RegisterWaitOptions(sub, a, out);
  RegisterMeasurementOptions(sub, a, out);
  RegisterDeviceOptions(sub, a, out);
  RegisterCategoryOptions(sub, a, out);
}

void RegisterRunOnlyOptions(CLI::App* sub, RunCommandArgs& a) {
  auto* per_rank = sub->add_option("--accelerators,-n", a.o.accelerators, "emulated accelerators per rank (threads)")
                       ->check(CLI::Range(uint64_t{1}, uint64_t{4096}));
  sub->add_option("--num-accelerators", a.total_accelerators,
                  "mlpstorage's spelling: accelerators in the whole job, split evenly over the ranks (excludes -n)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20))
      ->excludes(per_rank);
  sub->add_option("--results-dir", a.o.results_dir, "where results go (default feedrate-results/<timestamp>_<workload>)");
  sub->add_option("--loops", a.loops, "runs back to back, each its own results folder (mlpstorage's; a submission has "
                                      "6: 1 warm-up + 5)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000}));
  RegisterProgressOptions(sub, a);
  a.mlperf.Register(sub);
  a.launch.Register(sub);
}

std::vector<std::string> RunOverrides(const RunCommandArgs& a) {
  auto overrides = a.w.Overrides();
  if (a.keep_open) overrides.push_back("feedrate.keep_files_open=true");
  if (!a.order.empty()) overrides.push_back("feedrate.order=" + a.order);
  if (!a.engine.empty()) overrides.push_back("feedrate.engine=" + a.engine);
  if (a.queue_depth > 0) overrides.push_back("feedrate.queue_depth=" + std::to_string(a.queue_depth));
  if (a.odirect || a.o.cache == CacheMode::kDirect) overrides.push_back("reader.odirect=true");
  return overrides;
}

}  // namespace feedrate::cli
