// summary.json's figures about what served the bytes: cache control, per-epoch residency and MiB/s (cold vs
// warm), device-level bytes against loader bytes, read latency, the time series, and the run manifest.
#include <algorithm>
#include <cmath>

#include "emulator/host/sysinfo.h"
#include "emulator/results/results.h"
#include "loader/util/latency_histogram.h"
#include "loader/util/units.h"

namespace feedrate {
namespace {


std::string Gib(double bytes) {
  char b[48];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / kGiB);
  return b;
}

using nlohmann::json;

// Cache control, over ranks: every rank evicts its own files; the first drop is checked on sampled files.
json CacheFigures(const RunRecord& r) {
  uint64_t drops = 0, checked = 0, before = 0, after = 0;
  double drop_s = 0;
  json system_drop = json::array();
  for (const auto& ri : r.rank_info) {
    const json& c = ri.cache;
    if (!c.is_object() || !c.contains("drops")) continue;
    drops = std::max<uint64_t>(drops, c["drops"].get<uint64_t>());
    drop_s = std::max(drop_s, c["drop_seconds"].get<double>());
    if (c.contains("checked_bytes")) {
      checked += c["checked_bytes"].get<uint64_t>();
      before += c["resident_before"].get<uint64_t>();
      after += c["resident_after"].get<uint64_t>();
    }
    if (c["system_drop"] != "not asked" && c["system_drop"] != "done by another rank of this host") {
      system_drop.push_back({{"host", ri.hostname}, {"result", c["system_drop"]}});
    }
  }
  json cache = {{"mode", r.cache_mode}, {"scope", r.cache_scope}, {"drops", drops}, {"drop_seconds_max_rank", drop_s}};
  if (checked > 0) {
    const double b = static_cast<double>(before) / static_cast<double>(checked);
    const double a = static_cast<double>(after) / static_cast<double>(checked);
    cache["check"] = {{"sampled_bytes", checked}, {"resident_before", b}, {"resident_after", a},
                      {"effective", a <= 0.02},
                      {"how", "whole-file mincore() residency of up to 16 files per rank before and after the first drop"}};
  }
  if (!system_drop.empty()) cache["system_drop"] = system_drop;
  return cache;
}

// Device counters: one rank per host reads them (they are host-wide); per epoch, from after the drop to the end
// of the training block. Returns the hosts' devices; `dev_epoch` gets the bytes per epoch over hosts.
json DeviceFigures(const RunRecord& r, std::vector<double>* dev_epoch, bool* any_counter) {
  json devices = json::array();
  for (const auto& ri : r.rank_info) {
    const json& s = ri.storage;
    if (!s.is_object() || !s.value("host_leader", false)) continue;
    json d = {{"host", ri.hostname}, {"kind", s.value("kind", "none")}, {"device", s.value("device", "")},
              {"model", s.value("model", "")}};
    if (s.value("kind", "none") != "none" && s.contains("epoch_bytes")) {
      *any_counter = true;
      double bytes = 0, requests = 0;
      const auto eb = s["epoch_bytes"].get<std::vector<double>>();
      const auto er = s["epoch_requests"].get<std::vector<double>>();
      if (dev_epoch->size() < eb.size()) dev_epoch->resize(eb.size(), 0);
      for (size_t e = 0; e < eb.size(); ++e) {
        (*dev_epoch)[e] += eb[e];
        bytes += eb[e];
      }
      for (double x : er) requests += x;
      d["bytes_read"] = bytes;
      d["read_requests"] = requests;
    }
    devices.push_back(d);
  }
  return devices;
}

// The S3 engine's requests over ranks (S3 datasets only).
json S3Figures(const RunRecord& r) {
  double gets = 0, retries = 0, in_flight = 0;
  for (const auto& ri : r.rank_info) {
    if (!ri.storage.is_object() || !ri.storage.contains("s3")) continue;
    gets += ri.storage["s3"].value("get_requests", 0.0);
    retries += ri.storage["s3"].value("retries", 0.0);
    in_flight = std::max(in_flight, ri.storage["s3"].value("max_gets_in_flight", 0.0));
  }
  return {{"location", r.cfg->DataLocation()}, {"endpoint", r.cfg->s3_endpoint}, {"get_requests", gets},
          {"retries", retries}, {"max_gets_in_flight_per_rank", in_flight},
          {"note", "ranged GETs the S3 engine sent over all ranks during training (retries of 5xx/SlowDown/dropped "
                   "connections included); the client has no page cache, so every byte came over HTTP"}};
}

// Per epoch: bytes, MiB/s, the sampled page-cache residency and the devices' bytes; cold against warm.
void EpochFigures(const RunRecord& r, const std::vector<double>& dev_epoch, bool any_counter, double dev_total, json* out) {
  json& f = *out;
  const RunMetrics& m = r.metrics;
  json epochs = json::array();
  double loader_total = 0;
  for (size_t e = 0; e < m.bytes.size(); ++e) {
    const double secs = m.epoch_seconds[e];
    const double mib = secs > 0 ? static_cast<double>(m.bytes[e]) / kMiB / secs : 0.0;
    loader_total += static_cast<double>(m.bytes[e]);
    json ep = {{"epoch", e + 1}, {"seconds", secs}, {"bytes_read", m.bytes[e]}, {"read_mib_per_s", mib}};
    if (r.cache_mode == "direct") {
      ep["resident_fraction"] = 0.0;  // O_DIRECT reads never come from the page cache
    } else if (r.cache_mode == "s3") {
      ep["resident_fraction"] = nullptr;  // no client page cache: GETs go to the store every time
    } else if (e < m.probed_bytes.size() && m.probed_bytes[e] > 0) {
      ep["resident_fraction"] = static_cast<double>(m.resident_bytes[e]) / static_cast<double>(m.probed_bytes[e]);
      ep["probed_bytes"] = m.probed_bytes[e];
    } else {
      ep["resident_fraction"] = nullptr;
    }
    ep["device_bytes_read"] = any_counter && e < dev_epoch.size() ? json(dev_epoch[e]) : json(nullptr);
    epochs.push_back(ep);
  }
  f["epochs"] = epochs;
  f["resident_fraction_note"] =
      "share of the bytes read that were in the client's page cache just before the read, looked up by the I/O "
      "thread on a sample of the read requests (every request for small epochs, about 512 per accelerator and "
      "epoch otherwise) with cachestat(2), or mincore() on a window of at most 32 pages where the kernel has no "
      "cachestat (residency_probe.method)";
  f["cold_read_mib_per_s"] = epochs.empty() ? json(nullptr) : epochs[0]["read_mib_per_s"];
  double warm = 0;
  for (size_t e = 1; e < epochs.size(); ++e) warm += epochs[e]["read_mib_per_s"].get<double>();
  f["warm_read_mib_per_s"] = epochs.size() > 1 ? json(warm / static_cast<double>(epochs.size() - 1)) : json(nullptr);
  f["cold_warm_note"] = r.cache_mode == "s3"
                            ? "S3: cold = epoch 1 (first touch of every object), warm = the mean of the later epochs "
                              "(repeat reads: whatever the store caches; the client keeps nothing between epochs)"
                            : "cold = epoch 1, warm = the mean of the later epochs (steady state); with --cache drop every "
                              "epoch starts cold, as resident_fraction shows";
  if (any_counter) {
    f["loader_vs_device"] = "loader read " + Gib(loader_total) + ", devices delivered " + Gib(dev_total);
  }
}

// Read latency over the whole run: every rank's histogram merged (per sample read, io_stats.h buckets).
void LatencyFigures(const RunRecord& r, json* out) {
  json& f = *out;
  LatencyHistogram all;
  uint64_t reads = 0, max_ns = 0;
  for (const auto& ri : r.rank_info) {
    for (const auto& [b, n] : ri.latency_hist) {
      if (b < LatencyHistogram::kBuckets) all.counts()[b] += n;
      reads += n;
    }
    max_ns = std::max(max_ns, ri.latency_max_ns);
  }
  all.set_total_and_max(reads, max_ns);
  if (reads > 0) {
    auto us = [&](double pct) { return static_cast<double>(all.Percentile(pct)) / 1e3; };
    f["read_latency_us"] = {{"p50", us(50)}, {"p90", us(90)}, {"p99", us(99)}, {"p99.9", us(99.9)}, {"max", us(100)},
                            {"count", reads},
                            {"note", "one sample read (or coalesced run), from the I/O thread taking it to its last byte; "
                                     "bucket upper bounds, within 6%"}};
  }
}

}  // namespace

