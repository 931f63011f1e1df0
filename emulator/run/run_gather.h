// What every rank sends rank 0 at the end of a run: per-accelerator epoch figures and step timings (packed as
// doubles) and the rank's facts (JSON: host, CPU, engine counters, cache control, storage counters, latencies).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "emulator/host/comm.h"
#include "emulator/results/results.h"
#include "emulator/training/progress.h"
#include "emulator/training/trainer.h"
#include "loader/io/fault_injection.h"
#include "loader/io/io_engine.h"
#include "loader/io/io_stats.h"

namespace feedrate {

// `train_start_ns`: the rank's NowNs() at the training loop's start (each block's start is sent relative to it).
std::vector<double> PackRank(const WorkloadConfig& cfg, const TrainingResult& t, int64_t train_start_ns);
void UnpackRanks(const std::vector<std::vector<double>>& all, RunRecord* r,
                 std::vector<std::vector<AcceleratorEpoch>>* per_acc);

// The rank facts beyond host and CPU (all optional: a run that failed in setup sends the defaults).
struct RankExtras {
  const FaultInjector* faults = nullptr;
  unsigned threads = 0;
  EngineCounters counters;
  double check_seconds = 0, train_cpu_seconds = 0, train_start_unix = 0;
  uint64_t probe_failures = 0;
  uint64_t net_rx_bytes = 0;   // host leader: bytes its network interfaces received during the epochs' training blocks
  uint64_t verify_bytes = 0;   // --verify: payload bytes checked
  double setup_peak_rss_mib = 0;
  uint64_t files_held = 0, file_list_bytes = 0;  // the rank's PathList
  uint64_t setup_stats = 0, setup_opens = 0, setup_reads = 0, setup_bytes = 0;  // Setup's, before the window
  uint64_t prewarm_batches = 0, prewarm_bytes = 0;  // the pre-warm passes' (AcceleratorLog), the rank's
  double prewarm_seconds = 0;                       // and its longest accelerator's time in them
  double verify_seconds = 0;   // and the I/O threads' time doing it
  const IoStats* io = nullptr;
  nlohmann::json cache = nlohmann::json::object();    // CacheControl::ToJson
  nlohmann::json storage = nlohmann::json::object();  // StorageCounter facts and per-epoch device counters
  nlohmann::json accelerator_memory = nlohmann::json::object();  // AcceleratorStaging::ToJson (after training)
  nlohmann::json host_cpu = nlohmann::json::object();  // host leader: HostCpuUse::ToJson over the training loop
  nlohmann::json dlio_host;  // a run started as DLIO: DlioHostFacts() (null otherwise: the gather stays small)
};
std::string RankInfoJson(const Comm& comm, const RankExtras& extras);
void ParseRankInfos(const std::vector<std::string>& all, RunRecord* r);

// One line per epoch on rank 0 (text, or a JSON event), from figures reduced over all ranks (every rank calls it).
void ReportEpoch(const WorkloadConfig& cfg, const Comm& comm, uint64_t epoch, uint64_t steps,
                 const std::vector<AcceleratorLog>& logs, ProgressReporter* out);

}  // namespace feedrate
