// `feedrate dlio`: DLIO's command line (Hydra's words), so mlpstorage or a user's DLIO script runs Feedrate in DLIO's
// place (the `dlio_benchmark` launcher); writes DLIO's files beside Feedrate's own (docs/mlpstorage.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "datagen/generator.h"
#include "emulator/checkpoint/checkpoint.h"
#include "emulator/host/comm.h"
#include "emulator/results/dlio_output.h"
#include "emulator/run/run.h"
#include "emulator/training/interrupt.h"

namespace feedrate::cli {

namespace {

constexpr const char* kUsage =
    "usage: feedrate dlio workload=NAME [++workload.KEY=VALUE ...] [++hydra.run.dir=DIR] [++hydra.output_subdir=SUB] "
    "[--config-dir=DIR]\n"
    "DLIO's command line: NAME is DIR/workload/NAME.yaml when --config-dir holds it, else a built-in workload; the "
    "workflow (generate_data, train, or checkpoint without train) is the workload's; every output goes to "
    "hydra.run.dir. Under mpirun each rank emulates one accelerator (or one checkpointing rank), as DLIO's "
    "processes do.\n";

// "++key=value", "+key=value" or "key=value" as key and value; false when the word has no '='.
bool SplitOverride(const std::string& word, std::string* key, std::string* value) {
  const size_t eq = word.find('=');
  if (eq == std::string::npos) return false;
  size_t plus = 0;
  while (plus < 2 && plus < eq && word[plus] == '+') ++plus;
  *key = word.substr(plus, eq - plus);
  *value = word.substr(eq + 1);
  return true;
}

// Takes one Hydra word; an error message when it is not one `feedrate dlio` knows.
std::string TakeWord(const std::string& word, DlioInvocation* inv, std::vector<std::string>* overrides) {
  std::string key, value;
  if (!SplitOverride(word, &key, &value)) return "'" + word + "' is not KEY=VALUE";
  if (key == "workload") {
    inv->workload = value;
    inv->task_overrides.push_back(word);
  } else if (key.starts_with("workload.")) {
    overrides->push_back(key.substr(9) + "=" + value);
    inv->task_overrides.push_back(word);
  } else if (key == "hydra.run.dir") {
    inv->run_dir = value;
    inv->hydra_overrides.push_back(word);
  } else if (key == "hydra.output_subdir") {
    inv->output_subdir = value == "null" ? "" : value;
    inv->hydra_overrides.push_back(word);
  } else if (key.starts_with("hydra.job_logging") || key.starts_with("hydra.hydra_logging") || key == "hydra.verbose" ||
             key.starts_with("hydra/")) {
    inv->hydra_overrides.push_back(word);  // Hydra's own logging: nothing of Feedrate's output changes
  } else {
    return "'" + word + "': only workload=, workload.* and hydra.run.dir/hydra.output_subdir are taken";
  }
  return "";
}

struct ParsedDlio {
  DlioInvocation inv;
  std::vector<std::string> overrides;  // Feedrate's KEY=VALUE (workload.* without the prefix)
  bool help = false;
};

// DLIO's arguments; throws ConfigError naming the argument it cannot take.
ParsedDlio ParseDlioArgs(const std::vector<std::string>& args) {
  ParsedDlio p;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      p.help = true;
    } else if (a.starts_with("--config-dir=")) {
      p.inv.config_dirs.push_back(a.substr(13));
    } else if (a == "--config-dir" || a == "-cd") {
      if (i + 1 == args.size()) throw ConfigError("feedrate dlio: " + a + " needs a folder");
      p.inv.config_dirs.push_back(args[++i]);
    } else if (a.starts_with("-")) {
      throw ConfigError("feedrate dlio: unknown option '" + a + "' (DLIO's are --config-dir; see feedrate dlio --help)");
    } else if (std::string why = TakeWord(a, &p.inv, &p.overrides); !why.empty()) {
      throw ConfigError("feedrate dlio: " + why);
    }
  }
  if (!p.help && p.inv.workload.empty()) throw ConfigError("feedrate dlio: workload=NAME is required (DLIO's workload YAML)");
  return p;
}

// DIR/workload/NAME.yaml from the first --config-dir holding it, as Hydra searches; else the built-in NAME.
std::string ResolveWorkload(DlioInvocation* inv) {
  for (const auto& dir : inv->config_dirs) {
    const std::string path = dir + "/workload/" + inv->workload + ".yaml";
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return inv->workload_source = path;
  }
  inv->workload_source = "built-in";
  return inv->workload;
}

// Hydra's default run folder (DLIO's configs/config.yaml): hydra_log/<model>/<date>-<time>.
std::string DefaultRunDir(const WorkloadConfig& cfg) {
  const std::string t = DlioTime(UnixNow());  // 2026-12-05T03:29:23.576840
  return "hydra_log/" + (cfg.model_name.empty() ? cfg.name : cfg.model_name) + "/" + t.substr(0, 10) + "-" +
         t.substr(11, 2) + "-" + t.substr(14, 2) + "-" + t.substr(17, 2);
}

