// Packing the end-of-run gather to rank 0.
#include "emulator/run/run_gather.h"

#include <algorithm>
#include <cstdio>

#include "emulator/host/sysinfo.h"
#include "loader/util/dlio_edition.h"

namespace feedrate {

// Packs this rank's per-accelerator epoch metrics and per-step timings for the gather to rank 0.
std::vector<double> PackRank(const WorkloadConfig& cfg, const TrainingResult& t, int64_t train_start_ns) {
  std::vector<double> v{static_cast<double>(t.logs.size()), static_cast<double>(t.epochs_completed),
                        static_cast<double>(t.steps_per_epoch)};
  for (const auto& log : t.logs) {
    for (uint64_t e = 0; e < t.epochs_completed; ++e) {
      std::span<const StepRecord> steps(log.steps.data() + e * t.steps_per_epoch, t.steps_per_epoch);
      BlockMetrics b = ComputeBlockMetrics(steps, log.block_ns[e], cfg.batch_size, cfg.metric_exclude_start_steps,
                                           cfg.metric_exclude_end_steps);
      uint64_t bytes = 0;
      for (const auto& st : steps) bytes += st.bytes;
      const EvalEpoch& ev = log.eval[e];
      v.insert(v.end(), {b.au, b.throughput, b.throughput_corrected, static_cast<double>(b.counted_steps),
                         static_cast<double>(bytes), static_cast<double>(log.block_ns[e]) / 1e9,
                         ev.ran ? 1.0 : 0.0, static_cast<double>(ev.samples), static_cast<double>(ev.bytes), ev.seconds,
                         ev.compute_seconds, static_cast<double>(log.residency[e].bytes),
                         static_cast<double>(log.residency[e].resident_bytes),
                         static_cast<double>(log.block_start_ns[e] - train_start_ns) / 1e9});
    }
  }
  for (const auto& log : t.logs) {
    for (uint64_t i = 0; i < t.epochs_completed * t.steps_per_epoch; ++i) {
      v.push_back(static_cast<double>(log.steps[i].load_ns) / 1e9);
      v.push_back(static_cast<double>(log.steps[i].barrier_ns) / 1e9);
      v.push_back(static_cast<double>(log.steps[i].compute_ns) / 1e9);
    }
  }
  return v;
}

void UnpackRanks(const std::vector<std::vector<double>>& all, RunRecord* r,
                 std::vector<std::vector<AcceleratorEpoch>>* per_acc) {
  for (const auto& v : all) {
    size_t n_acc = static_cast<size_t>(v[0]), epochs = static_cast<size_t>(v[1]), steps = static_cast<size_t>(v[2]);
    size_t p = 3;
    for (size_t a = 0; a < n_acc; ++a) {
      std::vector<AcceleratorEpoch> eps;
      for (size_t e = 0; e < epochs; ++e, p += 14) {
        AcceleratorEpoch x;
        x.block = {v[p], v[p + 1], v[p + 2], static_cast<uint64_t>(v[p + 3])};
        x.bytes = static_cast<uint64_t>(v[p + 4]);
        x.seconds = v[p + 5];
        x.eval = {v[p + 6] != 0, static_cast<uint64_t>(v[p + 7]), static_cast<uint64_t>(v[p + 8]), v[p + 9], v[p + 10]};
        x.probed_bytes = static_cast<uint64_t>(v[p + 11]);
        x.resident_bytes = static_cast<uint64_t>(v[p + 12]);
        x.start_offset_s = v[p + 13];
        eps.push_back(x);
      }
      per_acc->push_back(std::move(eps));
    }
    for (size_t i = 0; i < n_acc * epochs * steps; ++i, p += 3) {
      r->stall_seconds.push_back(v[p]);
      r->barrier_seconds.push_back(v[p + 1]);
      r->compute_seconds.push_back(v[p + 2]);
    }
  }
}

std::string RankInfoJson(const Comm& comm, const RankExtras& x) {
  const HostInfo h = ReadHostInfo();
  const auto cpus = CpuAffinity();
  RankInfo ri;
  ri.rank = comm.rank();
  ri.hostname = h.hostname;
  ri.cpus = CpuListString(cpus);
  ri.allowed_cpus = static_cast<unsigned>(cpus.size());
  ri.threads = x.threads;
  ri.cpu_seconds = ProcessCpuSeconds();
  ri.train_cpu_seconds = x.train_cpu_seconds;
  ri.train_start_unix = x.train_start_unix;
  ri.host_cpu_count = h.cpu_count;
  ri.host_mem_bytes = h.mem_total_bytes;
  ri.cgroup_limit_bytes = h.cgroup_limit_bytes;
  ri.processor = h.processor_name;
  ri.engine_bytes = x.counters.device_bytes;
  ri.requeued = x.counters.requeued;
  ri.check_seconds = x.check_seconds;
  ri.probe_failures = x.probe_failures;
  ri.verify_bytes = x.verify_bytes;
  ri.net_rx_bytes = x.net_rx_bytes;
  ri.verify_seconds = x.verify_seconds;
  ri.setup_peak_rss_mib = x.setup_peak_rss_mib;
  ri.files_held = x.files_held;
  ri.file_list_bytes = x.file_list_bytes;
  ri.setup_stats = x.setup_stats;
  ri.setup_opens = x.setup_opens;
  ri.setup_reads = x.setup_reads;
  ri.setup_bytes = x.setup_bytes;
  ri.prewarm_batches = x.prewarm_batches;
  ri.prewarm_bytes = x.prewarm_bytes;
  ri.prewarm_seconds = x.prewarm_seconds;
  ri.cache = x.cache;
  ri.storage = x.storage;
  ri.accelerator_memory = x.accelerator_memory;
  ri.host_cpu = x.host_cpu;
  ri.dlio_host = x.dlio_host;
  if (x.faults != nullptr) {
    for (const auto& c : x.faults->Counts()) {
      ri.faults_matched.push_back(c.matched);
      ri.faults_injected.push_back(c.injected);
    }
  }
  if (x.io != nullptr) {  // the read latency histogram, sparse: [[bucket, count], ...]
    const IoSnapshot s = x.io->Take();
    for (size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
      if (s.latency.counts()[b] > 0) ri.latency_hist.emplace_back(static_cast<uint32_t>(b), s.latency.counts()[b]);
    }
    ri.latency_max_ns = s.latency.max();
  }
  return nlohmann::json(ri).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void ParseRankInfos(const std::vector<std::string>& all, RunRecord* r) {
  for (const auto& s : all) {
    RankInfo ri = nlohmann::json::parse(s).get<RankInfo>();
    // Warnings a rank raised during the run (cache control), once each.
    if (ri.cache.is_object() && ri.cache.contains("warnings")) {
      for (const auto& w : ri.cache["warnings"]) {
        const std::string text = w.get<std::string>();
        if (std::find(r->warnings.begin(), r->warnings.end(), text) == r->warnings.end()) {
          r->warnings.push_back(text);
          std::fprintf(stderr, "feedrate: warning: %s\n", text.c_str());
        }
      }
    }
    r->rank_info.push_back(std::move(ri));
  }
}

// One line per epoch on rank 0 (text, or a JSON event), from figures reduced over all ranks.
void ReportEpoch(const WorkloadConfig& cfg, const Comm& comm, uint64_t epoch, uint64_t steps,
                 const std::vector<AcceleratorLog>& logs, ProgressReporter* out) {
  double au = 0, tp = 0, bytes = 0, secs = 0;
  for (const auto& log : logs) {
    std::span<const StepRecord> st(log.steps.data() + (epoch - 1) * steps, steps);
    BlockMetrics b = ComputeBlockMetrics(st, log.block_ns[epoch - 1], cfg.batch_size, cfg.metric_exclude_start_steps,
                                         cfg.metric_exclude_end_steps);
    au += b.au;
    tp += Traits(cfg.rules).throughput_counts_window ? b.throughput_corrected : b.throughput;  // (the table's formula)
    for (const auto& x : st) bytes += static_cast<double>(x.bytes);
    secs = std::max(secs, static_cast<double>(log.block_ns[epoch - 1]) / 1e9);
  }
  double n = comm.SumDouble(static_cast<double>(logs.size()));
  au = comm.SumDouble(au);
  tp = comm.SumDouble(tp);
  bytes = comm.SumDouble(bytes);
  secs = comm.MaxDouble(secs);
  if (!comm.root() || out == nullptr) return;
  const double mib = secs > 0 ? bytes / 1048576.0 / secs : 0.0;
  if (out->mode() == ProgressMode::kJsonEvents) {
    out->Emit(nlohmann::json{{"event", "epoch"}, {"epoch", epoch}, {"epochs", cfg.epochs}, {"au_pct", 100 * au / n},
                             {"samples_per_s", tp}, {"read_mib_per_s", mib}, {"seconds", secs}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  char line[160];
  std::snprintf(line, sizeof line, "epoch %llu/%llu: AU %.2f%%, %.2f samples/s, read %.1f MiB/s, %.2f s",
                static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(cfg.epochs), 100 * au / n, tp, mib, secs);
  out->Emit(line);
}

}  // namespace feedrate
