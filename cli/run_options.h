// `feedrate run`'s option table, in one place: `run` registers all of it; `sweep` registers the part it forwards to
// every run it starts (the same names, checks and help) and passes on the values as they were given.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/launch.h"
#include "emulator/run/run.h"

namespace feedrate::cli {

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

// The run options a sweep forwards, once parsed: each option and how its value is written back as argv words.
class ForwardedRunOptions {
 public:
  // `text`: the value as run takes it, for options whose parsed result is not the given text (named choices
  // transformed into enums); empty: the result as given (a list joined by ',').
  void Add(CLI::Option* opt, std::function<std::string()> text = {});
  // The options given on this command line, as argv words for a child `feedrate run` (name, then value).
  std::vector<std::string> Argv() const;

 private:
  struct Entry {
    CLI::Option* opt;
    std::function<std::string()> text;
  };
  std::vector<Entry> entries_;
};

// Registers run's forwardable options on `sub`, bound to `a` (which must outlive parsing and `out`), and lists
// them in `out`: how the samples are read, faults and timeouts, the page cache and what is measured, where batches
// land, and the rules' category (--closed/--open). `run` and `sweep` both call this; sweep passes `out.Argv()` on.
void RegisterForwardableRunOptions(CLI::App* sub, RunCommandArgs& a, ForwardedRunOptions& out);

// Registers the options only `run` itself takes: accelerators per rank or in the job, the results folder, progress
// output, live metrics, --loops, the mlpstorage tree and the --hosts launch.
void RegisterRunOnlyOptions(CLI::App* sub, RunCommandArgs& a);

// The workload with the run's own switches as overrides (they are workload keys underneath).
std::vector<std::string> RunOverrides(const RunCommandArgs& a);

}  // namespace feedrate::cli
