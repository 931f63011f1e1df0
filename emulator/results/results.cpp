// Result files and the console table.
#include "emulator/results/results.h"

#include "emulator/results/dlio_output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "emulator/host/sysinfo.h"
#include "emulator/results/validity.h"
#include "loader/io/fault_injection.h"
#include "loader/io/safe_file.h"
#include "loader/util/dlio_edition.h"
#include "loader/util/output_text.h"
#include "loader/util/units.h"

namespace feedrate {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

uint64_t TotalBytes(const RunMetrics& m) {
  uint64_t b = 0;
  for (auto x : m.bytes) b += x;
  return b;
}

double TotalSeconds(const RunMetrics& m) {
  double s = 0;
  for (auto x : m.epoch_seconds) s += x;
  return s;
}

namespace {


nlohmann::json Percentiles(const std::vector<double>& v) {
  return {{"p50", Percentile(v, 50)}, {"p90", Percentile(v, 90)}, {"p99", Percentile(v, 99)},
          {"max", Percentile(v, 100)}, {"mean", Mean(v)}, {"count", v.size()}};
}

// Per host: its ranks' facts (DLIO lists host_cpu_count etc. per node).
std::map<std::string, std::vector<const RankInfo*>> ByHost(const RunRecord& r) {
  std::map<std::string, std::vector<const RankInfo*>> hosts;
  for (const auto& ri : r.rank_info) hosts[ri.hostname].push_back(&ri);
  return hosts;
}


}  // namespace

// The resolved workload tree as JSON, scalars typed the way YAML 1.1 reads them (bool, int, float, string).
nlohmann::json YamlToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (auto it = n.begin(); it != n.end(); ++it) {
      o[it->first.IsScalar() ? it->first.as<std::string>() : YAML::Dump(it->first)] = YamlToJson(it->second);
    }
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : n) a.push_back(YamlToJson(x));
    return a;
  }
  if (!n.IsScalar()) return nullptr;
  const std::string& v = n.Scalar();
  if (n.Tag() == "!" || v.empty()) return v;  // quoted strings stay strings
  bool b;
  if (YAML::convert<bool>::decode(n, b)) return b;
  int64_t i;
  if (YAML::convert<int64_t>::decode(n, i)) return i;
  double d;
  if (YAML::convert<double>::decode(n, d)) return d;
  return v;
}

namespace {
std::string UtcNow(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}
}  // namespace

std::string NowIso8601() { return UtcNow("%Y-%m-%dT%H:%M:%SZ"); }
std::string NowCompact() { return UtcNow("%Y%m%dT%H%M%SZ"); }

