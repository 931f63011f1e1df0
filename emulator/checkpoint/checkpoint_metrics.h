// A checkpoint run's reductions over ranks (rank 0, after the gathers): the figures of each phase and what the
// rules need of each host.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "emulator/results/dlio_output.h"
#include "emulator/results/validity.h"

namespace feedrate {

// Per checkpoint over ranks (`per_rank[r][k]`: rank r's seconds for checkpoint k): the slowest rank's duration
// decides (the rules); also every rank's spread and rank 0's own figures, which is what DLIO v2.0 reports without
// checkpoint.rank_sync. An empty object when no checkpoint ran.
nlohmann::json ReduceCheckpointPhase(const std::vector<std::vector<double>>& per_rank, double size_gib);

// Each host's checkpoint bytes written in this run (`facts[r][0]`: rank r's bytes per checkpoint, times `written`)
// and its memory, into the cache-flush rule's two figures.
void AddHostBytes(const std::vector<DlioCheckpointRank>& ranks, const std::vector<std::vector<double>>& facts,
                  uint64_t written, CheckpointFacts* f);

}  // namespace feedrate
