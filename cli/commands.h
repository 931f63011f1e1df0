// The `feedrate` subcommands; each registers its options on a CLI11 app and returns an exit code when run.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emulator/results/mlperf_record.h"
#include "loader/config/workload_config.h"
#include "loader/util/exit_codes.h"

namespace feedrate {
class Comm;
struct DatagenOptions;
}  // namespace feedrate

namespace feedrate::cli {

// Options every workload-driven subcommand shares: -w, --data-dir and overrides.
struct WorkloadArgs {
  std::string workload;
  std::string model, accelerator_type;  // mlpstorage's --model/--accelerator-type (resolved into `workload`)
  std::string data_dir;
  std::vector<std::string> params;     // --param key=value
  std::vector<std::string> params_list;  // mlpstorage's --params key=value ...
  std::vector<std::string> positional; // ++key=value, key=value
  std::string storage;                 // --storage s3://bucket/prefix
  std::string endpoint, region;        // --endpoint, --region (S3)
  bool virtual_host = false;           // --virtual-host (S3)
  std::string rules;                   // --rules: feedrate.rules, the rules edition whose DLIO is emulated
  // `storage`: also register --storage/--endpoint/--region/--virtual-host (commands that read or write datasets).
  // Registers the options and a final callback (the workload resolved, the location checked): a command using
  // WorkloadArgs sets no final_callback of its own.
  void Register(CLI::App* app, bool need_data_dir, bool storage = false);
  std::vector<std::string> Overrides() const;
  void ResolveWorkload();
  void CheckLocation() const;
};

// --mlperf-root ROOT --division --org --system (docs/mlpstorage.md): the tree a command writes its record into.
struct MlperfArgs {
  MlperfTree tree;
  void Register(CLI::App* app);
  // After parsing: --org and --system given with a root, plain names; the division defaults to open.
  void Check();
};

// A command's body run inside its record of an mlpstorage tree (emulator/results/mlperf_record.h): the record
// begun, `body` run on every rank (it returns the rank's exit code), the record finished (`processes`: its metadata's
// num_processes), the code agreed from rank 0. A record that cannot begin or finish is an error (exit 2), said on
// stderr. Collective.
int RunRecorded(const MlperfTree& tree, const MlperfRecord::Spec& spec, const WorkloadConfig& cfg, Comm& comm,
                int processes, const std::function<int(const MlperfRecord&)>& body);

// The workload with these overrides, or nullopt after printing the configuration error (one process: a job's ranks
// use LoadJobWorkload).
std::optional<WorkloadConfig> LoadWorkloadOrPrint(const std::string& workload, const std::vector<std::string>& overrides);

// The job's workload, agreed by every rank before any other collective: each rank loads it, then all learn whether
// every rank loaded the same resolved workload with the same build (job_start.h). nullopt after rank 0 printed the
// cause (a load error, or the ranks and hosts that differ); every rank returns alike, so none is left in a collective.
std::optional<WorkloadConfig> LoadJobWorkload(const std::string& workload, const std::vector<std::string>& overrides,
                                              const Comm& comm);

// A named-choice option's transformer: maps the names to enum values, and shows the names (not the enum's numbers,
// which for char-based enums are control characters) in --help.
template <typename E>
CLI::Validator Choices(const std::vector<std::pair<std::string, E>>& choices) {
  std::string names;
  for (const auto& [name, value] : choices) names += (names.empty() ? "" : ",") + name;
  return CLI::CheckedTransformer(std::map<std::string, E>(choices.begin(), choices.end())).description("{" + names + "}");
}

// "4k", "1m", "2g", "512" as bytes; CLI::ValidationError otherwise (never another exception).
uint64_t ParseBytes(const std::string& text);
// The same as a check: "" when `text` is a size ParseBytes takes, else why not.
std::string CheckBytes(const std::string& text);
// One rule for every number on the command line: the whole text is the number (no "abc", no "12x"), finite (no
// nan, no inf), not negative, not past 1e18, and whole where the option takes a whole number. "" or why not.
std::string CheckNumber(const std::string& text, bool whole);
// Adds CheckNumber to every option of `app` and its subcommands bound to a number (CLI11's FLOAT, INT and UINT):
// call once every command is added, before parsing. (CLI11 takes "nan" and "-3" where a Range or an int allow.)
void GuardNumericOptions(CLI::App& app);
// Before parsing: an option whose number is optional (run's --verify [FRACTION]) followed by an override (a word
// with '=': ++key=value, key=value) or by nothing becomes `--name=DEFAULT`, so the override stays one; any other
// next word is its value (a word that is no number is then refused naming the option).
// Rewrites argv[i] in place (the replacements live as long as the process).
void BareOptionalNumbers(const CLI::App& app, int argc, char** argv);
// CheckNumber's rule as a validator, and the same above zero (CLI11's own print DBL_MAX as the bound).
CLI::Validator NonNegativeNumber();
CLI::Validator PositiveNumber();
// Every --endpoint (run, datagen, sweep, iobench, inspect): a URL that carries a user:password is refused, its value
// never shown; credentials come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials only.
CLI::Validator NoCredentialInUrl();

// CLI11 check for --inject: "" when the rules parse, else the parser's message.
std::string CheckInjectRules(const std::string& rules);

// argv as one shell-quotable line (arguments with spaces or quotes in single quotes), for run manifests.
std::string JoinCommandLine(int argc, char** argv);

using Runner = std::function<int()>;
Runner AddDatagen(CLI::App& app, int* argc, char*** argv);
Runner AddRun(CLI::App& app, int* argc, char*** argv);
Runner AddCheckpoint(CLI::App& app, int* argc, char*** argv);
Runner AddDatasize(CLI::App& app, int* argc, char*** argv);
Runner AddInspect(CLI::App& app);
Runner AddIobench(CLI::App& app, int* argc, char*** argv);
Runner AddWorkloads(CLI::App& app);
Runner AddSweep(CLI::App& app);
Runner AddReport(CLI::App& app);
Runner AddDlio(CLI::App& app, int* argc, char*** argv);

// Every rank writes its share of the dataset; rank 0 prints the line. Collective; exit code (0 or 2).
int GenerateOnRanks(const WorkloadConfig& cfg, DatagenOptions o, Comm& comm);

}  // namespace feedrate::cli