namespace {

// Per host: its ranks and accelerators, delivered MiB/s (its bytes per epoch over the epoch's slowest block,
// averaged over epochs), AU spread over its accelerators and epochs, CPU utilisation of the training loop, and
// how much later than the earliest host it entered the training loop.
nlohmann::json HostFigures(const RunRecord& r, const std::map<std::string, std::vector<const RankInfo*>>& hosts) {
  using nlohmann::json;
  double first_start = 0;
  for (const auto& ri : r.rank_info) {
    if (ri.train_start_unix > 0 && (first_start == 0 || ri.train_start_unix < first_start)) first_start = ri.train_start_unix;
  }
  json out = json::array();
  for (const auto& [name, ranks] : hosts) {
    double start = 0, cpu = 0, allowed = 0, net_rx = 0;
    std::vector<double> au;
    std::vector<double> bytes, secs;  // per epoch
    for (const RankInfo* ri : ranks) {
      if (ri->train_start_unix > 0 && (start == 0 || ri->train_start_unix < start)) start = ri->train_start_unix;
      cpu += ri->train_cpu_seconds;
      allowed += ri->allowed_cpus;
      net_rx += static_cast<double>(ri->net_rx_bytes);
      for (uint64_t a = 0; a < r.accelerators_per_rank; ++a) {
        const size_t idx = static_cast<size_t>(ri->rank) * r.accelerators_per_rank + a;
        if (idx >= r.per_accelerator.size()) continue;
        const auto& eps = r.per_accelerator[idx];
        if (bytes.size() < eps.size()) {
          bytes.resize(eps.size(), 0);
          secs.resize(eps.size(), 0);
        }
        for (size_t e = 0; e < eps.size(); ++e) {
          au.push_back(100 * eps[e].block.au);
          bytes[e] += static_cast<double>(eps[e].bytes);
          secs[e] = std::max(secs[e], eps[e].seconds);
        }
      }
    }
    double mib = 0;
    for (size_t e = 0; e < bytes.size(); ++e) mib += secs[e] > 0 ? bytes[e] / kMiB / secs[e] : 0;
    if (!bytes.empty()) mib /= static_cast<double>(bytes.size());
    double block_seconds = 0;  // the window the host leader's network counter covers (net_rx_bytes)
    for (double x : secs) block_seconds += x;
    const double usable = std::min(static_cast<double>(ranks.front()->host_cpu_count), allowed);
    json h = {{"hostname", name},
              {"ranks", ranks.size()},
              {"accelerators", ranks.size() * r.accelerators_per_rank},
              {"read_mib_per_s", mib},
              {"net_rx_mib_per_s", block_seconds > 0 ? net_rx / kMiB / block_seconds : 0.0},
              {"au_min_pct", au.empty() ? 0.0 : *std::min_element(au.begin(), au.end())},
              {"au_mean_pct", Mean(au)},
              {"au_max_pct", au.empty() ? 0.0 : *std::max_element(au.begin(), au.end())},
              {"cpu_utilisation", usable > 0 && r.wall_seconds > 0 ? std::min(1.0, cpu / (r.wall_seconds * usable)) : 0.0},
              {"start_skew_seconds", start > 0 && first_start > 0 ? start - first_start : 0.0}};
    for (const RankInfo* ri : ranks) {  // the host leader's reading of the whole host (host_cpu.h)
      if (!ri->host_cpu.empty()) h["host_cpu"] = ri->host_cpu;
    }
    out.push_back(h);
  }
  return out;
}

// The step agreement: the mode used and both modes' calibrated cost per step (rank 0's clock, microseconds).
nlohmann::json StepBarrierFigures(const RunRecord& r) {
  auto us = [](std::vector<double> v) {
    for (double& x : v) x *= 1e6;
    return v.empty() ? nlohmann::json(nullptr) : Percentiles(v);
  };
  return {{"mode", r.step_barrier_mode.empty() ? "flat" : r.step_barrier_mode},
          {"hosts", r.num_hosts},
          {"calibration_flat_us", us(r.barrier_flat_s)},
          {"calibration_hierarchical_us", us(r.barrier_hierarchical_s)},
          {"note", "one step's agreement timed while every rank is ready (no waiting); barrier_seconds adds the "
                   "waiting for the slowest accelerator"}};
}

using HostMap = decltype(ByHost(std::declval<const RunRecord&>()));

// DLIO's top-level keys: the run, the dataset, the hosts, and (for a completed run) its metric block.
nlohmann::json DlioTopLevel(const RunRecord& r, const HostMap& hosts, double per_host_gb, bool completed) {
  using nlohmann::json;
  const WorkloadConfig& c = *r.cfg;
  const RunMetrics& m = r.metrics;
  json host_cpu = json::array(), host_mem = json::array(), host_proc = json::array(), caching = json::array();
  for (const auto& [name, ranks] : hosts) {
    host_cpu.push_back(ranks.front()->host_cpu_count);
    double mem_gb = static_cast<double>(ranks.front()->host_mem_bytes) / kGiB;
    host_mem.push_back(mem_gb);
    host_proc.push_back(ranks.front()->processor);
    caching.push_back(mem_gb > per_host_gb ? 1 : 0);
  }
  json s;
  s["start"] = r.start_iso;
  s["end"] = r.end_iso;
  s["num_accelerators"] = static_cast<uint64_t>(r.ranks) * r.accelerators_per_rank;
  s["num_hosts"] = hosts.size();
  s["hostname"] = r.rank_info.empty() ? "" : r.rank_info.front().hostname;
  s["num_files_train"] = c.num_files_train;
  s["num_files_eval"] = c.num_files_eval;
  s["num_samples_per_file"] = c.num_samples_per_file;
  s["host_cpu_count"] = host_cpu;
  s["host_memory_GB"] = host_mem;
  s["host_processor_name"] = host_proc;
  s["potential_caching"] = caching;
  s["data_size_per_host_GB"] = per_host_gb;
  s["epochs"] = c.epochs;
  if (completed) {
    s["metric"] = {
        {"train_au_percentage", m.au_pct},
        {"train_au_mean_percentage", m.au_mean_pct},
        {"train_au_stdev_percentage", m.au_stdev_pct},
        {"train_au_meet_expectation", m.meets_au ? "success" : "fail"},
        {"train_throughput_samples_per_second", m.throughput},
        {"train_throughput_mean_samples_per_second", m.throughput_mean},
        {"train_throughput_stdev_samples_per_second", m.throughput_stdev},
        {"train_io_mean_MB_per_second", m.io_mean_mib},
        {"train_io_stdev_MB_per_second", m.io_stdev_mib},
    };
    if (!m.eval.epochs.empty()) {  // DLIO's eval_* keys, one entry per evaluation pass
      s["metric"]["eval_au_percentage"] = m.eval.au_pct;
      s["metric"]["eval_au_mean_percentage"] = m.eval.au_mean_pct;
      s["metric"]["eval_au_stdev_percentage"] = m.eval.au_stdev_pct;
      s["metric"]["eval_throughput_samples_per_second"] = m.eval.throughput;
      s["metric"]["eval_throughput_mean_samples_per_second"] = m.eval.throughput_mean;
      s["metric"]["eval_throughput_stdev_samples_per_second"] = m.eval.throughput_stdev;
      s["metric"]["eval_io_mean_MB_per_second"] = m.eval.io_mean_mib;
      s["metric"]["eval_io_stdev_MB_per_second"] = m.eval.io_stdev_mib;
    }
  }
  return s;
}

// How the run was set up: engine, ranks, threads, order, checks, buffers.
// What set-up asked of the storage before the timed window: rank 0's (the record's) at the top, then every rank's
// (from the gathered facts; a run that failed in set-up has rank 0's only) and their total.
nlohmann::json SetupReadsJson(const RunRecord& r) {
  auto one = [](uint64_t stats, uint64_t opens, uint64_t reads, uint64_t bytes) {
    return nlohmann::json{{"files_stat", stats}, {"files_opened", opens}, {"reads", reads}, {"bytes", bytes}};
  };
  nlohmann::json j = one(r.setup_stats, r.setup_opens, r.setup_reads, r.setup_bytes);
  j["rank"] = 0;
  nlohmann::json ranks = nlohmann::json::array();
  uint64_t t[4] = {0, 0, 0, 0};
  for (const RankInfo& ri : r.rank_info) {
    nlohmann::json x = one(ri.setup_stats, ri.setup_opens, ri.setup_reads, ri.setup_bytes);
    x["rank"] = ri.rank;
    ranks.push_back(std::move(x));
    t[0] += ri.setup_stats, t[1] += ri.setup_opens, t[2] += ri.setup_reads, t[3] += ri.setup_bytes;
  }
  if (!ranks.empty()) {
    j["ranks"] = std::move(ranks);
    j["total"] = one(t[0], t[1], t[2], t[3]);
  }
  j["note"] =
      "requests set-up made of the storage before the timed window (top: rank 0's): files stat'ed (metadata "
      "only), files opened to read headers or probe the page cache, and the reads and bytes those made";
  return j;
}

// v3.0's pre-warm passes (TrainerOptions::prewarm_batches): every rank's batches and bytes, the longest time.
nlohmann::json PrewarmJson(const RunRecord& r) {
  const WorkloadConfig& c = *r.cfg;
  uint64_t batches = 0, bytes = 0;
  double seconds = 0;
  for (const RankInfo& ri : r.rank_info) {
    batches += ri.prewarm_batches, bytes += ri.prewarm_bytes;
    seconds = std::max(seconds, ri.prewarm_seconds);
  }
  const DlioEditionTraits& t = Traits(c.rules);
  const std::string note =
      r.prewarm_batches > 0
          ? std::string(t.dlio) +
                " pre-warms its DataLoader before each epoch's page-cache flush and after the last "
                "epoch: each accelerator reads its next epoch's first batch of each DataLoader worker and worker "
                "0's second, outside the AU window (every rank's batches and bytes; the longest accelerator's seconds)"
      : !t.restart_workers ? std::string(t.dlio) + " keeps its DataLoader workers and pre-warms nothing"
                           : "not replayed for this loader (TensorFlow, or S3's iterable readers)";
  return {{"batches_per_accelerator_pass", r.prewarm_batches},
          {"batches", batches},
          {"bytes", bytes},
          {"seconds", seconds},
          {"note", note}};
}

nlohmann::json RunSetupFigures(const RunRecord& r) {
  using nlohmann::json;
  const WorkloadConfig& c = *r.cfg;
  json f;
  f["status"] = r.status;
  if (!r.error.empty()) f["error"] = r.error;
  f["version"] = r.version;
  f["workload"] = c.name;
  f["workload_source"] = c.source;
  f["engine"] = r.engine;
  f["engine_detail"] = r.engine_description;
  f["io_thread_policy"] = r.io_thread_policy;
  f["odirect"] = c.odirect;
  f["queue_depth"] = r.queue_depth;
  f["ranks"] = r.ranks;
  f["accelerators_per_rank"] = r.accelerators_per_rank;
  f["io_threads_per_rank"] = r.io_threads_per_rank;
  f["access_pattern"] = r.access_pattern;
  f["access_pattern_reason"] = r.access_reason;
  f["worker_collate"] = {{"enabled", c.worker_collate && c.data_loader == DataLoader::kPyTorch}, {"rank", 0},
                         {"batches", r.collates},
                         {"seconds_per_batch", r.collates > 0 ? r.collate_seconds / static_cast<double>(r.collates) : 0.0},
                         {"note", "each DataLoader worker's lane copies its batch's resized images (the bytes DLIO's "
                                  "PyTorch worker collates) after the batch's reads, in series with its next sample "
                                  "(feedrate.worker_collate)"}};
  f["setup_reads"] = SetupReadsJson(r);
  f["prewarm"] = PrewarmJson(r);
  f["batches_in_flight_per_accelerator"] = r.batches_in_flight > 0 ? r.batches_in_flight : c.batches_in_flight;
  f["steps_per_epoch"] = r.steps_per_epoch;
  f["file_open_mode"] = r.file_open_mode;
  f["order"] = c.order == SampleOrder::kShuffled ? std::string("shuffled")
                                                 : std::string("dlio_v2.0_") + Name(c.data_loader);
  f["retain_batches"] = r.retain_batches;
  f["sample_check"] = r.sample_check;
  f["coalesce_reads_bytes"] = r.coalesce_bytes;
  f["transfer_size"] = c.transfer_size;
  f["buffer_bytes_per_rank"] = r.buffer_bytes_per_rank;
  f["dataset_bytes"] = r.dataset_bytes;
  f["wall_seconds"] = r.wall_seconds;
  f["setup_seconds"] = r.setup_seconds;
  f["setup_peak_rss_mib"] = r.setup_peak_rss_mib;
  // Every rank's set-up cost: its peak resident set at the first step and the paths it kept (those of the files it
  // reads, not the whole listing).
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& ri : r.rank_info) {
    ranks.push_back({{"rank", ri.rank}, {"peak_rss_mib", ri.setup_peak_rss_mib}, {"files_held", ri.files_held},
                     {"file_list_bytes", ri.file_list_bytes}});
  }
  f["setup_per_rank"] = ranks;
  return f;
}

