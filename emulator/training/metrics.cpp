// Metric formulas; see metrics.h and WORKLOADS.md.
#include "emulator/training/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace feedrate {

BlockMetrics ComputeBlockMetrics(std::span<const StepRecord> steps, int64_t block_ns, uint64_t batch,
                                 uint64_t exclude_start, uint64_t exclude_end) {
  BlockMetrics m;
  const uint64_t n = steps.size();
  if (n <= exclude_start + exclude_end) return m;
  const uint64_t s = exclude_start, e = n - 1 - exclude_end;
  int64_t compute = 0, excluded = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (i >= s && i <= e) {
      compute += steps[i].compute_ns;
    } else {
      excluded += steps[i].load_ns + steps[i].compute_ns;
    }
  }
  const double window = static_cast<double>(block_ns - excluded) / 1e9;
  if (window <= 0) return m;
  m.au = static_cast<double>(compute) / 1e9 / window;
  m.throughput = (static_cast<double>(n) - 2.0) * static_cast<double>(batch) / window;
  m.counted_steps = e - s + 1;
  m.throughput_corrected = static_cast<double>(m.counted_steps * batch) / window;
  return m;
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double PopulationStdev(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  double m = Mean(v), acc = 0;
  for (double x : v) acc += (x - m) * (x - m);
  return std::sqrt(acc / static_cast<double>(v.size()));
}

double Percentile(std::vector<double> values, double pct) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  double rank = pct / 100.0 * static_cast<double>(values.size() - 1);
  auto lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

RunMetrics AggregateRun(const std::vector<std::vector<AcceleratorEpoch>>& per_acc, double record_length, double au_bar,
                        bool counts_window) {
  RunMetrics r;
  if (per_acc.empty()) return r;
  size_t epochs = per_acc.front().size();
  for (const auto& a : per_acc) epochs = std::min(epochs, a.size());
  std::vector<double> all_au;
  for (size_t e = 0; e < epochs; ++e) {
    double au_sum = 0, tp = 0, tpc = 0, mn = 1e300, mx = -1e300, secs = 0;
    uint64_t bytes = 0, probed = 0, resident = 0;
    for (const auto& a : per_acc) {
      const auto& x = a[e];
      probed += x.probed_bytes;
      resident += x.resident_bytes;
      au_sum += x.block.au;
      tp += counts_window ? x.block.throughput_corrected : x.block.throughput;
      tpc += x.block.throughput_corrected;
      mn = std::min(mn, x.block.au);
      mx = std::max(mx, x.block.au);
      bytes += x.bytes;
      secs = std::max(secs, x.seconds);
      all_au.push_back(x.block.au * 100);
    }
    r.au_pct.push_back(100.0 * au_sum / static_cast<double>(per_acc.size()));
    r.throughput.push_back(tp);
    r.throughput_corrected.push_back(tpc);
    r.au_min_pct.push_back(100 * mn);
    r.au_max_pct.push_back(100 * mx);
    r.bytes.push_back(bytes);
    r.epoch_seconds.push_back(secs);
    r.probed_bytes.push_back(probed);
    r.resident_bytes.push_back(resident);
  }
  r.au_mean_pct = Mean(r.au_pct);
  r.au_stdev_pct = PopulationStdev(r.au_pct);
  r.throughput_mean = Mean(r.throughput);
  r.throughput_stdev = PopulationStdev(r.throughput);
  r.io_mean_mib = r.throughput_mean * record_length / 1024.0 / 1024.0;
  r.io_stdev_mib = r.throughput_stdev * record_length / 1024.0 / 1024.0;
  if (!all_au.empty()) {
    r.au_min_pct_overall = *std::min_element(all_au.begin(), all_au.end());
    r.au_max_pct_overall = *std::max_element(all_au.begin(), all_au.end());
  }
  r.meets_au = epochs > 0 && r.au_mean_pct >= au_bar * 100.0;
  EvalMetrics& ev = r.eval;
  for (size_t e = 0; e < epochs; ++e) {
    double au = 0, tp = 0;
    uint64_t bytes = 0, n = 0;
    for (const auto& a : per_acc) {
      const EvalEpoch& x = a[e].eval;
      if (!x.ran) continue;
      ++n;
      au += x.seconds > 0 ? x.compute_seconds / x.seconds : 0;
      tp += x.seconds > 0 ? static_cast<double>(x.samples) / x.seconds : 0;
      bytes += x.bytes;
    }
    if (n == 0) continue;
    ev.epochs.push_back(e + 1);
    ev.au_pct.push_back(100.0 * au / static_cast<double>(n));
    ev.throughput.push_back(tp);
    ev.bytes.push_back(bytes);
  }
  ev.au_mean_pct = Mean(ev.au_pct);
  ev.au_stdev_pct = PopulationStdev(ev.au_pct);
  ev.throughput_mean = Mean(ev.throughput);
  ev.throughput_stdev = PopulationStdev(ev.throughput);
  ev.io_mean_mib = ev.throughput_mean * record_length / 1024.0 / 1024.0;
  ev.io_stdev_mib = ev.throughput_stdev * record_length / 1024.0 / 1024.0;
  return r;
}

}  // namespace feedrate
