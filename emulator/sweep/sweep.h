// `feedrate sweep`: the largest accelerator count whose runs all meet the AU bar. Bracket (doubling) then bisect,
// each point repeated; the runs themselves come from a SweepRunner (real `feedrate run` processes, or a fake in
// tests), so the search is independent of how a point is measured.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace feedrate {

// One run at one accelerator count, as read back from its summary.json.
struct SweepRun {
  uint64_t accelerators = 0;  // total, all hosts
  int repeat = 1;             // 1-based
  int exit_code = 2;          // feedrate run's: 0 AU met, 3 missed, 2 error, 130 interrupted
  double au_pct = 0;          // train_au_mean_percentage
  double throughput = 0;      // samples/s (DLIO's mean)
  double read_mib_per_s = 0;  // bytes really read / epoch time
  double cpu_utilisation = 0; // client CPU seconds / (training wall time x CPUs the ranks may use), 0..1
  // The busiest client's CPUs in training, whoever used them (/proc/stat), 0..1, and the other work that used them
  // ("stress x2 1.9 CPU-s/s"; empty when none took 5% of a CPU). 0 and empty from summaries without host_cpu.
  double host_cpu_busy = 0;
  bool host_cpu_measured = false;  // a host's training window was long enough (2 s) for its CPU to be read
  std::string other_work;
  // What the verdict reads as the client's CPU use: Feedrate's own, or the host's when other work used it too.
  double client_busy() const { return std::max(cpu_utilisation, host_cpu_busy); }
  double stall_p50 = 0, stall_p99 = 0;  // seconds an accelerator waited for a batch
  double net_rx_mib_per_s = 0;  // what the hosts' network interfaces received, all hosts (0: no network traffic)
  std::string results_dir;
  std::string error;          // exit 2: the run's message
  std::string validity;       // the run's rule-check category (CLOSED, OPEN, INVALID), empty when unknown
  std::vector<std::string> validity_reasons;
  // Share of the run's bytes that the client's page cache held just before they were read (the epochs'
  // resident_fraction weighted by their bytes; 0 with O_DIRECT); -1 when the run did not sample it.
  double cache_served = -1;
  nlohmann::json hosts = nlohmann::json::array();  // the run's per-host figures (summary feedrate.hosts)
  bool passed() const { return exit_code == 0; }
};

// The page-cache state the points start from, and what counts as a point served by it.
struct SweepCache {
  std::string mode = "keep";  // the --cache every run used (drop-once: each point starts cold)
  std::string fs_type;        // the dataset's file system, as FileSystemType names it
  bool in_memory = false;     // tmpfs/ramfs: the storage itself is memory, so no share is "the cache's"
  double limit = 0.05;        // a point whose runs read a larger share from the page cache is named
};

using SweepRunner = std::function<SweepRun(uint64_t accelerators, int repeat)>;

struct SweepOptions {
  uint64_t min = 1;    // per-host count to start from
  uint64_t max = 0;    // per-host upper limit (0: keep doubling up to kSweepHardMax)
  uint64_t hosts = 1;  // accelerators = per-host count x hosts (equal per host, as the rules require)
  int repeats = 1;     // runs per point; a point passes only when every run passes (a failure stops its repeats)
  // The largest per-host count the dataset can serve (0: no bound known) and why: a count beyond it is not tried,
  // and an answer it stops is a lower bound that says so (DatasetBound in cli/cmd_sweep.cpp computes it).
  uint64_t dataset_max = 0;
  std::string dataset_why;
  // Called after every run (progress printing).
  std::function<void(const SweepRun&)> on_run;
};
constexpr uint64_t kSweepHardMax = 4096;

struct SweepPoint {
  uint64_t accelerators = 0;  // total
  std::vector<SweepRun> runs;
  bool passed = false;
};

struct SweepResult {
  uint64_t accelerators_supported = 0;  // total; 0 when even the minimum failed
  bool capped = false;                  // the largest count tried passed: the answer is a lower bound
  bool dataset_limited = false;         // ... because the dataset could serve no more (SweepOptions::dataset_why)
  std::vector<SweepPoint> points;       // in the order tried
  int stop_code = 0;                    // non-zero when a run ended the sweep (2 error, 130 interrupted)
  std::string stop_reason;
};

SweepResult RunSweep(const SweepOptions& options, const SweepRunner& runner);

// Fills a run's figures from its summary.json (as `feedrate run` writes it): AU, throughput, MiB/s, stall
// percentiles, and the client CPU utilisation = train_cpu_seconds / (wall_seconds x usable CPUs), where usable CPUs per
// host = min(the host's CPUs, the CPUs its ranks may run on).
void FillSweepRun(const nlohmann::json& summary, SweepRun* run);

// What limited the answer, from the last passing and the first failing point: the client's CPU (>= 85% busy), the
// storage (delivered MiB/s near `ceiling_mib_per_s` when known, or not growing with the accelerator count), or
// neither saturated (latency-bound).
// A deciding point (last pass, first fail) that read more than `cache.limit` of its bytes from the page cache, on
// storage that is not memory by nature, gives `page_cache`: the answer is partly the client's memory.
nlohmann::json SweepBottleneck(const SweepResult& r, double ceiling_mib_per_s, const SweepCache& cache = {});

// What served the points: the cache mode, the points that read more than `cache.limit` from the page cache (with
// their largest share over runs), and `storage_answer`: false when any did on storage that is not memory.
nlohmann::json SweepCacheVerdict(const SweepResult& r, const SweepCache& cache);

// The answer's validity: the worst category among the runs of the answer's point, and INVALID with fewer than 5
// runs per point (the rules' result is the mean of 5 consecutive runs: --closed).
nlohmann::json SweepValidity(const SweepResult& r, int repeats);

// sweep.json: accelerators_supported, every point and run, the bottleneck evidence, the cache verdict and the
// validity (INVALID when the answer is not the storage's: SweepCacheVerdict).
nlohmann::json SweepJson(const SweepResult& r, const SweepOptions& o, double ceiling_mib_per_s, const SweepCache& cache = {});

}  // namespace feedrate
