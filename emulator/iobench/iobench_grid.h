// iobench's grid over MPI ranks: every cell (rw x block size x queue depth x threads) run by every rank together,
// the ranks' results reduced into one per cell, as fio's group reporting does across its jobs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/host/comm.h"
#include "loader/iobench/iobench.h"
#include "loader/status.h"

namespace feedrate {

struct IobenchGrid {
  std::vector<std::string> rw;
  std::vector<uint64_t> bs;
  std::vector<uint32_t> qd, threads;
};

// Runs the grid's cells in order on every rank (a barrier before each), reduces each cell over the ranks (bytes and
// I/Os summed, the window the longest, latency histograms merged, first-done the earliest rank's) and hands its
// JSON (mib_per_s, iops, lat_us{p50..max}, cpu_s_per_gib, first/last_done_mib_per_s, engine, engine_detail) to
// `on_cell` on rank 0. Collective: every rank calls it with the same grid. The first error any rank meets ends the
// grid on every rank, agreed (its message names the rank when there are several); rank 0's result holds the cells.
Result<nlohmann::json> RunIobenchGrid(const Comm& comm, const IoBenchOptions& o, const IobenchGrid& grid,
                                      const std::function<void(const nlohmann::json& cell)>& on_cell);

// iobench.csv: a header and one row per cell of RunIobenchGrid's result.
std::string IobenchCsv(const nlohmann::json& cells);

}  // namespace feedrate
