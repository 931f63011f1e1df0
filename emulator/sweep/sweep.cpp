// Sweep search and its JSON.
#include "emulator/sweep/sweep.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "loader/util/exit_codes.h"

namespace feedrate {

namespace {

// Runs the repeats of one point; stops at the first run that does not pass.
SweepPoint Evaluate(uint64_t per_host, const SweepOptions& o, const SweepRunner& runner, SweepResult* r) {
  SweepPoint p;
  p.accelerators = per_host * o.hosts;
  p.passed = true;
  for (int k = 1; k <= std::max(1, o.repeats); ++k) {
    SweepRun run = runner(p.accelerators, k);
    run.accelerators = p.accelerators;
    run.repeat = k;
    if (o.on_run) o.on_run(run);
    p.runs.push_back(run);
    if (run.exit_code != 0 && run.exit_code != 3) {
      r->stop_code = run.exit_code == kExitInterrupted ? kExitInterrupted : kExitError;
      r->stop_reason = run.exit_code == kExitInterrupted ? "interrupted" : "run at " + std::to_string(p.accelerators) + " accelerators failed: " + run.error;
    }
    if (!run.passed()) {
      p.passed = false;
      break;
    }
  }
  return p;
}

// The epochs' resident_fraction weighted by their bytes; -1 when no epoch has one (S3, residency off).
double CacheServedShare(const nlohmann::json& epochs) {
  double bytes = 0, resident = 0;
  for (const auto& e : epochs) {
    const auto it = e.find("resident_fraction");
    if (it == e.end() || !it->is_number()) continue;
    const double b = e.value("bytes_read", 0.0);
    bytes += b;
    resident += b * it->get<double>();
  }
  return bytes > 0 ? resident / bytes : -1;
}

// The largest share any run of the point read from the page cache (-1 when none was sampled).
double PointCacheServed(const SweepPoint& p) {
  double most = -1;
  for (const auto& run : p.runs) most = std::max(most, run.cache_served);
  return most;
}

std::string Percent(double share) { return std::to_string(static_cast<int>(100 * share + 0.5)) + "%"; }

std::string Accelerators(uint64_t n) { return std::to_string(n) + (n == 1 ? " accelerator" : " accelerators"); }

}  // namespace

SweepResult RunSweep(const SweepOptions& o, const SweepRunner& runner) {
  SweepResult r;
  const uint64_t min = std::max<uint64_t>(1, o.min);
  uint64_t max = o.max == 0 ? kSweepHardMax : std::max(o.max, min);
  if (o.dataset_max > 0 && o.dataset_max < max) {  // the dataset serves no more: counts above it are not runs to try
    if (o.dataset_max < min) {
      r.stop_code = 2;
      r.stop_reason = o.dataset_why;
      return r;
    }
    max = o.dataset_max;
    r.dataset_limited = true;
  }
  auto eval = [&](uint64_t n) {
    r.points.push_back(Evaluate(n, o, runner, &r));
    return r.points.back().passed;
  };
  if (!eval(min)) return r;  // stop_code says whether it was an error or a miss
  uint64_t lo = min, hi = 0;  // lo passes; hi (when set) fails
  // Bracket: double until a point fails or the limit passes.
  while (hi == 0 && r.stop_code == 0) {
    const uint64_t next = std::min(max, lo * 2);
    if (next == lo) {
      r.capped = true;
      break;
    }
    if (eval(next)) {
      lo = next;
    } else {
      hi = next;
    }
  }
  // Bisect between the largest pass and the smallest failure.
  while (hi != 0 && hi - lo > 1 && r.stop_code == 0) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (eval(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  r.accelerators_supported = lo * o.hosts;
  r.dataset_limited = r.dataset_limited && r.capped;
  return r;
}

void FillSweepRun(const nlohmann::json& s, SweepRun* run) {
  const auto& m = s.value("metric", nlohmann::json::object());
  const auto& f = s.value("feedrate", nlohmann::json::object());
  run->au_pct = m.value("train_au_mean_percentage", 0.0);
  run->throughput = m.value("train_throughput_mean_samples_per_second", 0.0);
  run->read_mib_per_s = f.value("read_mib_per_s", 0.0);
  const auto& stall = f.value("stall_seconds", nlohmann::json::object());
  run->stall_p50 = stall.value("p50", 0.0);
  run->stall_p99 = stall.value("p99", 0.0);
  const auto& validity = f.value("validity", nlohmann::json::object());
  run->validity = validity.value("category", std::string());
  run->validity_reasons = validity.value("reasons", std::vector<std::string>());
  run->hosts = f.value("hosts", nlohmann::json::array());
  run->cache_served = CacheServedShare(f.value("epochs", nlohmann::json::array()));
  for (const auto& h : run->hosts) {
    run->net_rx_mib_per_s += h.value("net_rx_mib_per_s", 0.0);
    const auto cpu = h.value("host_cpu", nlohmann::json::object());
    // (The window's floor is host_cpu.h's kMinHostCpuWindow: sweep reads summaries, not the host layer.)
    if (cpu.value("seconds", 0.0) >= 2.0) run->host_cpu_measured = true;
    if (cpu.value("seconds", 0.0) < 2.0 || cpu.value("busy", 0.0) <= run->host_cpu_busy) continue;
    run->host_cpu_busy = cpu.value("busy", 0.0);
    run->other_work = cpu.value("others_described", std::string());
  }
  // Usable CPUs: per host (summary lists hosts in name order), the lesser of its CPUs and its ranks' affinity.
  std::map<std::string, double> allowed;
  for (const auto& a : f.value("cpu_affinity", nlohmann::json::array())) {
    allowed[a.value("host", std::string())] += a.value("allowed_cpus", 0.0);
  }
  const auto host_cpus = s.value("host_cpu_count", nlohmann::json::array());
  double usable = 0;
  size_t i = 0;
  for (const auto& [host, cpus] : allowed) {
    const double have = i < host_cpus.size() && host_cpus[i].is_number() ? host_cpus[i].get<double>() : cpus;
    usable += std::min(have, cpus);
    ++i;
  }
  const double wall = f.value("wall_seconds", 0.0);
  // CPU of the training loop when the summary has it (older ones: the whole process, setup included).
  const double cpu = f.contains("train_cpu_seconds") ? f.value("train_cpu_seconds", 0.0) : f.value("cpu_seconds", 0.0);
  if (usable > 0 && wall > 0) run->cpu_utilisation = std::min(1.0, cpu / (wall * usable));
}

namespace {

// Whether the delivered bandwidth stopped following the accelerator count, and the figures that say so.
struct Scaling {
  bool stopped = false;
  std::string evidence;  // "delivered MiB/s grew ...", empty when it did follow
};

// Two signs, either enough: from the last passing to the first failing point the MiB/s grew < 0.9x as fast as the
// count; or each accelerator of the failing point got < 0.9x the MiB/s per accelerator of the best passing run. The
// second catches a failing point just past a soft knee: a link 86% busy already queues, so the last passing point
// is below its best too (a shaped link in CI: 6 -> 8 accelerators, 1.23x the MiB/s for 1.33x the count, AU 90.3% ->
// 82.2%). With latency, not bandwidth, the limit, every count gets about the same per accelerator.
Scaling ScalingBetween(const SweepResult& r, const SweepRun* pass, const SweepRun* fail) {
  Scaling s;
  if (fail == nullptr || pass == nullptr || pass->read_mib_per_s <= 0 || fail->accelerators <= pass->accelerators) {
    return s;
  }
  auto per_accelerator = [](const SweepRun& run) { return run.read_mib_per_s / static_cast<double>(run.accelerators); };
  const SweepRun* best = pass;
  for (const auto& p : r.points) {
    if (!p.passed) continue;
    for (const auto& run : p.runs) {
      if (run.accelerators > 0 && per_accelerator(run) > per_accelerator(*best)) best = &run;
    }
  }
  const double grew = fail->read_mib_per_s / pass->read_mib_per_s;
  const double count = static_cast<double>(fail->accelerators) / static_cast<double>(pass->accelerators);
  const double share = per_accelerator(*fail) / per_accelerator(*best);
  s.stopped = grew < 0.9 * count || share < 0.9;
  if (!s.stopped) return s;
  char buf[320];
  std::snprintf(buf, sizeof buf, "delivered MiB/s grew %.2fx (%.0f -> %.0f) while accelerators grew %.2fx (%llu -> "
                "%llu), each accelerator getting %.2fx the MiB/s it got at %llu,", grew, pass->read_mib_per_s,
                fail->read_mib_per_s, count, static_cast<unsigned long long>(pass->accelerators),
                static_cast<unsigned long long>(fail->accelerators), share,
                static_cast<unsigned long long>(best->accelerators));
  s.evidence = buf;
  return s;
}

// What the verdict quotes of a deciding run.
nlohmann::json Evidence(const SweepRun* run, double ceiling) {
  if (run == nullptr) return nullptr;
  nlohmann::json e = {{"accelerators", run->accelerators}, {"au_pct", run->au_pct}, {"read_mib_per_s", run->read_mib_per_s},
            {"client_cpu_utilisation", run->cpu_utilisation}, {"client_host_cpu_busy", run->host_cpu_busy},
            {"other_work", run->other_work}, {"stall_p50_seconds", run->stall_p50},
            {"stall_p99_seconds", run->stall_p99}, {"net_rx_mib_per_s", run->net_rx_mib_per_s},
            {"results_dir", run->results_dir}, {"hosts", run->hosts}};
  if (ceiling > 0) e["fraction_of_storage_ceiling"] = run->read_mib_per_s / ceiling;
  return e;
}

// The client's CPUs were the limit: Feedrate's own use, or other work on a shared client (named).
std::string ClientCpuWhy(const SweepRun& fail) {
  const bool shared = fail.host_cpu_busy - fail.cpu_utilisation >= 0.2;  // other work took a fifth or more
  char buf[512];
  std::snprintf(buf, sizeof buf, "the client's CPUs were %.0f%% busy at %llu accelerators (Feedrate's own %.0f%%%s%s): %s",
                100 * fail.client_busy(), static_cast<unsigned long long>(fail.accelerators), 100 * fail.cpu_utilisation,
                shared ? "; other work: " : "", shared ? fail.other_work.c_str() : "",
                shared ? "the client was shared; run on an idle client, or the answer measures the other work"
                       : "more client cores (or clients) would move the answer, not faster storage");
  return buf;
}

}  // namespace

nlohmann::json SweepBottleneck(const SweepResult& r, double ceiling, const SweepCache& cache) {
  using nlohmann::json;
  const SweepRun* fail = nullptr;  // the failing run of the smallest failing point
  const SweepRun* pass = nullptr;  // the last run of the largest passing point
  for (const auto& p : r.points) {
    if (p.passed && (pass == nullptr || p.accelerators > pass->accelerators)) pass = &p.runs.back();
    if (!p.passed && (fail == nullptr || p.accelerators < fail->accelerators)) fail = &p.runs.back();
  }
  json b = {{"last_pass", Evidence(pass, ceiling)}, {"first_fail", Evidence(fail, ceiling)}};
  if (ceiling > 0) b["storage_ceiling_mib_per_s"] = ceiling;
  std::string limit, why;
  char buf[512];
  const Scaling scaling = ScalingBetween(r, pass, fail);
  const SweepRun* cached = nullptr;  // a deciding run the page cache served in part, on storage that is not memory
  for (const SweepRun* run : {pass, fail}) {
    if (!cache.in_memory && run != nullptr && run->cache_served > cache.limit &&
        (cached == nullptr || run->cache_served > cached->cache_served)) {
      cached = run;
    }
  }
  if (cached != nullptr) {
    limit = "page_cache";
    why = Percent(cached->cache_served) + " of the bytes read at " + Accelerators(cached->accelerators) +
          " came from the client's page cache, not the storage: the answer measures memory in part "
          "(start every point cold: --cache drop-once, the default; or a dataset larger than the clients' memory)";
  } else if (fail == nullptr) {
    limit = r.dataset_limited ? "dataset_size" : r.capped ? "none reached" : "unknown";
    why = r.dataset_limited ? "every count tried met the AU bar up to the largest the dataset can serve"
          : r.capped        ? "every count tried met the AU bar; raise --max"
                            : "no failing point";
  } else if (fail->client_busy() >= 0.85) {
    limit = "client_cpu";
    why = ClientCpuWhy(*fail);
  } else if (ceiling > 0 && fail->read_mib_per_s >= 0.85 * ceiling) {
    limit = "storage_bandwidth";
    std::snprintf(buf, sizeof buf, "%.0f MiB/s delivered at %llu accelerators, %.0f%% of the %.0f MiB/s the storage "
                  "gave iobench", fail->read_mib_per_s, static_cast<unsigned long long>(fail->accelerators),
                  100 * fail->read_mib_per_s / ceiling, ceiling);
    why = buf;
  } else if (scaling.stopped && fail->net_rx_mib_per_s >= 0.9 * fail->read_mib_per_s) {
    // As below, and the bytes came over the clients' network interfaces: the path is a network link and a server.
    limit = "network";
    const double hosts = std::max<double>(1, static_cast<double>(fail->hosts.size()));
    std::snprintf(buf, sizeof buf, "%s with the client CPUs %.0f%% busy, and the clients' network interfaces received "
                  "%.1f MiB/s (%.1f per host): the network path to the storage (each client's link, or the server "
                  "behind it) is the limit", scaling.evidence.c_str(), 100 * fail->client_busy(),
                  fail->net_rx_mib_per_s, fail->net_rx_mib_per_s / hosts);
    why = buf;
  } else if (scaling.stopped) {
    // More accelerators, but the delivered bandwidth did not follow while the client had CPU to spare.
    limit = "storage_throughput";
    std::snprintf(buf, sizeof buf, "%s with the client's CPUs %.0f%% busy: the storage stopped scaling",
                  scaling.evidence.c_str(), 100 * fail->client_busy());
    why = buf;
  } else {
    limit = ceiling > 0 ? "latency" : "storage_or_latency";
    std::snprintf(buf, sizeof buf, "client CPUs %.0f%% busy and %.0f MiB/s delivered at %llu accelerators%s; "
                  "accelerators waited p99 %.4f s per step", 100 * fail->client_busy(), fail->read_mib_per_s,
                  static_cast<unsigned long long>(fail->accelerators),
                  ceiling > 0 ? " (well below the storage ceiling)" : " (no storage ceiling: --ceiling or --ceiling-mib-s)",
                  fail->stall_p99);
    why = buf;
  }
  // A verdict that read the client's CPU as Feedrate's own share alone says so: other work on the client (two CPUs
  // held by something else) is only seen over a window of 2 s or more.
  if (fail != nullptr && limit != "client_cpu" && !fail->host_cpu_measured) {
    why += "; the client's CPU is Feedrate's own share only: its training at " + Accelerators(fail->accelerators) +
           " lasted under the 2 s over which the whole host's CPU is read, so other work on the client is not seen "
           "(longer epochs tell)";
  }
  b["limit"] = limit;
  b["explanation"] = why;
  return b;
}

nlohmann::json SweepCacheVerdict(const SweepResult& r, const SweepCache& cache) {
  nlohmann::json named = nlohmann::json::array();
  std::string list;
  for (const auto& p : r.points) {
    const double share = PointCacheServed(p);
    if (cache.in_memory || share <= cache.limit) continue;
    named.push_back({{"accelerators", p.accelerators}, {"cache_served", share}});
    list += (list.empty() ? "" : ", ") + Accelerators(p.accelerators) + " " + Percent(share);
  }
  std::string why;
  if (cache.in_memory) {
    why = "the dataset is on " + cache.fs_type + ": its files live in memory by nature, so every byte is served from "
          "memory and no point's share is counted against the answer";
  } else if (!named.empty()) {
    why = std::to_string(named.size()) + " point(s) read more than " + Percent(cache.limit) +
          " of their bytes from the client's page cache (" + list + "): not a storage answer";
  } else if (cache.mode == "direct") {
    why = "O_DIRECT reads: the page cache served nothing";
  } else {
    double most = -1;
    for (const auto& p : r.points) most = std::max(most, PointCacheServed(p));
    why = std::string(cache.mode == "keep" ? "the page cache was kept between points"
                                           : "every point started cold (--cache " + cache.mode + ")") +
          (most < 0 ? "; residency was not sampled (--residency off), so what the cache served is unknown"
                    : "; the page cache served at most " + Percent(most) + " of a point's bytes");
  }
  return {{"mode", cache.mode}, {"fs_type", cache.fs_type}, {"storage_in_memory", cache.in_memory},
          {"cache_served_limit", cache.limit}, {"cache_served_points", named},
          {"storage_answer", cache.in_memory || named.empty()}, {"explanation", why}};
}

nlohmann::json SweepValidity(const SweepResult& r, int repeats) {
  static const std::vector<std::string> kOrder = {"CLOSED", "OPEN", "INVALID"};
  size_t worst = 0;
  std::vector<std::string> reasons;
  bool known = false;
  for (const auto& p : r.points) {
    if (!p.passed || p.accelerators != r.accelerators_supported) continue;
    for (const auto& run : p.runs) {
      auto it = std::find(kOrder.begin(), kOrder.end(), run.validity);
      if (it == kOrder.end()) continue;
      known = true;
      worst = std::max(worst, static_cast<size_t>(it - kOrder.begin()));
      for (const auto& why : run.validity_reasons) {
        if (std::find(reasons.begin(), reasons.end(), why) == reasons.end()) reasons.push_back(why);
      }
    }
  }
  if (!known) return {{"category", "INVALID"}, {"reasons", {"INVALID: no passing point to judge"}}};
  if (repeats < 5) {
    worst = 2;
    reasons.push_back("INVALID: " + std::to_string(repeats) + " run(s) per point; a result is the mean of 5 consecutive "
                      "runs (--closed)");
  }
  return {{"category", kOrder[worst]}, {"reasons", reasons}};
}

nlohmann::json SweepJson(const SweepResult& r, const SweepOptions& o, double ceiling, const SweepCache& cache) {
  using nlohmann::json;
  json points = json::array();
  for (const auto& p : r.points) {
    json runs = json::array();
    for (const auto& x : p.runs) {
      json j = {{"repeat", x.repeat},
                {"exit_code", x.exit_code},
                {"au_pct", x.au_pct},
                {"throughput_samples_per_s", x.throughput},
                {"read_mib_per_s", x.read_mib_per_s},
                {"client_cpu_utilisation", x.cpu_utilisation},
                {"client_host_cpu_busy", x.host_cpu_busy},
                {"stall_p50_seconds", x.stall_p50},
                {"stall_p99_seconds", x.stall_p99},
                {"results_dir", x.results_dir},
                {"cache_served", x.cache_served < 0 ? nlohmann::json(nullptr) : nlohmann::json(x.cache_served)},
                {"validity", x.validity},
                {"hosts", x.hosts}};
      if (!x.error.empty()) j["error"] = x.error;
      runs.push_back(j);
    }
    points.push_back({{"accelerators", p.accelerators}, {"passed", p.passed}, {"runs", runs}});
  }
  json j = {{"accelerators_supported", r.accelerators_supported},
            {"lower_bound_only", r.capped},
            {"dataset_limited", r.dataset_limited ? nlohmann::json(o.dataset_why) : nlohmann::json(nullptr)},
            {"repeats_per_point", o.repeats},
            {"hosts", o.hosts},
            {"min_per_host", o.min},
            {"max_per_host", o.max},
            {"points", points},
            {"bottleneck", SweepBottleneck(r, ceiling, cache)},
            {"cache", SweepCacheVerdict(r, cache)},
            {"validity", SweepValidity(r, o.repeats)}};
  if (!j["cache"]["storage_answer"].get<bool>()) {
    j["validity"]["category"] = "INVALID";
    j["validity"]["reasons"].push_back("INVALID: " + j["cache"]["explanation"].get<std::string>());
  }
  if (r.stop_code != 0) j["stopped"] = r.stop_reason;
  return j;
}

}  // namespace feedrate