// Rank 0 creates the run folder and writes the Hydra folder before the workflow, as Hydra does. Collective.
bool PrepareRunDir(const WorkloadConfig& cfg, DlioInvocation* inv, Comm& comm) {
  if (inv->run_dir.empty()) inv->run_dir = comm.Broadcast(comm.root() ? DefaultRunDir(cfg) : "", 0);
  Status st;
  if (comm.root()) {
    std::error_code ec;
    std::filesystem::create_directories(inv->run_dir, ec);
    st = ec ? Status::IoError("cannot create hydra.run.dir " + inv->run_dir + ": " + ec.message())
            : WriteDlioHydraFolder(*inv, cfg.tree);
  }
  const std::string msg = comm.AgreeFirstError(st);
  if (!msg.empty() && comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", msg.c_str());
  return msg.empty();
}

// workflow.generate_data: every rank writes its share; rank 0 writes DLIO's datagen log. Collective.
int GenerateData(const WorkloadConfig& cfg, DlioInvocation* inv, Comm& comm) {
  const double start = UnixNow();
  DatagenOptions o;
  o.threads = comm.size() > 1 ? 1 : std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  const int code = GenerateOnRanks(cfg, o, comm);
  if (code != kExitPass || !comm.root()) return code;
  inv->earlier_log = DlioDatagenLogLines(comm.size(), start, start, UnixNow());  // a training run appends to them
  const Status st = WriteDlioLog(inv->run_dir, inv->earlier_log);
  if (st.ok()) return code;
  std::fprintf(stderr, "feedrate: error: %s\n", st.ToString().c_str());
  return kExitError;
}

// workflow.generate_data (Feedrate's own `run` ignores it: `feedrate datagen` generates).
bool GeneratesData(const WorkloadConfig& cfg) {
  const YAML::Node n = cfg.tree["workflow"]["generate_data"];
  try {
    return n.IsScalar() && n.as<bool>();
  } catch (const YAML::Exception&) {
    throw ConfigError(cfg.source + ": workflow.generate_data must be true or false, not '" + n.Scalar() + "'");
  }
}

// workflow.checkpoint without training (the llama3 workloads): `feedrate checkpoint`'s write and read phases, the
// workload's counts and folder, DLIO's files too. Collective.
int Checkpoint(const WorkloadConfig& cfg, const DlioInvocation& inv, const std::string& command_line, Comm& comm) {
  CheckpointOptions o;
  o.results_dir = inv.run_dir;
  o.version = FEEDRATE_VERSION;
  o.command_line = command_line;
  o.dlio = &inv;
  return RunCheckpoint(cfg, o, comm);
}

int ExecuteDlio(ParsedDlio p, int* argc, char*** argv) {
  if (p.help) {
    std::printf("%s", kUsage);
    return kExitPass;
  }
  const std::string workload = ResolveWorkload(&p.inv);
  const std::string command_line = JoinCommandLine(*argc, *argv);
  Comm comm(argc, argv);
  InstallInterruptHandlers();
  const std::optional<WorkloadConfig> cfg = LoadJobWorkload(workload, p.overrides, comm);
  if (!cfg) return kExitError;
  const bool generate = GeneratesData(*cfg), checkpoint = cfg->do_checkpoint && !cfg->do_train;
  if (!cfg->do_train && !generate && !checkpoint) {
    if (comm.root()) {
      std::fprintf(stderr, "feedrate: error: %s: workflow.generate_data, workflow.train and workflow.checkpoint are all "
                           "off: nothing to run\n", cfg->source.c_str());
    }
    return kExitError;
  }
  if (!PrepareRunDir(*cfg, &p.inv, comm)) return kExitError;
  if (generate) {
    const int code = GenerateData(*cfg, &p.inv, comm);
    if (code != kExitPass || (!cfg->do_train && !checkpoint)) return code;
  }
  if (checkpoint) return Checkpoint(*cfg, p.inv, command_line, comm);
  RunOptions o;
  o.results_dir = p.inv.run_dir;
  o.version = FEEDRATE_VERSION;
  o.command_line = command_line;
  o.dlio = &p.inv;
  const int code = RunTraining(*cfg, o, comm);
  return code == kExitMissedAu ? kExitPass : code;  // DLIO ends 0 whether the AU bar was met or not
}

}  // namespace

Runner AddDlio(CLI::App& app, int* argc, char*** argv) {
  auto* sub = app.add_subcommand("dlio", "DLIO's command line (workload=NAME ++workload.k=v ++hydra.run.dir=DIR "
                                         "--config-dir=DIR): run Feedrate where DLIO runs, writing DLIO's files too");
  sub->prefix_command();
  sub->set_help_flag();
  return [=] {
    try {
      return ExecuteDlio(ParseDlioArgs(sub->remaining()), argc, argv);
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "feedrate: error: %s\n", e.what());
      return kExitError;
    }
  };
}

}  // namespace feedrate::cli
