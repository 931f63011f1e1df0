// A checkpoint run's reductions over ranks: each phase's per-checkpoint figures, and each host's bytes for the rules.
#include "emulator/checkpoint/checkpoint_metrics.h"

#include <algorithm>
#include <map>

#include "emulator/training/metrics.h"
#include "loader/util/units.h"

namespace feedrate {

// Per checkpoint over ranks: the slowest rank's duration decides (v2.0 rules); also every rank's spread and
// rank 0's own figures, which is what DLIO v2.0 reports without checkpoint.rank_sync.
nlohmann::json ReduceCheckpointPhase(const std::vector<std::vector<double>>& per_rank, double size_gib) {
  nlohmann::json phase = nlohmann::json::object();
  if (per_rank.empty() || per_rank.front().empty()) return phase;
  const size_t n = per_rank.front().size();
  std::vector<double> dur, tput, r0_dur, r0_tput;
  nlohmann::json checkpoints = nlohmann::json::array();
  for (size_t k = 0; k < n; ++k) {
    double mx = 0, mn = 1e300, sum = 0;
    for (const auto& r : per_rank) {
      mx = std::max(mx, r[k]);
      mn = std::min(mn, r[k]);
      sum += r[k];
    }
    dur.push_back(mx);
    tput.push_back(mx > 0 ? size_gib / mx : 0);
    r0_dur.push_back(per_rank.front()[k]);
    r0_tput.push_back(per_rank.front()[k] > 0 ? size_gib / per_rank.front()[k] : 0);
    checkpoints.push_back({{"checkpoint", k + 1}, {"duration_seconds", mx}, {"GiB_per_second", tput.back()},
                           {"rank_duration_min_seconds", mn}, {"rank_duration_mean_seconds", sum / static_cast<double>(per_rank.size())},
                           {"rank_duration_max_seconds", mx}});
  }
  phase = {{"duration_mean_seconds", Mean(dur)}, {"duration_stdev_seconds", PopulationStdev(dur)}, {"GiB_per_second_mean", Mean(tput)},
           {"GiB_per_second_stdev", PopulationStdev(tput)}, {"checkpoints", checkpoints},
           {"rank0_dlio_compatible", {{"duration_mean_seconds", Mean(r0_dur)}, {"duration_stdev_seconds", PopulationStdev(r0_dur)},
                                      {"GiB_per_second_mean", Mean(r0_tput)}, {"GiB_per_second_stdev", PopulationStdev(r0_tput)},
                                      {"note", "rank 0's own times, what DLIO v2.0 reports without checkpoint.rank_sync"}}}};
  return phase;
}

void AddHostBytes(const std::vector<DlioCheckpointRank>& ranks, const std::vector<std::vector<double>>& facts,
                  uint64_t written, CheckpointFacts* f) {
  std::map<std::string, double> bytes, memory;
  for (size_t r = 0; r < ranks.size() && r < facts.size(); ++r) {
    const std::string host = ranks[r].host.value("hostname", std::string());
    bytes[host] += facts[r][0] * static_cast<double>(written);
    memory[host] = ranks[r].host.value("host_memory_GB", 0.0) * kGiB;
  }
  for (const auto& [host, b] : bytes) {
    f->max_host_bytes_written = std::max(f->max_host_bytes_written, b);
    f->min_host_memory_bytes = f->min_host_memory_bytes == 0 ? memory[host] : std::min(f->min_host_memory_bytes, memory[host]);
  }
}

}  // namespace feedrate
