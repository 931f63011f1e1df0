// `feedrate run`: emulate accelerators training on a dataset and report AU (see emulator/run/run.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "cli/launch.h"
#include "cli/run_options.h"
#include "emulator/host/comm.h"
#include "emulator/results/mlperf_record.h"
#include "emulator/results/validity.h"
#include "emulator/run/run.h"
#include "emulator/training/interrupt.h"
#include "loader/io/fault_injection.h"
#include "loader/util/choices.h"

namespace feedrate::cli {

namespace {

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
  auto forwardable = std::make_shared<ForwardedRunOptions>();  // (sweep's list; run reads the parsed values)
  a->w.Register(sub, true, true);
  RegisterRunOnlyOptions(sub, *a);
  RegisterForwardableRunOptions(sub, *a, *forwardable);
  return [=] { return ExecuteRun(*a, argc, argv); };
}

}  // namespace feedrate::cli