namespace {

// The path every rank took ("gds", "bounce"), or "mixed".
std::string CommonPath(const json& ranks) {
  std::string path;
  for (const auto& x : ranks) {
    const std::string p = x.value("path", "bounce");
    if (!path.empty() && p != path) return "mixed";
    path = p;
  }
  return path.empty() ? "bounce" : path;
}

json DevicePathText(const std::string& path, const json& ranks) {
  const std::string driver = ranks[0].contains("gds") ? ranks[0]["gds"].value("driver", std::string("driver unknown")) : "";
  if (path == "gds") {
    return "gds: GPUDirect Storage, cuFileRead from the O_DIRECT files straight into each accelerator's GPU memory (" +
           driver + "); nothing copied by Feedrate";
  }
  if (path == "cufile_compat" || path == "cufile_unknown") {
    return path + ": cuFileRead into each accelerator's GPU memory, but not GPUDirect (" + driver +
           "): cuFile itself reads into host memory and copies";
  }
  if (path == "mixed") return "mixed: the ranks took different paths (see ranks[].path and gds)";
  return "bounce: the engines read into page-locked host memory, then one cuMemcpyHtoDAsync per read on a stream per "
         "accelerator lands it in that accelerator's GPU memory";
}

}  // namespace

// run --accelerator-memory over every rank: the GPUs, and for device memory the path, what the copies moved and
// cost or what cuFile read into GPU memory.
nlohmann::json AcceleratorMemoryFigures(const RunRecord& r) {
  json a = {{"mode", r.accelerator_memory}};
  if (r.accelerator_memory == "host") {
    a["path"] = "host memory: each batch stays where the engine read it";
    return a;
  }
  uint64_t copies = 0, bytes = 0, gds_bytes = 0, device_buffer = 0;
  double copy_s = 0, stall_s = 0;
  json ranks = json::array();
  for (const auto& ri : r.rank_info) {
    const json& x = ri.accelerator_memory;
    if (!x.is_object() || !x.contains("gpus")) continue;
    copies += x.value("batches_copied", uint64_t{0});
    bytes += x.value("h2d_bytes", uint64_t{0});
    gds_bytes += x.value("gds_bytes", uint64_t{0});
    device_buffer += x.value("device_buffer_bytes", uint64_t{0});
    copy_s += x.value("copy_seconds", 0.0);
    stall_s += x.value("copy_stall_seconds", 0.0);
    json rank = {{"rank", ri.rank}, {"hostname", ri.hostname}, {"gpus", x["gpus"]},
                 {"accelerator_gpu", x["accelerator_gpu"]}, {"driver_version", x["driver_version"]},
                 {"library", x["library"]}, {"path", x.value("path", "bounce")}};
    if (x.contains("gds")) rank["gds"] = x["gds"];
    ranks.push_back(rank);
  }
  a["ranks"] = ranks;
  if (r.accelerator_memory == "pinned") {
    a["path"] = ranks.empty() ? "none: the run ended before its GPUs were set up"
                              : "pinned: the engines read into page-locked host memory (cuMemHostAlloc); nothing is copied";
    return a;
  }
  if (ranks.empty()) {  // the run failed before any rank had its GPUs
    a["path"] = "none: the run ended before its GPUs were set up";
    return a;
  }
  const std::string path = CommonPath(ranks);
  a["path"] = DevicePathText(path, ranks);
  a["gds_bytes"] = gds_bytes;
  a["batches_copied"] = copies;
  a["h2d_bytes"] = bytes;
  a["device_buffer_bytes"] = device_buffer;
  a["copy_seconds"] = copy_s;
  a["copy_stall_seconds"] = std::min(stall_s, copy_s);
  a["copy_overlapped_seconds"] = std::max(0.0, copy_s - stall_s);
  a["h2d_gib_per_s"] = copy_s > 0 ? static_cast<double>(bytes) / kGiB / copy_s : 0.0;
  a["note"] = "gds_bytes: bytes cuFile read into GPU memory (O_DIRECT windows included); copy_seconds: the GPU's time "
              "for the copies (events on each stream), summed over accelerators, so h2d_gib_per_s is one stream's "
              "rate, not the aggregate; copy_stall_seconds: the part the accelerator threads waited for after a "
              "batch's reads were done (inside each step's stall); the rest overlapped compute";
  return a;
}

