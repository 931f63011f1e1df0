// Per-rank time series, like fio's bandwidth log or elbencho's live CSV: a thread samples the rank's counters every
// interval (delivered MiB/s, reads/s, read latency percentiles, accelerator stall time, process CPU, host iowait,
// RSS); rank 0 merges every rank's rows, plus per-interval totals, into timeseries.csv at the end.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loader/io/io_stats.h"

namespace feedrate {

// One accelerator's live stall state: written by its thread around each wait for a batch, read by the sampler.
struct alignas(64) AcceleratorLive {
  std::atomic<int64_t> wait_start_ns{0};  // steady-clock start of the wait in progress, 0 when not waiting
  std::atomic<int64_t> stall_ns{0};       // finished waits, summed
};

struct TimeSeriesRow {
  double time_s = 0;  // end of the interval, seconds since the rank started training
  double seconds = 0; // the interval's length (the last one is usually short)
  double read_mib_per_s = 0;
  double read_iops = 0;  // completed sample reads per second
  double lat_p50_us = 0, lat_p90_us = 0, lat_p99_us = 0, lat_max_us = 0;
  double stall_s = 0;    // accelerator-seconds spent waiting for batches in the interval
  double stall_pct = 0;  // stall_s / (interval x accelerators)
  double cpu_user_pct = 0, cpu_sys_pct = 0;  // this process, 100 = one CPU
  double host_iowait_pct = 0;                // the host's CPUs, share of their time in iowait
  double rss_mib = 0;
};

class TimeSeriesRecorder {
 public:
  // `live` has `accelerators` entries; `interval_s` > 0.
  TimeSeriesRecorder(const IoStats& io, const AcceleratorLive* live, size_t accelerators, double interval_s);
  ~TimeSeriesRecorder();
  TimeSeriesRecorder(const TimeSeriesRecorder&) = delete;
  TimeSeriesRecorder& operator=(const TimeSeriesRecorder&) = delete;
  void Start();
  // Stops the thread after a last (partial) row.
  void Stop();
  const std::vector<TimeSeriesRow>& rows() const { return rows_; }

 private:
  struct Point {
    int64_t ns = 0;
    IoSnapshot io;
    double stall_ns = 0;
    double user_s = 0, sys_s = 0;
    uint64_t host_iowait = 0, host_total = 0;
  };
  Point Sample() const;
  void Loop();

  const IoStats& io_;
  const AcceleratorLive* live_;
  size_t accelerators_;
  double interval_s_;
  int64_t start_ns_ = 0;
  std::vector<TimeSeriesRow> rows_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

// CSV header and rows (no header) for one rank's rows, for the gather to rank 0.
std::string TimeSeriesHeader();
std::string TimeSeriesRows(int rank, const std::string& host, const std::vector<TimeSeriesRow>& rows);
// The whole file: header, every rank's rows as gathered, then one row per interval with rank "all": sums of MiB/s,
// reads/s, stall and CPU over ranks, the highest latency percentiles and RSS summed; stall_pct over every accelerator.
std::string MergeTimeSeries(const std::vector<std::string>& rank_rows, double accelerators_total, double interval_s);

}  // namespace feedrate
