// `feedrate sweep`: its options and what it prints; the search is emulator/sweep/sweep.h, each point's run a child
// process started by emulator/sweep/sweep_launch.h.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "cli/commands.h"
#include "loader/util/dlio_edition.h"
#include "loader/pipeline/sampler.h"
#include "cli/launch.h"
#include "cli/run_options.h"
#include "emulator/host/sysinfo.h"
#include "emulator/results/results.h"
#include "emulator/run/run.h"
#include "emulator/sweep/sweep.h"
#include "emulator/sweep/sweep_launch.h"
#include "loader/config/workload_config.h"
#include "loader/io/fault_injection.h"
#include "loader/io/safe_file.h"

namespace feedrate::cli {
namespace {

struct SweepArgs {
  SweepOptions search;
  std::string mode = "threads";
  std::string hosts;     // h1,h2 (no ranks per host: the sweep places the ranks)
  std::string hostfile;  // or an OpenMPI hostfile
  std::string results_dir;
  std::shared_ptr<ResultsDirClaim> claim;  // the sweep's folder, held while it runs (each point's run claims its own subfolder)
  std::string mpirun = "mpirun --bind-to none";
  double ceiling_mib_per_s = 0;
  bool measure_ceiling = false;
};

// The argv every point's `run` gets beyond what the sweep chooses: the workload's overrides and rules, and run's
// forwarded options as given (run_options.h), with the page-cache mode the sweep chose when none was given.
std::vector<std::string> PointArgv(const WorkloadArgs& w, const RunCommandArgs& run,
                                   const ForwardedRunOptions& forwarded, const SweepCache& cache) {
  std::vector<std::string> v;
  for (const auto& p : w.params) v.insert(v.end(), {"--param", p});
  for (const auto& p : w.positional) v.push_back(p);
  if (!w.rules.empty()) v.insert(v.end(), {"--rules", w.rules});
  for (auto& word : forwarded.Argv()) v.push_back(std::move(word));
  if (!run.o.cache && cache.mode != "direct") v.insert(v.end(), {"--cache", cache.mode});
  return v;
}

void RegisterSweepOptions(CLI::App* sub, WorkloadArgs& w, SweepArgs& a, RunCommandArgs& run, ForwardedRunOptions& f) {
  w.Register(sub, true);
  sub->add_option("--min", a.search.min, "smallest accelerator count per host to try (default 1)")->check(PositiveNumber());
  sub->add_option("--max", a.search.max, "largest accelerator count per host to try (default: double until a point fails)");
  sub->add_option("--repeats", a.search.repeats, "runs per point; a point passes when all pass (default 1; 5 with "
                                                 "--closed, as a CLOSED submission has)")
      ->check(CLI::Range(1, 100));
  sub->add_option("--mode", a.mode, "threads: accelerators as threads of one process per host (default); ranks: one MPI rank each")
      ->check(CLI::IsMember({"threads", "ranks"}));
  auto* hosts_opt = sub->add_option("--hosts", a.hosts, "h1,h2,...: run on these hosts through mpirun, equal accelerators "
                                                        "per host (the sweep places the ranks: no h:ranks here)");
  sub->add_option("--hostfile", a.hostfile, "an OpenMPI hostfile naming the hosts (as --hosts; slots are ignored)")
      ->excludes(hosts_opt);
  sub->add_option("--mpirun", a.mpirun, "launcher for --mode ranks or --hosts (default \"mpirun --bind-to none\")");
  sub->add_option("--results-dir", a.results_dir, "where every run's results and sweep.json go (default feedrate-results/<timestamp>_sweep_<workload>)");
  sub->add_flag("--ceiling", a.measure_ceiling, "first measure the storage's read MiB/s with feedrate iobench on the "
                                               "largest training file (reader.transfer_size blocks, 3 s per cell)");
  sub->add_option("--ceiling-mib-s", a.ceiling_mib_per_s, "the storage's read MiB/s (e.g. from feedrate iobench), to tell a storage limit from others");
  RegisterForwardableRunOptions(sub, run, f);
}

void PrintSweepRun(const SweepRun& r) {
  std::printf("sweep: %4llu accelerators, run %d: %s  AU %6.2f%%  %9.1f MiB/s  client CPU %3.0f%%  stall p99 %.4f s\n",
              static_cast<unsigned long long>(r.accelerators), r.repeat,
              r.exit_code == 0 ? "pass" : r.exit_code == 3 ? "miss" : "ERROR", r.au_pct, r.read_mib_per_s,
              100 * r.cpu_utilisation, r.stall_p99);
  if (!r.error.empty()) std::printf("sweep:      %s\n", r.error.c_str());
  std::fflush(stdout);
}

// Writes sweep.json and prints the answer, its limit and validity; the command's exit code.
int ReportSweep(const SweepResult& result, const SweepArgs& args, bool ceiling_measured, const WorkloadConfig& cfg,
                const WorkloadArgs& w, const SweepCache& cache) {
  nlohmann::json doc = SweepJson(result, args.search, args.ceiling_mib_per_s, cache);
  doc["workload"] = cfg.name;
  doc["workload_source"] = cfg.source;
  doc["mode"] = args.mode;
  doc["au_bar_pct"] = cfg.au * 100;
  doc["data_dir"] = w.data_dir;
  doc["storage_ceiling_source"] = args.ceiling_mib_per_s <= 0 ? "none"
                                  : ceiling_measured          ? "feedrate iobench (ceiling/iobench.json)"
                                                              : "--ceiling-mib-s";
  Status st = WriteFileSafely(args.results_dir + "/sweep.json", doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (!st.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", st.ToString().c_str());
    return kExitError;
  }
  if (result.stop_code != 0) {
    std::fprintf(stderr, "feedrate: error: sweep stopped: %s\n", result.stop_reason.c_str());
    return result.stop_code == 130 ? kExitInterrupted : kExitError;
  }
  const auto& b = doc["bottleneck"];
  std::printf("accelerators supported: %llu%s (%s, AU bar %.0f%%, %d run(s) per point)\n",
              static_cast<unsigned long long>(result.accelerators_supported), result.capped ? " or more" : "",
              cfg.name.c_str(), cfg.au * 100, args.search.repeats);
  std::printf("limit: %s: %s\n", b["limit"].get<std::string>().c_str(), b["explanation"].get<std::string>().c_str());
  if (result.dataset_limited) std::printf("dataset: %s\n", args.search.dataset_why.c_str());
  std::printf("cache: %s\n", doc["cache"]["explanation"].get<std::string>().c_str());
  std::printf("validity: %s\n", doc["validity"]["category"].get<std::string>().c_str());
  for (const auto& why : doc["validity"]["reasons"]) std::printf("  %s\n", why.get<std::string>().c_str());
  std::printf("results: %s/sweep.json\n", args.results_dir.c_str());
  return result.accelerators_supported > 0 ? kExitPass : kExitMissedAu;
}

// The page-cache state every point starts from. Unless --cache says otherwise each point starts cold
// (drop-once: every rank evicts its files before the run), so one point's reads cannot serve the next; O_DIRECT
// runs bypass the cache; a dataset on tmpfs/ramfs is memory by nature and is left as it is.
SweepCache ChooseSweepCache(const WorkloadConfig& cfg, const RunCommandArgs& run) {
  SweepCache c;
  c.fs_type = FileSystemType(cfg.data_folder);
  c.in_memory = IsMemoryFileSystem(c.fs_type);
  const bool odirect = cfg.odirect || run.odirect || run.o.cache == CacheMode::kDirect;
  c.mode = odirect ? "direct" : run.o.cache ? CacheModeName(*run.o.cache) : c.in_memory ? "keep" : "drop-once";
  if (c.in_memory) {
    std::printf("sweep: the dataset is on %s: its bytes are served from memory by nature (no cache state to reset)\n",
                c.fs_type.c_str());
  } else {
    std::printf("sweep: page cache: %s\n", c.mode == "drop-once" ? "every point starts cold (--cache drop-once)"
                                          : c.mode == "direct"  ? "bypassed (O_DIRECT)"
                                          : c.mode == "drop"    ? "dropped before every epoch (--cache drop)"
                                                                : "kept between points (--cache keep): points may read what earlier ones left cached");
  }
  return c;
}

// The largest per-host count whose runs the dataset can serve (every accelerator its steps: the AU window's, or
// train.total_training_steps), by the emulated DLIO's arithmetic (Sampler::EpochSteps), and why: a sweep that
// reaches it answers "N or more" naming the dataset, where it stopped with an error and lost its answer.
void DatasetBound(const WorkloadConfig& cfg, SweepOptions* o) {
  SamplerConfig sc;
  sc.num_files = cfg.num_files_train;
  sc.samples_per_file = cfg.num_samples_per_file;
  sc.batch_size = cfg.batch_size;
  sc.data_loader = cfg.data_loader;
  sc.order = cfg.order;
  sc.presharded = Traits(cfg.rules).presharded_round_robin;
  const uint64_t window = cfg.metric_exclude_start_steps + cfg.metric_exclude_end_steps + 1;
  const uint64_t need = cfg.total_training_steps > 0 ? std::max<uint64_t>(cfg.total_training_steps, window) : window;
  uint64_t best = 0;
  for (uint64_t n = 1; n <= kSweepHardMax; ++n) {
    sc.world = n * o->hosts;
    if (Sampler::EpochSteps(sc) < need) break;
    best = n;
  }
  if (best >= kSweepHardMax) return;
  o->dataset_max = best;
  const uint64_t next = (best + 1) * o->hosts, spf = std::max<uint64_t>(1, sc.samples_per_file);
  const uint64_t per = (need * sc.batch_size + spf - 1) / spf;  // samples' files one accelerator needs
  const uint64_t files = sc.presharded ? per * next : (need * sc.batch_size * next + spf - 1) / spf;
  o->dataset_why = "the dataset's " + std::to_string(cfg.num_files_train) + " files serve at most " +
                   std::to_string(best * o->hosts) + " accelerators the " + std::to_string(need) + " steps of batch " +
                   std::to_string(cfg.batch_size) + " a run needs (" +
                   (cfg.total_training_steps > 0 ? "train.total_training_steps" : "the AU window") + "); " +
                   std::to_string(next) + " would need " + std::to_string(files) + " files (dataset.num_files_train)";
}

// The workload (validated once, not in every run), the hosts and the results directory; false after an error.
bool PrepareSweep(const WorkloadArgs& w, SweepArgs& args, std::optional<WorkloadConfig>* cfg,
                  std::vector<std::string>* host_names) {
  *cfg = LoadWorkloadOrPrint(w.workload, w.Overrides());
  if (!*cfg) return false;
  if ((*cfg)->on_s3()) {
    std::fprintf(stderr, "feedrate: error: %s: sweep searches file-system datasets (--data-dir); for S3, run "
                         "`feedrate run --storage s3://...` with growing --accelerators\n", (*cfg)->source.c_str());
    return false;
  }
  if (args.hosts.find(':') != std::string::npos) {
    std::fprintf(stderr, "feedrate: error: sweep --hosts %s: give host names only (h1,h2): the sweep places the ranks "
                         "itself (--mode); h:ranks is run's --hosts\n", args.hosts.c_str());
    return false;
  }
  try {
    LaunchArgs where;
    where.hosts = args.hosts;
    where.hostfile = args.hostfile;
    for (const auto& h : where.Hosts()) host_names->push_back(h.name);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "feedrate: error: %s\n", e.what());
    return false;
  }
  args.search.hosts = host_names->empty() ? 1 : host_names->size();
  DatasetBound(**cfg, &args.search);
  auto claim = ClaimResultsDir(ResultsDirOr(args.results_dir, "sweep_" + (*cfg)->name), FolderKind(args.results_dir));
  if (!claim.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", claim.status().ToString().c_str());
    return false;
  }
  if (Status st = claim->Commit(); !st.ok()) {  // (the sweep's checks are behind it: its points run in subfolders)
    std::fprintf(stderr, "feedrate: error: %s\n", st.ToString().c_str());
    return false;
  }
  args.claim = std::make_shared<ResultsDirClaim>(std::move(*claim));
  args.results_dir = args.claim->dir();
  return true;
}

}  // namespace

Runner AddSweep(CLI::App& app) {
  auto* sub = app.add_subcommand("sweep", "find the largest accelerator count that meets the AU bar; exit 0 with an "
                                          "answer, 3 when the minimum fails, 2 on error");
  auto w = std::make_shared<WorkloadArgs>();
  auto a = std::make_shared<SweepArgs>();
  auto run = std::make_shared<RunCommandArgs>();
  auto f = std::make_shared<ForwardedRunOptions>();
  RegisterSweepOptions(sub, *w, *a, *run, *f);
  const CLI::Option* repeats = sub->get_option("--repeats");
  return [=] {
    SweepArgs args = *a;
    if (run->closed && repeats->count() == 0) args.search.repeats = 5;
    std::optional<WorkloadConfig> cfg;
    std::vector<std::string> host_names;
    if (!PrepareSweep(*w, args, &cfg, &host_names)) return kExitError;
    const SweepCache cache = ChooseSweepCache(*cfg, *run);
    SweepPointLauncher point{SelfExe(),        args.mode,
                             w->workload,      w->data_dir,
                             args.results_dir, SplitWords(args.mpirun, ' '),
                             host_names,       PointArgv(*w, *run, *f, cache),
                             args.search.hosts};
    const bool measure = args.measure_ceiling && args.ceiling_mib_per_s <= 0;
    if (measure) {
      const Result<double> ceiling = MeasureStorageCeiling(point.exe, *cfg, cache.mode == "direct", args.results_dir);
      if (ceiling.ok()) {
        args.ceiling_mib_per_s = *ceiling;
        std::printf("sweep: storage ceiling %.1f MiB/s (feedrate iobench)\n", args.ceiling_mib_per_s);
      } else {
        std::fprintf(stderr, "feedrate: warning: no storage ceiling: %s\n", ceiling.status().ToString().c_str());
      }
    }
    args.search.on_run = PrintSweepRun;
    SweepResult result = RunSweep(args.search, [&](uint64_t total, int repeat) { return point.Run(total, repeat); });
    return ReportSweep(result, args, measure, *cfg, *w, cache);
  };
}

}  // namespace feedrate::cli
