// iobench's grid over the ranks and its reduction (iobench_grid.h).
#include "emulator/iobench/iobench_grid.h"

#include <sstream>

namespace feedrate {
namespace {

// Every rank's cell results folded into one: bytes and I/Os summed, the window the longest, the histogram merged.
struct Cell {
  IoBenchCell cell;
  IoBenchResult r;
  double last_done_seconds = 0;
};

Cell Reduce(const Comm& comm, const IoBenchCell& cell, IoBenchResult r) {
  std::vector<double> v(LatencyHistogram::kBuckets + 6);
  auto& counts = r.latency.counts();
  for (size_t i = 0; i < counts.size(); ++i) v[i] = static_cast<double>(counts[i]);
  size_t k = counts.size();
  v[k] = static_cast<double>(r.read_bytes);
  v[k + 1] = static_cast<double>(r.write_bytes);
  v[k + 2] = static_cast<double>(r.ios);
  v[k + 3] = r.cpu_seconds;
  v[k + 4] = static_cast<double>(r.latency.total());
  v[k + 5] = static_cast<double>(r.first_done_bytes);
  comm.SumInPlace(&v);
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<uint64_t>(v[i]);
  Cell out{cell, r, comm.MaxDouble(r.seconds)};
  out.r.latency.set_total_and_max(static_cast<uint64_t>(v[k + 4]), static_cast<uint64_t>(comm.MaxDouble(static_cast<double>(r.latency.max()))));
  out.r.read_bytes = static_cast<uint64_t>(v[k]);
  out.r.write_bytes = static_cast<uint64_t>(v[k + 1]);
  out.r.ios = static_cast<uint64_t>(v[k + 2]);
  out.r.cpu_seconds = v[k + 3];
  out.r.first_done_bytes = static_cast<uint64_t>(v[k + 5]);
  // First done: the earliest rank (and thread) to finish; throughput up to then, over all ranks' bytes.
  out.r.first_done_seconds = -comm.MaxDouble(-r.first_done_seconds);
  return out;
}

nlohmann::json ToJson(const Cell& c) {
  const double bytes = static_cast<double>(c.r.read_bytes + c.r.write_bytes);
  const double secs = c.last_done_seconds > 0 ? c.last_done_seconds : 1e-9;
  const auto us = [&](double p) { return static_cast<double>(c.r.latency.Percentile(p)) / 1000.0; };
  return {{"rw", c.cell.rw},
          {"bs", c.cell.bs},
          {"qd", c.cell.qd},
          {"threads", c.cell.threads},
          {"engine", c.r.engine},
          {"engine_detail", c.r.detail},
          {"mib_per_s", bytes / 1048576.0 / secs},
          {"read_mib_per_s", static_cast<double>(c.r.read_bytes) / 1048576.0 / secs},
          {"write_mib_per_s", static_cast<double>(c.r.write_bytes) / 1048576.0 / secs},
          {"iops", static_cast<double>(c.r.ios) / secs},
          {"ios", c.r.ios},
          {"lat_us", {{"p50", us(50)}, {"p90", us(90)}, {"p99", us(99)}, {"p999", us(99.9)}, {"max", us(100)}}},
          {"cpu_s_per_gib", bytes > 0 ? c.r.cpu_seconds / (bytes / 1073741824.0) : 0.0},
          {"first_done_mib_per_s", c.r.first_done_seconds > 0
                                       ? static_cast<double>(c.r.first_done_bytes) / 1048576.0 / c.r.first_done_seconds
                                       : 0.0},
          {"last_done_mib_per_s", bytes / 1048576.0 / secs},
          {"seconds", secs}};
}

}  // namespace

Result<nlohmann::json> RunIobenchGrid(const Comm& comm, const IoBenchOptions& o, const IobenchGrid& grid,
                                      const std::function<void(const nlohmann::json& cell)>& on_cell) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& rw : grid.rw) {
    for (uint64_t bs : grid.bs) {
      for (uint32_t qd : grid.qd) {
        for (uint32_t th : grid.threads) {
          IoBenchCell cell{rw, bs, qd, th};
          comm.Barrier();  // every rank starts the cell together
          auto r = RunIoBenchCell(o, cell);
          if (std::string msg = comm.AgreeFirstError(r.ok() ? Status::Ok() : r.status()); !msg.empty()) {
            return Status::IoError(msg);
          }
          nlohmann::json j = ToJson(Reduce(comm, cell, std::move(*r)));
          if (comm.root()) on_cell(j);
          cells.push_back(std::move(j));
        }
      }
    }
  }
  return cells;
}

std::string IobenchCsv(const nlohmann::json& cells) {
  std::ostringstream csv;
  csv << "rw,bs,qd,threads,engine,mib_per_s,iops,lat_p50_us,lat_p90_us,lat_p99_us,lat_p999_us,lat_max_us,cpu_s_per_gib,"
         "first_done_mib_per_s,last_done_mib_per_s\n";
  for (const auto& j : cells) {
    const auto& lat = j["lat_us"];
    csv << j["rw"].get<std::string>() << ',' << j["bs"].get<uint64_t>() << ',' << j["qd"].get<uint32_t>() << ','
        << j["threads"].get<uint32_t>() << ',' << j["engine"].get<std::string>() << ',' << j["mib_per_s"].get<double>()
        << ',' << j["iops"].get<double>() << ',' << lat["p50"].get<double>() << ',' << lat["p90"].get<double>() << ','
        << lat["p99"].get<double>() << ',' << lat["p999"].get<double>() << ',' << lat["max"].get<double>() << ','
        << j["cpu_s_per_gib"].get<double>() << ',' << j["first_done_mib_per_s"].get<double>() << ','
        << j["last_done_mib_per_s"].get<double>() << '\n';
  }
  return csv.str();
}

}  // namespace feedrate