// feedrate.compute over every rank: sleep, or the GPU kernels' launches and time against what was asked for.
nlohmann::json ComputeFigures(const RunRecord& r) {
  json c = {{"kind", r.cfg != nullptr ? Name(r.cfg->compute) : "sleep"}};
  if (r.cfg == nullptr || r.cfg->compute == ComputeKind::kSleep) {
    c["how"] = "each step's compute is a sleep to its drawn deadline (clock_nanosleep, then a short spin), as DLIO's";
    return c;
  }
  uint64_t launches = 0;
  double requested = 0, kernel = 0;
  json ranks = json::array();
  for (const auto& ri : r.rank_info) {
    const json& x = ri.accelerator_memory;
    if (!x.is_object() || !x.contains("compute")) continue;
    const json& k = x["compute"];
    launches += k.value("launches", uint64_t{0});
    requested += k.value("requested_seconds", 0.0);
    kernel += k.value("kernel_seconds", 0.0);
    ranks.push_back({{"rank", ri.rank}, {"hostname", ri.hostname}, {"accelerator_gpu", x["accelerator_gpu"]},
                     {"grid", k["grid"]}, {"block", k["block"]}, {"memory_bytes", k["memory_bytes"]}});
  }
  c["how"] = "each step's compute is the feedrate_spin kernel (loader/gpu/spin_kernel.ptx) on the accelerator's GPU, "
             "for what is left of the drawn time once the step's reads are queued; the accelerator thread waits for it";
  c["ranks"] = ranks;
  c["launches"] = launches;
  c["requested_seconds"] = requested;
  c["kernel_seconds"] = kernel;
  c["note"] = "kernel_seconds: the GPU's own time for the kernels (events around each), summed over accelerators; "
              "above requested_seconds by the launch latency and what delayed the kernels (copies, other work)";
  return c;
}

