// Time-series sampling and the merged CSV.
#include "emulator/training/timeseries.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "emulator/training/compute_clock.h"

namespace feedrate {
namespace {

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; }

void HostCpu(uint64_t* iowait, uint64_t* total) {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;  // "cpu": all CPUs
  uint64_t v[8] = {};
  for (auto& x : v) in >> x;  // user nice system idle iowait irq softirq steal
  *iowait = v[4];
  *total = 0;
  for (uint64_t x : v) *total += x;
}

double RssMib() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1048576.0;
}

}  // namespace

TimeSeriesRecorder::TimeSeriesRecorder(const IoStats& io, const AcceleratorLive* live, size_t accelerators, double interval_s)
    : io_(io), live_(live), accelerators_(accelerators), interval_s_(interval_s) {}

TimeSeriesRecorder::~TimeSeriesRecorder() { Stop(); }

TimeSeriesRecorder::Point TimeSeriesRecorder::Sample() const {
  Point p;
  p.ns = NowNs();
  p.io = io_.Take();
  for (size_t a = 0; a < accelerators_; ++a) {
    // A wait in progress counts up to now, so a long stall shows in the intervals it spans.
    const int64_t start = live_[a].wait_start_ns.load(std::memory_order_relaxed);
    p.stall_ns += static_cast<double>(live_[a].stall_ns.load(std::memory_order_relaxed));
    if (start > 0 && start < p.ns) p.stall_ns += static_cast<double>(p.ns - start);
  }
  rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  p.user_s = Seconds(ru.ru_utime);
  p.sys_s = Seconds(ru.ru_stime);
  HostCpu(&p.host_iowait, &p.host_total);
  return p;
}

void TimeSeriesRecorder::Start() {
  start_ns_ = NowNs();
  thread_ = std::thread([this] { Loop(); });
}

void TimeSeriesRecorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TimeSeriesRecorder::Loop() {
  Point prev = Sample();
  prev.ns = start_ns_;
  const auto step = std::chrono::nanoseconds(static_cast<int64_t>(interval_s_ * 1e9));
  auto next = std::chrono::steady_clock::now() + step;
  for (bool last = false; !last;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      last = cv_.wait_until(lock, next, [this] { return stop_; });
    }
    next += step;
    Point now = Sample();
    const double secs = static_cast<double>(now.ns - prev.ns) / 1e9;
    if (secs <= 0) continue;
    const IoSnapshot d = now.io.Since(prev.io);
    TimeSeriesRow r;
    r.time_s = static_cast<double>(now.ns - start_ns_) / 1e9;
    r.seconds = secs;
    r.read_mib_per_s = static_cast<double>(d.bytes) / 1048576.0 / secs;
    r.read_iops = static_cast<double>(d.reads) / secs;
    r.lat_p50_us = static_cast<double>(d.latency.Percentile(50)) / 1e3;
    r.lat_p90_us = static_cast<double>(d.latency.Percentile(90)) / 1e3;
    r.lat_p99_us = static_cast<double>(d.latency.Percentile(99)) / 1e3;
    r.lat_max_us = static_cast<double>(d.latency.max()) / 1e3;
    r.stall_s = std::max(0.0, now.stall_ns - prev.stall_ns) / 1e9;
    r.stall_pct = accelerators_ > 0 ? 100 * r.stall_s / (secs * static_cast<double>(accelerators_)) : 0;
    r.cpu_user_pct = 100 * (now.user_s - prev.user_s) / secs;
    r.cpu_sys_pct = 100 * (now.sys_s - prev.sys_s) / secs;
    const uint64_t dt = now.host_total - prev.host_total;
    r.host_iowait_pct = dt > 0 ? 100 * static_cast<double>(now.host_iowait - prev.host_iowait) / static_cast<double>(dt) : 0;
    r.rss_mib = RssMib();
    rows_.push_back(r);
    prev = now;
  }
}

std::string TimeSeriesHeader() {
  return "rank,host,time_s,interval_s,read_mib_per_s,read_iops,lat_p50_us,lat_p90_us,lat_p99_us,lat_max_us,"
         "stall_s,stall_pct,cpu_user_pct,cpu_sys_pct,host_iowait_pct,rss_mib\n";
}

std::string TimeSeriesRows(int rank, const std::string& host, const std::vector<TimeSeriesRow>& rows) {
  std::string out;
  char b[512];
  for (const auto& r : rows) {
    std::snprintf(b, sizeof b, "%d,%s,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f,%.1f,%.1f,%.4f,%.2f,%.1f,%.1f,%.1f,%.1f\n", rank,
                  host.c_str(), r.time_s, r.seconds, r.read_mib_per_s, r.read_iops, r.lat_p50_us, r.lat_p90_us,
                  r.lat_p99_us, r.lat_max_us, r.stall_s, r.stall_pct, r.cpu_user_pct, r.cpu_sys_pct,
                  r.host_iowait_pct, r.rss_mib);
    out += b;
  }
  return out;
}

std::string MergeTimeSeries(const std::vector<std::string>& rank_rows, double accelerators_total, double interval_s) {
  std::string out = TimeSeriesHeader();
  // Per interval index: time, length, sums and maxima over ranks. Ranks' intervals differ in length (a late wake-up,
  // each rank's last one ends when it stops), so rates are summed as amounts (rate x the rank's seconds) and divided
  // by the row's length: the merged rows add up to the bytes, reads and CPU seconds the ranks' rows hold.
  struct Total {
    double time = 0, secs = 0, mib = 0, iops = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, stall = 0, user = 0, sys = 0,
           iowait = 0, rss = 0;
    int ranks = 0;
  };
  std::vector<Total> totals;
  for (const auto& text : rank_rows) {
    out += text;
    std::istringstream in(text);
    std::string line;
    for (size_t i = 0; std::getline(in, line); ++i) {
      std::vector<std::string> f;
      std::stringstream ls(line);
      for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
      if (f.size() < 16) continue;
      if (totals.size() <= i) totals.resize(i + 1);
      Total& t = totals[i];
      auto v = [&](size_t k) { return std::strtod(f[k].c_str(), nullptr); };
      const double secs = v(3);
      t.time = std::max(t.time, v(2));
      t.secs = std::max(t.secs, secs);
      t.mib += v(4) * secs;
      t.iops += v(5) * secs;
      t.p50 = std::max(t.p50, v(6));
      t.p90 = std::max(t.p90, v(7));
      t.p99 = std::max(t.p99, v(8));
      t.max = std::max(t.max, v(9));
      t.stall += v(10);
      t.user += v(12) * secs;
      t.sys += v(13) * secs;
      t.iowait += v(14);
      t.rss += v(15);
      ++t.ranks;
    }
  }
  char b[512];
  for (const auto& t : totals) {
    const double secs = t.secs > 0 ? t.secs : interval_s;
    const double stall_pct = accelerators_total > 0 ? 100 * t.stall / (secs * accelerators_total) : 0;
    auto rate = [&](double amount) { return t.secs > 0 ? amount / t.secs : 0.0; };
    std::snprintf(b, sizeof b, "all,all,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f,%.1f,%.1f,%.4f,%.2f,%.1f,%.1f,%.1f,%.1f\n", t.time,
                  t.secs, rate(t.mib), rate(t.iops), t.p50, t.p90, t.p99, t.max, t.stall, stall_pct, rate(t.user),
                  rate(t.sys),
                  t.ranks > 0 ? t.iowait / t.ranks : 0.0, t.rss);
    out += b;
  }
  return out;
}

}  // namespace feedrate
