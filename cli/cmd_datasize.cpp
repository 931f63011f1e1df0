// `feedrate datasize`: the minimum dataset for a workload under the mlpstorage v3.0 rule.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "loader/util/exit_codes.h"
#include "emulator/checkpoint/checkpoint_layout.h"
#include "emulator/host/comm.h"
#include "emulator/results/mlperf_record.h"
#include "emulator/results/validity.h"
#include "loader/config/workload_config.h"

namespace feedrate::cli {
namespace {

struct DatasizeArgs {
  double client_memory_gib = 0;
  uint64_t clients = 1;
  uint64_t accelerators = 1;
  bool json = false;
};

// Checkpoint workloads: bytes per rank (largest and smallest writer), per checkpoint, and the free space the
// write phase needs (DLIO keeps every checkpoint it writes).
int CheckpointDatasize(const WorkloadConfig& c, uint64_t ranks, bool json) {
  auto m = LlmModelFromConfig(c);
  if (!m.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", m.status().ToString().c_str());
    return kExitError;
  }
  if (ranks == 0) ranks = m->tp * m->pp * std::max<uint64_t>(1, m->dp);
  auto world = LayoutWorld(*m, ranks);
  if (!world.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", world.status().ToString().c_str());
    return kExitError;
  }
  uint64_t total = 0, largest = 0, smallest = UINT64_MAX;
  for (uint64_t r = 0; r < ranks; ++r) {
    const uint64_t b = CheckpointLayoutForRank(*m, *world, r).bytes();
    total += b;
    largest = std::max(largest, b);
    if (b > 0) smallest = std::min(smallest, b);
  }
  if (smallest == UINT64_MAX) smallest = 0;
  const CheckpointSettings set = CheckpointSettingsFromConfig(c);
  const double gib = 1073741824.0;
  if (json) {
    nlohmann::json j = {{"workload", c.name}, {"ranks", ranks}, {"layout_world", *world}, {"checkpoint_bytes", total},
                        {"largest_rank_bytes", largest}, {"smallest_writing_rank_bytes", smallest},
                        {"num_checkpoints_write", set.num_write}, {"free_bytes_needed", total * set.num_write}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return kExitPass;
  }
  std::printf("%s: %llu rank(s) (layout of %llu): %.2f GiB per checkpoint, %.2f GiB on the largest rank, %.2f GiB on the "
              "smallest writer\n", c.name.c_str(), static_cast<unsigned long long>(ranks), static_cast<unsigned long long>(*world),
              static_cast<double>(total) / gib, static_cast<double>(largest) / gib, static_cast<double>(smallest) / gib);
  std::printf("  free space needed for %llu checkpoint(s): %.2f GiB\n", static_cast<unsigned long long>(set.num_write),
              static_cast<double>(total * set.num_write) / gib);
  return kExitPass;
}

// Training workloads: the rule's file count, by memory and by steps, and the command that generates it.
int TrainingDatasize(const WorkloadConfig& c, const DatasizeArgs& a, const std::string& workload) {
  if (a.client_memory_gib <= 0) {
    std::fprintf(stderr, "feedrate: error: --client-memory-gib is required for training workloads\n");
    return kExitError;
  }
  // mlpstorage v3.0's dataset-size rule (emulator/results/validity.h), shared with the runs' rule checks.
  double total_mem = a.client_memory_gib * 1073741824.0 * static_cast<double>(a.clients);
  const DatasetMinimum min = TrainingDatasetMinimum(c, total_mem, a.accelerators);
  const double by_memory = static_cast<double>(min.by_memory), by_steps = static_cast<double>(min.by_steps);
  const double files = static_cast<double>(min.files);
  double bytes = files * static_cast<double>(c.num_samples_per_file) * min.record_length;  // the rule's, as mlpstorage
  if (a.json) {
    nlohmann::json j = {{"workload", c.name},
                        {"num_files_train", static_cast<uint64_t>(files)},
                        {"files_by_memory", static_cast<uint64_t>(by_memory)},
                        {"files_by_steps", static_cast<uint64_t>(by_steps)},
                        {"mlpstorage_datasize_files", min.files_rounded_down},
                        {"dataset_bytes", bytes},
                        {"dataset_GiB", bytes / 1073741824.0},
                        {"client_memory_GiB_total", total_mem / 1073741824.0},
                        {"accelerators", a.accelerators}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s: num_files_train = %.0f (%.2f GiB of data)\n", c.name.c_str(), files, bytes / 1073741824.0);
    std::printf("  memory rule: 5 x %.0f GiB client memory -> %.0f files\n", total_mem / 1073741824.0, by_memory);
    std::printf("  steps rule:  500 steps x %llu accelerators x batch %llu -> %.0f files\n",
                static_cast<unsigned long long>(a.accelerators), static_cast<unsigned long long>(c.batch_size),
                by_steps);
    if (min.files_rounded_down != min.files) {
      std::printf("  (mlpstorage's datasize prints %llu, the quotient rounded down; its submission checker needs %.0f)\n",
                  static_cast<unsigned long long>(min.files_rounded_down), files);
    }
    std::printf("generate with: feedrate datagen -w %s --data-dir DIR --param dataset.num_files_train=%.0f\n",
                workload.c_str(), files);
  }
  return kExitPass;
}

// With --mlperf-root: the same, recorded as mlpstorage's training/<model>/datasize/<stamp> folder (its output
// copied into training_datasize.stdout.log, the metadata beside it).
int DatasizeIntoTree(const WorkloadConfig& c, const DatasizeArgs& a, const WorkloadArgs& w, const MlperfTree& tree,
                     int* argc, char*** argv) {
  Comm comm(argc, argv);
  const nlohmann::json args = {{"program", "training"}, {"command", "datasize"}, {"model", MlpstorageTrainingModel(c)},
                               {"accelerator_type", WorkloadAccelerator(c)}, {"client_host_memory_in_gb", a.client_memory_gib},
                               {"num_client_hosts", a.clients}, {"max_accelerators", a.accelerators}, {"params", w.Overrides()}};
  MlperfRecord::Spec spec{"training", "datasize", MlpstorageTrainingModel(c), WorkloadAccelerator(c), false, w.Overrides(),
                          "feedrate datasize", args};
  return RunRecorded(tree, spec, c, comm, 1, [&](const MlperfRecord&) {
    return comm.root() ? TrainingDatasize(c, a, w.workload) : kExitPass;
  });
}

}  // namespace

Runner AddDatasize(CLI::App& app, int* argc, char*** argv) {
  auto* sub = app.add_subcommand("datasize", "minimum num_files_train per the mlpstorage v3.0 rule");
  auto w = std::make_shared<WorkloadArgs>();
  auto a = std::make_shared<DatasizeArgs>();
  w->Register(sub, false);
  sub->add_option("--client-memory-gib,--client-host-memory-in-gb", a->client_memory_gib,
                  "memory per client host, GiB (training workloads; mlpstorage's --client-host-memory-in-gb)")
      ->check(PositiveNumber());
  sub->add_option("--clients,--num-client-hosts", a->clients, "client hosts (mlpstorage's --num-client-hosts)")->check(PositiveNumber());
  auto* total = sub->add_option("--num-accelerators,--max-accelerators", a->accelerators,
                                "emulated accelerators in the whole job, as run's --num-accelerators (mlpstorage's "
                                "--max-accelerators; checkpoint workloads: ranks, default their CLOSED TP x PP x DP)")
                    ->check(PositiveNumber());
  // The old spelling, kept for one release: elsewhere --accelerators (-n) counts one rank's accelerators.
  auto* old_total = sub->add_option("--accelerators", a->accelerators,
                                    "deprecated spelling of --num-accelerators (the job's total; in run, "
                                    "--accelerators is per rank)")
                        ->check(PositiveNumber())
                        ->excludes(total);
  sub->add_flag("--json", a->json, "print JSON");
  auto mlperf = std::make_shared<MlperfArgs>();
  mlperf->Register(sub);
  return [=] {
    if (old_total->count() > 0) {
      std::fprintf(stderr, "feedrate: warning: datasize --accelerators is deprecated: it counts the whole job's "
                           "accelerators, which is --num-accelerators in every command (run's --accelerators is per rank)\n");
    }
    mlperf->Check();
    WorkloadConfig c = LoadWorkload(w->workload, w->Overrides());
    if (!c.do_train) {
      if (mlperf->tree.enabled()) throw CLI::ValidationError("--mlperf-root", "records training datasize only");
      return CheckpointDatasize(c, total->count() + old_total->count() > 0 ? a->accelerators : 0, a->json);
    }
    if (mlperf->tree.enabled()) return DatasizeIntoTree(c, *a, *w, mlperf->tree, argc, argv);
    return TrainingDatasize(c, *a, w->workload);
  };
}

}  // namespace feedrate::cli