// What the training read (completed runs): bytes, rates, AU spread, amplification, stalls.
void ReadFigures(const RunRecord& r, nlohmann::json* out) {
  using nlohmann::json;
  const WorkloadConfig& c = *r.cfg;
  const RunMetrics& m = r.metrics;
  json& f = *out;
  uint64_t bytes = TotalBytes(m);
  double secs = TotalSeconds(m);
  f["bytes_read"] = bytes;  // training reads; evaluation reads are eval_bytes_read
  f["bytes_read_per_epoch"] = m.bytes;
  if (!m.eval.epochs.empty()) {
    uint64_t eval_bytes = 0;
    for (uint64_t b : m.eval.bytes) eval_bytes += b;
    f["eval_bytes_read"] = eval_bytes;
    f["eval_after_epochs"] = m.eval.epochs;
  }
  f["epoch_seconds"] = m.epoch_seconds;
  f["read_mib_per_s"] = secs > 0 ? static_cast<double>(bytes) / kMiB / secs : 0.0;
  // Samples handed to accelerators over the epochs' wall time: no step excluded, robust to few steps.
  double samples = static_cast<double>(r.steps_per_epoch * c.batch_size * r.accelerators_per_rank) * r.ranks *
                   static_cast<double>(m.bytes.size());
  f["delivered_samples_per_s"] = secs > 0 ? samples / secs : 0.0;
  json per_epoch = json::array();
  for (size_t e = 0; e < m.bytes.size(); ++e) {
    per_epoch.push_back(m.epoch_seconds[e] > 0 ? static_cast<double>(m.bytes[e]) / kMiB / m.epoch_seconds[e] : 0.0);
  }
  f["read_mib_per_s_per_epoch"] = per_epoch;
  f["train_throughput_samples_per_second_corrected"] = m.throughput_corrected;
  f["throughput_note"] = Traits(c.rules).throughput_counts_window
                            ? "MLPerf Storage v3.0's DLIO counts the steps of the AU window (n - excluded); so does "
                              "the corrected value"
                            : "DLIO v2.0 counts (n-2) steps over a window that excludes only the first step; the "
                              "corrected value counts the steps the window covers";
  f["rules"] = {{"edition", Name(c.rules)}, {"rules", Traits(c.rules).rules}, {"dlio", Traits(c.rules).dlio}};
  f["au_min"] = m.au_min_pct_overall;
  f["au_max"] = m.au_max_pct_overall;
  f["au_min_per_epoch"] = m.au_min_pct;
  f["au_max_per_epoch"] = m.au_max_pct;
  uint64_t device = 0, requeued = 0;
  for (const auto& ri : r.rank_info) {
    device += ri.engine_bytes;
    requeued += ri.requeued;
  }
  f["engine_bytes_read"] = device;  // what the engine asked the kernel for (O_DIRECT windows included)
  f["read_amplification"] = bytes > 0 ? static_cast<double>(device) / static_cast<double>(bytes) : 0.0;
  f["requeued_reads"] = requeued;
  f["stall_seconds"] = Percentiles(r.stall_seconds);
  f["barrier_seconds"] = Percentiles(r.barrier_seconds);
  }