void AddStorageFigures(const RunRecord& r, bool completed, nlohmann::json* out) {
  json& f = *out;
  f["cache_mode"] = r.cache_mode;
  f["residency_probe"] = {{"method", r.residency}, {"every_nth_read", r.residency_every}};
  f["cache"] = CacheFigures(r);
  std::vector<double> dev_epoch;
  bool any_counter = false;
  f["devices"] = DeviceFigures(r, &dev_epoch, &any_counter);
  if (r.cache_mode == "s3") f["s3"] = S3Figures(r);
  double dev_total = 0;
  for (double x : dev_epoch) dev_total += x;
  f["device_bytes_read"] = any_counter ? json(dev_total) : json(nullptr);
  f["device_bytes_note"] =
      "bytes the kernel read from the data dir's block device (/proc/diskstats) or NFS server "
      "(/proc/self/mountstats) on each host during the epochs' training blocks, every process's reads included; "
      "null where no device is visible (tmpfs, overlay, FUSE)";

  if (completed) EpochFigures(r, dev_epoch, any_counter, dev_total, &f);
  LatencyFigures(r, &f);
  uint64_t probe_failures = 0;
  for (const auto& ri : r.rank_info) probe_failures += ri.probe_failures;
  if (probe_failures > 0) f["residency_probe_failures"] = probe_failures;
  if (r.verify_fraction > 0) {
    uint64_t verified = 0;
    double secs = 0;
    for (const auto& ri : r.rank_info) {
      verified += ri.verify_bytes;
      secs += ri.verify_seconds;
    }
    f["verify"] = {{"fraction", r.verify_fraction}, {"bytes_checked", verified}, {"seconds", secs},
                   {"seconds_per_gib", verified > 0 ? secs / (static_cast<double>(verified) / kGiB) : 0.0},
                   {"result", r.status == "failed" ? "see error" : "every checked byte matched the dataset's pattern"},
                   {"note", "I/O-thread time comparing payload bytes with the pattern of datagen --content verifiable"}};
  }
  f["accelerator_memory"] = AcceleratorMemoryFigures(r);
  f["compute"] = ComputeFigures(r);
  if (!r.timeseries_csv.empty()) f["timeseries"] = {{"file", "timeseries.csv"}, {"interval_s", r.timeseries_interval}};
}

nlohmann::json HostManifest(const RunRecord& r) {
  const WorkloadConfig& c = *r.cfg;
  nlohmann::json h = {{"kernel", KernelRelease()}, {"data_dir", c.DataLocation()},
                      {"data_dir_fs", c.on_s3() ? std::string("s3") : FileSystemType(c.data_folder)},
                      {"command_line", r.command_line}};
  for (const auto& ri : r.rank_info) {
    const auto& s = ri.storage;
    if (!s.is_object() || !s.contains("mount")) continue;
    h["data_dir_mount"] = s["mount"];
    h["data_dir_device"] = {{"kind", s.value("kind", "none")}, {"device", s.value("device", "")}, {"model", s.value("model", "")}};
    break;
  }
  return h;
}

}  // namespace feedrate
