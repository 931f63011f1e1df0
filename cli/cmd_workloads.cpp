// `feedrate workloads`: the built-in workloads with what each asks of storage per emulated accelerator.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "loader/util/exit_codes.h"
#include "emulator/checkpoint/checkpoint_layout.h"
#include "loader/config/workload_config.h"

namespace feedrate::cli {
namespace {

// The first comment line of a built-in file names its source (config file and version).
std::string Source(std::string_view yaml) {
  if (yaml.substr(0, 2) != "# ") return "";
  return std::string(yaml.substr(2, yaml.find('\n') - 2));
}

// "mlcommons/storage@0b42eb5" from the source line: the repository it names and the commit, when given.
std::string ShortSource(const std::string& source) {
  std::string repo;
  for (const char* r : {"mlcommons/storage", "argonne-lcf/dlio_benchmark", "mlcommons/DLIO_local_changes"}) {
    if (source.find(r) != std::string::npos) repo = r;
  }
  if (repo.empty()) return "-";
  const size_t at = source.find(" @");
  return at == std::string::npos ? repo : repo + "@" + source.substr(at + 2, 7);
}

}  // namespace

Runner AddWorkloads(CLI::App& app) {
  auto* sub = app.add_subcommand("workloads", "list the built-in workloads and their per-accelerator demand");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print JSON");
  return [=] {
    nlohmann::json out = nlohmann::json::array();
    if (!*json) {
      std::printf("%-18s %-14s %-10s %12s %6s %10s %5s %12s %10s  %s\n", "workload", "format", "loader", "record B", "batch",
                  "compute s", "AU %", "samples/s", "MiB/s", "source");
    }
    std::vector<std::pair<std::string, LlmModel>> checkpoint_workloads;
    for (const auto& [name, text] : BuiltinWorkloads()) {
      WorkloadConfig c = LoadWorkload(name, {});
      if (!c.do_train) {  // checkpoint-only (llama3): listed below with their checkpoint sizes
        if (auto m = LlmModelFromConfig(c); m.ok()) checkpoint_workloads.emplace_back(name, *m);
        continue;
      }
      // Demand at 100% AU: one batch per computation_time (DLIO's nominal record size, as the reference tables).
      const double samples_per_s = c.computation_time.mean > 0 ? static_cast<double>(c.batch_size) / c.computation_time.mean : 0;
      const double mib_per_s = samples_per_s * c.record_length / 1048576.0;
      if (*json) {
        out.push_back({{"name", name},
                       {"source", Source(text)},
                       {"format", Name(c.format)},
                       {"data_loader", Name(c.data_loader)},
                       {"record_length_bytes", c.record_length},
                       {"record_length_bytes_stdev", c.record_length_stdev},
                       {"num_files_train", c.num_files_train},
                       {"num_samples_per_file", c.num_samples_per_file},
                       {"batch_size", c.batch_size},
                       {"computation_time_s", c.computation_time.mean},
                       {"au_bar", c.au},
                       {"samples_per_s_per_accelerator", samples_per_s},
                       {"mib_per_s_per_accelerator", mib_per_s}});
        continue;
      }
      std::printf("%-18s %-14s %-10s %12.0f %6llu %10.5g %5.0f %12.1f %10.1f  %s\n", name.c_str(), Name(c.format),
                  Name(c.data_loader), c.record_length, static_cast<unsigned long long>(c.batch_size),
                  c.computation_time.mean, 100 * c.au, samples_per_s, mib_per_s, ShortSource(Source(text)).c_str());
    }
    if (!*json) {
      std::printf("samples/s and MiB/s: what one emulated accelerator consumes at 100%% AU (batch / compute time)\n\n");
      std::printf("%-16s %16s %14s %5s %16s %18s\n", "checkpoint", "parameters", "TP x PP x DP", "ZeRO", "checkpoint GiB",
                  "largest rank GiB");
    }
    for (const auto& [name, m] : checkpoint_workloads) {
      const uint64_t world = m.tp * m.pp * std::max<uint64_t>(1, m.dp);
      const CheckpointTotals t = CheckpointTotalsFor(m, world);
      if (*json) {
        out.push_back({{"name", name}, {"kind", "checkpoint"}, {"parameters", NumParameters(m)}, {"closed_world", world},
                       {"tensor", m.tp}, {"pipeline", m.pp}, {"data", m.dp}, {"zero_stage", m.zero_stage},
                       {"checkpoint_bytes", t.bytes()}, {"largest_rank_bytes", t.largest_rank_bytes}});
        continue;
      }
      const std::string par = std::to_string(m.tp) + " x " + std::to_string(m.pp) + " x " + std::to_string(m.dp);
      std::printf("%-16s %16llu %14s %5d %16.1f %18.2f\n", name.c_str(), static_cast<unsigned long long>(NumParameters(m)),
                  par.c_str(), m.zero_stage, static_cast<double>(t.bytes()) / 1073741824.0,
                  static_cast<double>(t.largest_rank_bytes) / 1073741824.0);
    }
    if (*json) std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    if (!*json) std::printf("checkpoint sizes at the CLOSED world size (TP x PP x DP ranks), DLIO v2.0's layout: feedrate checkpoint\n");
    return kExitPass;
  };
}

}  // namespace feedrate::cli
