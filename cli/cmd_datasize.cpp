// `feedrate datasize`: the minimum dataset for a workload under the mlpstorage v2.0 rule.
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "emulator/validity.h"
#include "loader/config/workload_config.h"

namespace feedrate::cli {
namespace {

struct DatasizeArgs {
  double client_memory_gib = 0;
  uint64_t clients = 1;
  uint64_t accelerators = 1;
  bool json = false;
};

}  // namespace

Runner AddDatasize(CLI::App& app) {
  auto* sub = app.add_subcommand("datasize", "minimum num_files_train per the mlpstorage v2.0 rule");
  auto w = std::make_shared<WorkloadArgs>();
  auto a = std::make_shared<DatasizeArgs>();
  w->Register(sub, false);
  sub->add_option("--client-memory-gib", a->client_memory_gib, "memory per client host, GiB")
      ->required()
      ->check(CLI::PositiveNumber);
  sub->add_option("--clients", a->clients, "client hosts")->check(CLI::PositiveNumber);
  sub->add_option("--accelerators", a->accelerators, "emulated accelerators in total")->check(CLI::PositiveNumber);
  sub->add_flag("--json", a->json, "print JSON");
  return [=] {
    WorkloadConfig c = LoadWorkload(w->workload, w->Overrides());
    // mlpstorage rules.calculate_training_data_size (v2.0), shared with the runs' rule checks.
    double total_mem = a->client_memory_gib * 1073741824.0 * static_cast<double>(a->clients);
    const DatasetMinimum min = TrainingDatasetMinimum(c, total_mem, a->accelerators);
    const double by_memory = static_cast<double>(min.by_memory), by_steps = static_cast<double>(min.by_steps);
    const double files = static_cast<double>(min.files);
    double bytes = files * static_cast<double>(c.num_samples_per_file) * c.record_length;
    if (a->json) {
      nlohmann::json j = {{"workload", c.name},
                          {"num_files_train", static_cast<uint64_t>(files)},
                          {"files_by_memory", static_cast<uint64_t>(by_memory)},
                          {"files_by_steps", static_cast<uint64_t>(by_steps)},
                          {"dataset_bytes", bytes},
                          {"dataset_GiB", bytes / 1073741824.0},
                          {"client_memory_GiB_total", total_mem / 1073741824.0},
                          {"accelerators", a->accelerators}};
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s: num_files_train = %.0f (%.2f GiB of data)\n", c.name.c_str(), files, bytes / 1073741824.0);
      std::printf("  memory rule: 5 x %.0f GiB client memory -> %.0f files\n", total_mem / 1073741824.0, by_memory);
      std::printf("  steps rule:  500 steps x %llu accelerators x batch %llu -> %.0f files\n",
                  static_cast<unsigned long long>(a->accelerators), static_cast<unsigned long long>(c.batch_size),
                  by_steps);
      std::printf("generate with: feedrate datagen -w %s --data-dir DIR --param dataset.num_files_train=%.0f\n",
                  w->workload.c_str(), files);
    }
    return 0;
  };
}

}  // namespace feedrate::cli