// The client's CPU: per rank affinity, seconds in all, in training, checking samples.
void CpuFigures(const RunRecord& r, bool completed, nlohmann::json* out) {
  using nlohmann::json;
  const RunMetrics& m = r.metrics;
  json& f = *out;
  double cpu = 0, check = 0, train_cpu = 0;
  json affinity = json::array();
  for (const auto& ri : r.rank_info) {
    cpu += ri.cpu_seconds;
    check += ri.check_seconds;
    train_cpu += ri.train_cpu_seconds;
    affinity.push_back({{"rank", ri.rank}, {"host", ri.hostname}, {"cpus", ri.cpus}, {"allowed_cpus", ri.allowed_cpus},
                        {"threads", ri.threads}, {"narrower_than_threads", ri.allowed_cpus < ri.threads}});
  }
  f["cpu_affinity"] = affinity;
  f["cpu_seconds"] = cpu;
  f["train_cpu_seconds"] = train_cpu;  // during the training loop only, all ranks
  // Time the I/O threads spent checking or decoding samples once read (0 when sample_check is "none").
  f["sample_check_seconds"] = check;
  if (completed && TotalBytes(m) > 0) f["cpu_seconds_per_gib"] = cpu / (static_cast<double>(TotalBytes(m)) / kGiB);
}

