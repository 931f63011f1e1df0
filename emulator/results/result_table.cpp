// The table a completed run prints: per epoch AU and rates, the verdict, stalls, device memory, the client's CPUs.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "emulator/host/host_cpu.h"
#include "emulator/results/results.h"
#include "loader/util/dlio_edition.h"
#include "loader/util/output_text.h"
#include "loader/util/units.h"

namespace feedrate {

namespace {

// Other work on a client: said under the table when it took a fifth of the host's CPUs during training (the
// answer then measures a shared client), naming what used them.
std::string BusyClientLines(const RunRecord& r) {
  std::string out;
  for (const auto& ri : r.rank_info) {
    const nlohmann::json& h = ri.host_cpu;
    const double secs = h.value("seconds", 0.0), cpus = h.value("cpus", 0.0);
    if (secs < kMinHostCpuWindow || cpus <= 0) continue;  // ticks of 10 ms: a shorter window says little
    // Per-process times (scheduler accounting) can exceed /proc/stat's ticks by a few percent: capped at the latter.
    const double others = std::min(h.value("busy", 0.0), h.value("others_cpu_seconds", 0.0) / (secs * cpus));
    if (others < 0.2) continue;
    const std::string who = PlainText(h.value("others_described", std::string()));  // (other processes' names)
    out += "busy client " + PlainText(ri.hostname) + ": its CPUs were " + Fixed(100 * h.value("busy", 0.0), 0) + "% busy in training, " +
           Fixed(100 * others, 0) + "% of them by other work (" + who + "): the answer measures a shared client\n";
  }
  return out;
}

}  // namespace

std::string FormatResultTable(const RunRecord& r) {
  const RunMetrics& m = r.metrics;
  const WorkloadConfig& c = *r.cfg;
  std::ostringstream o;
  o << "\nFeedrate " << PlainText(c.name) << ": " << r.ranks * r.accelerators_per_rank << " accelerator(s) (" << r.ranks
    << " rank(s) x " << r.accelerators_per_rank << "), " << r.steps_per_epoch << " steps/epoch, engine " << r.engine
    << "\n";
  o << " epoch |   AU %  | AU min..max % | samples/s | MiB/s (DLIO) | MiB/s read | seconds\n";
  o << "-------+---------+---------------+-----------+--------------+------------+--------\n";
  for (size_t e = 0; e < m.au_pct.size(); ++e) {
    double read = m.epoch_seconds[e] > 0 ? static_cast<double>(m.bytes[e]) / kMiB / m.epoch_seconds[e] : 0;
    char line[200];
    std::snprintf(line, sizeof line, " %5zu | %7.2f | %5.1f..%5.1f  | %9.2f | %12.1f | %10.1f | %6.2f\n", e + 1,
                  m.au_pct[e], m.au_min_pct[e], m.au_max_pct[e], m.throughput[e],
                  m.throughput[e] * c.record_length / kMiB, read, m.epoch_seconds[e]);
    o << line;
  }
  o << "\nAU " << Fixed(m.au_mean_pct, 2) << "% (stdev " << Fixed(m.au_stdev_pct, 2) << "), bar " << Fixed(c.au * 100, 0)
    << "%: " << (m.meets_au ? "PASS" : "FAIL") << "\n";
  o << "throughput " << Fixed(m.throughput_mean, 2) << " samples/s, " << Fixed(m.io_mean_mib, 1)
    << " MiB/s (DLIO, nominal record size); really read " << Fixed(static_cast<double>(TotalBytes(m)) / kGiB, 2)
    << " GiB at " << Fixed(TotalSeconds(m) > 0 ? static_cast<double>(TotalBytes(m)) / kMiB / TotalSeconds(m) : 0, 1)
    << " MiB/s\n";
  if (!Traits(c.rules).throughput_counts_window && r.steps_per_epoch <= 4) {  // (upstream's (n-2): 0 at 2 steps)
    o << "(samples/s is upstream DLIO's (steps - 2) x batch / time: with " << r.steps_per_epoch
      << " steps an epoch it counts " << (r.steps_per_epoch > 2 ? r.steps_per_epoch - 2 : 0)
      << "; give more steps for a throughput figure)\n";
  }
  if (!m.eval.epochs.empty()) {
    o << "evaluation after " << m.eval.epochs.size() << " epoch(s): AU " << Fixed(m.eval.au_mean_pct, 2) << "%, "
      << Fixed(m.eval.throughput_mean, 2) << " samples/s\n";
  }
  o << "stall per step p50/p99/max " << Fixed(Percentile(r.stall_seconds, 50), 4) << "/"
    << Fixed(Percentile(r.stall_seconds, 99), 4) << "/" << Fixed(Percentile(r.stall_seconds, 100), 4) << " s\n";
  o << BusyClientLines(r);
  if (r.accelerator_memory == "device") {
    const nlohmann::json a = AcceleratorMemoryFigures(r);
    const uint64_t gds = a.value("gds_bytes", uint64_t{0}), h2d = a.value("h2d_bytes", uint64_t{0});
    if (gds > 0) {
      const bool direct = a.value("path", std::string()).rfind("gds:", 0) == 0;
      o << "device memory: " << Fixed(static_cast<double>(gds) / kGiB, 2) << " GiB read into GPU memory by cuFile ("
        << (direct ? "GPUDirect Storage" : "not GPUDirect: see accelerator_memory.path") << ")\n";
    }
    if (h2d > 0 || gds == 0) {
      o << "device memory: " << Fixed(static_cast<double>(h2d) / kGiB, 2) << " GiB copied host to GPU at "
        << Fixed(a.value("h2d_gib_per_s", 0.0), 1) << " GiB/s; copy " << Fixed(a.value("copy_seconds", 0.0), 3)
        << " s, of it " << Fixed(a.value("copy_stall_seconds", 0.0), 3) << " s stalled\n";
    }
  } else if (r.accelerator_memory == "pinned") {
    o << "pinned host memory: batches read into page-locked buffers\n";
  }
  if (r.cfg != nullptr && r.cfg->compute == ComputeKind::kGpu) {
    const nlohmann::json k = ComputeFigures(r);
    o << "compute on the GPU: " << k["launches"].get<uint64_t>() << " kernels, "
      << Fixed(k["kernel_seconds"].get<double>(), 3) << " s on the GPU for " << Fixed(k["requested_seconds"].get<double>(), 3)
      << " s asked\n";
  }
  return o.str();
}

}  // namespace feedrate
