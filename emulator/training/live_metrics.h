// What a rank's metrics endpoint says (--metrics-listen, docs/metrics.md): the run's phase and the counters the
// accelerator and I/O threads already keep, rendered in Prometheus's text format at each scrape.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "emulator/training/progress.h"
#include "emulator/training/timeseries.h"
#include "loader/io/io_stats.h"
#include "loader/status.h"

namespace feedrate {

enum class RunPhase { kSetup, kTraining, kFinishing, kPassed, kMissedAu, kFailed, kInterrupted };

// The counters at one moment (live while training, frozen after it).
struct LiveFigures {
  IoSnapshot io;
  uint64_t epoch = 0, steps = 0, delivered_bytes = 0;
  double compute_s = 0, stall_s = 0;  // accelerator-seconds since training started
  double epoch_au_pct = 0;            // the epoch in progress: compute / (elapsed x accelerators)
};

// The job's figures, as summary.json has them (rank 0, once the run is judged).
struct JobFigures {
  double au_pct = 0, au_bar_pct = 0;
  uint64_t accelerators = 0;
  double samples_per_s = 0;  // metric.train_throughput_mean_samples_per_second
};

class LiveMetrics {
 public:
  struct Labels {
    std::string workload, host, version;
    int rank = 0;
  };
  LiveMetrics(Labels labels, uint64_t accelerators);

  // Training starts: the sources stay valid until Freeze(), which keeps their last figures (call it before they go).
  void Attach(const IoStats* io, const TrainProgress* progress, const AcceleratorLive* live);
  void Freeze();
  void SetPhase(RunPhase phase);
  void SetJob(const JobFigures& job);  // rank 0, after the gather
  RunPhase phase() const;

  // The exposition text (scrape thread; takes the lock the calls above take, never a sample's).
  std::string Render() const;

 private:
  LiveFigures TakeLocked() const;

  Labels labels_;
  uint64_t accelerators_;
  mutable std::mutex mu_;
  RunPhase phase_ = RunPhase::kSetup;
  const IoStats* io_ = nullptr;
  const TrainProgress* progress_ = nullptr;
  const AcceleratorLive* live_ = nullptr;
  std::optional<LiveFigures> frozen_;
  std::optional<JobFigures> job_;
};

// --metrics-textfile DIR, node_exporter's textfile-collector form: this rank's figures in DIR/feedrate_rank<R>.prom,
// rewritten every `interval_s` by a thread of its own and once more by Stop() (each write atomic through a hidden
// temporary name the collector's *.prom match skips, so it never reads half a file).
class MetricsTextfile {
 public:
  MetricsTextfile(const LiveMetrics& metrics, std::string path, double interval_s);
  ~MetricsTextfile();  // Stop() if not stopped
  MetricsTextfile(const MetricsTextfile&) = delete;
  MetricsTextfile& operator=(const MetricsTextfile&) = delete;
  // The first write (a folder it cannot write is an error naming the file), then the thread. Call once.
  Status Start();
  // Ends the thread and writes the final figures; a write that failed on the way is returned (the first one).
  Status Stop();
  const std::string& path() const { return path_; }

 private:
  void Loop();
  const LiveMetrics& metrics_;
  std::string path_;
  double interval_s_;
  std::mutex mu_;  // the stop flag and the first error (once per interval)
  std::condition_variable wake_;
  bool stop_ = false;
  Status first_error_;
  std::thread thread_;
};

// Prometheus text format for these figures (exposed for tests): `labels` is the rendered label set without braces.
std::string RenderLiveMetrics(const LiveFigures& f, RunPhase phase, uint64_t accelerators, const std::string& labels,
                              const std::string& version, const std::optional<JobFigures>& job, double cpu_user_s,
                              double cpu_sys_s);
// A label value escaped as the text format wants (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& v);

}  // namespace feedrate