// mlpstorage v2.0 rule checks, and the injected faults per rule; returns the facts the checks used.
RunFacts ValidityFigures(const RunRecord& r, const HostMap& hosts, nlohmann::json* out) {
  const WorkloadConfig& c = *r.cfg;
  nlohmann::json& f = *out;
  RunFacts facts;
  facts.accelerators = static_cast<uint64_t>(r.ranks) * r.accelerators_per_rank;
  for (const auto& [name, ranks] : hosts) {
    facts.accelerators_per_host.push_back(ranks.size() * r.accelerators_per_rank);
    facts.client_memory_bytes += r.client_memory_gib > 0 ? r.client_memory_gib * kGiB
                                                         : static_cast<double>(ranks.front()->host_mem_bytes);
  }
  facts.injected_faults = r.inject;
  f["validity"] = CheckTrainingRun(c, facts).ToJson();
  f["validity"]["client_memory_GB_per_host"] =
      r.client_memory_gib > 0 ? r.client_memory_gib : hosts.empty() ? 0.0 : facts.client_memory_bytes / kGiB / static_cast<double>(hosts.size());
  f["validity"]["client_memory_from"] = r.client_memory_gib > 0 ? "--client-host-memory-in-gb" : "each host's MemTotal";
  if (!r.inject.empty()) {
    // Per rule, summed over ranks: the reads it matched and the faults it injected.
    auto plan = ParseFaultPlan(r.inject);
    nlohmann::json rules = nlohmann::json::array();
    for (size_t i = 0; plan.ok() && i < plan->rules.size(); ++i) {
      uint64_t matched = 0, injected = 0;
      for (const auto& ri : r.rank_info) {
        if (i < ri.faults_matched.size()) matched += ri.faults_matched[i];
        if (i < ri.faults_injected.size()) injected += ri.faults_injected[i];
      }
      rules.push_back({{"rule", plan->rules[i].text}, {"matched", matched}, {"injected", injected}});
    }
    f["injected_faults"] = rules;
  }
  return facts;
}

}  // namespace

nlohmann::json BuildSummary(const RunRecord& r) {
  using nlohmann::json;
  auto hosts = ByHost(r);
  const double per_host_gb = hosts.empty() ? 0 : r.dataset_bytes / static_cast<double>(hosts.size()) / kGiB;
  const bool completed = CompletedStatus(r.status);
  json s = DlioTopLevel(r, hosts, per_host_gb, completed);
  json f = RunSetupFigures(r);
  if (completed) ReadFigures(r, &f);
  CpuFigures(r, completed, &f);
  const RunFacts facts = ValidityFigures(r, hosts, &f);
  f["hosts"] = HostFigures(r, hosts);
  f["step_barrier"] = StepBarrierFigures(r);
  f["end_gather"] = {{"bytes", r.gather_bytes}, {"seconds", r.gather_seconds},
                     {"note", "bytes rank 0 received at the end (every step's stall, compute and barrier time, every rank's facts; "
                              "time series not counted) and the seconds that took (time series included)"}};
  f["host_facts"] = HostManifest(r);
  AddStorageFigures(r, completed, &f);
  const double ratio = facts.client_memory_bytes > 0 ? r.dataset_bytes / facts.client_memory_bytes : 0;
  f["dataset_to_memory_ratio"] = ratio;
  // The page cache a client can fill: its memory, or its cgroup's limit when lower (a container). The size rule and
  // the ratio above count the host's memory, as mlpstorage does.
  const RankInfo* first = hosts.empty() ? nullptr : hosts.begin()->second.front();
  const uint64_t limit = first != nullptr ? first->cgroup_limit_bytes : 0;
  const double cache_gb = first == nullptr ? 0 : static_cast<double>(CacheableMemory(first->host_mem_bytes, limit)) / kGiB;
  f["page_cache"] = {
      {"dataset_to_memory_ratio", ratio},
      {"dataset_per_host_GB", per_host_gb},
      {"cache_memory_per_host_GB", cache_gb},
      {"cgroup_limit_GB", static_cast<double>(limit) / kGiB},
      {"warning", first != nullptr && per_host_gb < 5 * cache_gb},
      {"note", "the page cache may serve reads when the dataset per client is smaller than 5x the memory its cache can "
               "fill (the host's, or the cgroup's limit when lower)"}};
  f["warnings"] = r.warnings;
  f["config"] = YamlToJson(r.cfg->tree);
  s["feedrate"] = f;
  if (r.dlio != nullptr && completed) AddDlioSummaryFields(r, &s);
  return s;
}

namespace {
Status WriteRecordFiles(const RunRecord& r, const nlohmann::json& summary);

// summary.json's text. A string that is not UTF-8 (a Latin-1 folder or host name, legal on Linux) is written with
// U+FFFD where it is not, and the fields are named in the summary's warnings and, once, on stderr.
Status WriteSummaryFile(const std::string& dir, nlohmann::json s) {
  const std::vector<std::string> bad = InvalidUtf8Fields(s);
  if (!bad.empty()) {
    std::string fields;
    for (const auto& f : bad) fields += (fields.empty() ? "" : ", ") + f;
    const std::string w = "not valid UTF-8, written with U+FFFD in its place: " + fields;
    s["feedrate"]["warnings"].push_back(w);
    static bool said = false;
    if (!said) std::fprintf(stderr, "feedrate: warning: %s/summary.json: %s\n", PlainText(dir).c_str(), PlainText(w).c_str());
    said = true;
  }
  return WriteFileSafely(dir + "/summary.json", DumpJson(s, 2) + "\n");
}
}  // namespace

Status WriteRunningSummary(const RunRecord& r) {
  RunRecord running = r;
  running.status = kStatusRunning;
  return WriteSummaryFile(r.results_dir, BuildSummary(running));
}

// summary.json goes last, after every other file: until then it says "running" (WriteRunningSummary), so a run
// killed or failing while writing its results is never success-shaped. When another file cannot be written, the
// summary says so (best effort: the disk may be full) and the error is returned.
Status WriteRunResults(const RunRecord& r) {
  const nlohmann::json summary = BuildSummary(r);
  Status st = WriteRecordFiles(r, summary);
  if (st.ok()) return WriteSummaryFile(r.results_dir, summary);
  RunRecord failed = r;
  failed.status = kStatusFailed;
  failed.error = "the results could not be written: " + st.ToString();
  (void)WriteSummaryFile(r.results_dir, BuildSummary(failed));
  return st;
}

namespace {

// Every record file but summary.json.
// A run started as DLIO (`feedrate dlio`) writes only what DLIO writes into its hydra.run.dir (its rank files, and
// summary.json last): that folder is mlpstorage's or the user's, and the summary's "feedrate" object holds the rest.
Status WriteRecordFiles(const RunRecord& r, const nlohmann::json& summary) {
  const std::string dir = r.results_dir + "/";
  if (r.dlio != nullptr) return CompletedStatus(r.status) ? WriteDlioRunFiles(r) : Status::Ok();
  if (!r.timeseries_csv.empty()) FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(dir + "timeseries.csv", r.timeseries_csv));
  FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(dir + "config.yaml", "# Resolved workload (" + r.cfg->source +
                                                                   ") after aliases and overrides\n" +
                                                                   YAML::Dump(r.cfg->tree) + "\n"));
  const RunMetrics& m = r.metrics;
  std::ostringstream csv;
  csv << "epoch,train_au_percentage,au_min_percentage,au_max_percentage,train_throughput_samples_per_second,"
         "throughput_corrected_samples_per_second,train_io_MB_per_second,bytes_read,read_mib_per_second,seconds,"
         "resident_fraction,device_bytes_read\n";
  const nlohmann::json* epoch_json = summary["feedrate"].contains("epochs") ? &summary["feedrate"]["epochs"] : nullptr;
  auto cell = [](const nlohmann::json& v) { return v.is_null() ? std::string() : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
  for (size_t e = 0; e < m.au_pct.size(); ++e) {
    double read = m.epoch_seconds[e] > 0 ? static_cast<double>(m.bytes[e]) / kMiB / m.epoch_seconds[e] : 0;
    csv << e + 1 << "," << m.au_pct[e] << "," << m.au_min_pct[e] << "," << m.au_max_pct[e] << "," << m.throughput[e]
        << "," << m.throughput_corrected[e] << "," << m.throughput[e] * r.cfg->record_length / kMiB << "," << m.bytes[e]
        << "," << read << "," << m.epoch_seconds[e] << ","
        << (epoch_json != nullptr && e < epoch_json->size() ? cell((*epoch_json)[e]["resident_fraction"]) + "," +
                                                          cell((*epoch_json)[e]["device_bytes_read"])
                                                    : ",")
        << "\n";
  }
  FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(dir + "per_epoch.csv", csv.str()));
  // Per step of every accelerator (gathered in rank, accelerator, epoch, step order): the stall histogram and
  // timeline of `feedrate report` come from here.
  const size_t steps = r.steps_per_epoch, epochs = m.au_pct.size();
  if (steps > 0 && epochs > 0 && r.stall_seconds.size() == r.barrier_seconds.size() &&
      r.stall_seconds.size() % (steps * epochs) == 0) {
    std::ostringstream st;
    st << "accelerator,epoch,step,stall_seconds,barrier_seconds\n";
    for (size_t i = 0; i < r.stall_seconds.size(); ++i) {
      st << i / (steps * epochs) << "," << i / steps % epochs + 1 << "," << i % steps + 1 << "," << r.stall_seconds[i] << ","
         << r.barrier_seconds[i] << "\n";
    }
    FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(dir + "steps.csv", st.str()));
  }

  // Every value written here as markdown text (output_text.h): a name with a line break or markup stays a value.
  const auto md_text = [](const std::string& v) { return MarkdownText(v); };
  std::ostringstream md;
  md << "# Feedrate run: " << md_text(r.cfg->name) << "\n\n";
  md << "- status: **" << r.status << "**" << (r.error.empty() ? "" : " (" + md_text(r.error) + ")") << "\n";
  md << "- started " << r.start_iso << ", ended " << r.end_iso << "\n";
  md << "- workload: " << md_text(r.cfg->source) << ", data: " << md_text(r.cfg->DataLocation()) << "\n";
  md << "- accelerators: " << r.ranks * r.accelerators_per_rank << " (" << r.ranks << " rank(s) x "
     << r.accelerators_per_rank << "), engine " << md_text(r.engine) << ", " << r.io_threads_per_rank
     << " I/O threads per rank, files " << md_text(r.file_open_mode) << "\n";
  std::set<std::string> hosts;
  for (const auto& ri : r.rank_info) hosts.insert(ri.hostname);
  md << "- hosts: " << hosts.size() << "\n\n";
  if (CompletedStatus(r.status)) {
    md << "```" << FormatResultTable(r) << "```\n\n";
    md << "AU is DLIO v2.0's (first step of each epoch excluded). \"MiB/s (DLIO)\" is throughput x the nominal "
          "record length, as DLIO reports it; \"MiB/s read\" counts the bytes Feedrate really read.\n";
  }
  if (!r.warnings.empty()) {
    md << "\n## Warnings\n\n";
    for (const auto& w : r.warnings) md << "- " << md_text(w) << "\n";
  }
  return WriteFileSafely(dir + "report.md", md.str());
}

}  // namespace
}  // namespace feedrate
