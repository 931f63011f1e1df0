// LiveMetrics: reads the run's counters at a scrape and renders them; the series are listed in docs/metrics.md.
#include "emulator/training/live_metrics.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "loader/io/safe_file.h"
#include "loader/util/clock.h"

namespace feedrate {
namespace {

const char* PhaseName(RunPhase p) {
  switch (p) {
    case RunPhase::kSetup: return "setup";
    case RunPhase::kTraining: return "training";
    case RunPhase::kFinishing: return "finishing";
    case RunPhase::kPassed: return "passed";
    case RunPhase::kMissedAu: return "missed_au";
    case RunPhase::kFailed: return "failed";
    case RunPhase::kInterrupted: return "interrupted";
  }
  return "setup";
}
constexpr RunPhase kPhases[] = {RunPhase::kSetup,    RunPhase::kTraining, RunPhase::kFinishing, RunPhase::kPassed,
                                RunPhase::kMissedAu, RunPhase::kFailed,   RunPhase::kInterrupted};

std::string MetricNumber(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// One metric family: its HELP and TYPE lines, then its samples as they are appended.
class Family {
 public:
  Family(std::string* out, const char* name, const char* type, const char* help) : out_(*out), name_(name) {
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void Sample(const std::string& suffix, const std::string& labels, double value) {
    out_ += name_ + suffix + "{" + labels + "} " + MetricNumber(value) + "\n";
  }

 private:
  std::string& out_;
  std::string name_;
};

double TimevalSeconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

// The read-latency histogram at power-of-two nanosecond bounds (1.024 us to 137 s): the log-linear buckets below
// each bound are exactly the reads that took less (their groups start at powers of two).
void LatencyHistogramSeries(std::string* out, const IoSnapshot& io, const std::string& labels) {
  Family h(out, "feedrate_read_latency_seconds", "histogram",
           "time each sample read took, from the I/O thread taking it to its completion");
  const auto& counts = io.latency.counts();
  size_t i = 0;
  uint64_t below = 0;
  for (int k = 10; k <= 37; ++k) {
    const uint64_t bound = uint64_t{1} << k;
    while (i < LatencyHistogram::kBuckets && LatencyHistogram::UpperBound(i) < bound) below += counts[i++];
    char le[32];
    std::snprintf(le, sizeof le, "%.9g", static_cast<double>(bound) / 1e9);
    h.Sample("_bucket", labels + ",le=\"" + le + "\"", static_cast<double>(below));
  }
  h.Sample("_bucket", labels + ",le=\"+Inf\"", static_cast<double>(io.latency.total()));
  h.Sample("_sum", labels, static_cast<double>(io.latency_sum_ns) / 1e9);
  h.Sample("_count", labels, static_cast<double>(io.latency.total()));
}

void JobSeries(std::string* out, const JobFigures& job, const std::string& labels) {
  Family(out, "feedrate_job_au_percent", "gauge", "the job's AU as summary.json reports it (rank 0, once judged)")
      .Sample("", labels, job.au_pct);
  Family(out, "feedrate_job_au_bar_percent", "gauge", "the AU the workload must reach").Sample("", labels, job.au_bar_pct);
  Family(out, "feedrate_job_accelerators", "gauge", "accelerators of the whole job")
      .Sample("", labels, static_cast<double>(job.accelerators));
  Family(out, "feedrate_job_samples_per_second", "gauge", "the job's metric.train_throughput_mean_samples_per_second")
      .Sample("", labels, job.samples_per_s);
}

}  // namespace

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string RenderLiveMetrics(const LiveFigures& f, RunPhase phase, uint64_t accelerators, const std::string& labels,
                              const std::string& version, const std::optional<JobFigures>& job, double cpu_user_s,
                              double cpu_sys_s) {
  std::string out;
  out.reserve(8192);
  Family(&out, "feedrate_info", "gauge", "always 1; the version as a label")
      .Sample("", labels + ",version=\"" + EscapeLabelValue(version) + "\"", 1);
  Family ph(&out, "feedrate_phase", "gauge", "1 for the phase the run is in, 0 for the others");
  for (const RunPhase p : kPhases) ph.Sample("", labels + ",phase=\"" + PhaseName(p) + "\"", p == phase ? 1 : 0);
  Family(&out, "feedrate_accelerators", "gauge", "accelerators this rank emulates").Sample("", labels, static_cast<double>(accelerators));
  Family(&out, "feedrate_epoch", "gauge", "the epoch in progress (1-based; 0 before training)").Sample("", labels, static_cast<double>(f.epoch));
  Family(&out, "feedrate_steps_total", "counter", "accelerator-steps finished (each accelerator's steps, summed)")
      .Sample("", labels, static_cast<double>(f.steps));
  Family(&out, "feedrate_delivered_bytes_total", "counter", "bytes of the batches handed to the accelerators")
      .Sample("", labels, static_cast<double>(f.delivered_bytes));
  Family(&out, "feedrate_compute_seconds_total", "counter", "accelerator-seconds of emulated compute")
      .Sample("", labels, f.compute_s);
  Family(&out, "feedrate_stall_seconds_total", "counter",
         "accelerator-seconds spent waiting for a batch (a wait in progress counts up to the scrape)")
      .Sample("", labels, f.stall_s);
  Family(&out, "feedrate_au_percent", "gauge", "this rank's running AU in the epoch in progress")
      .Sample("", labels, f.epoch_au_pct);
  Family(&out, "feedrate_read_bytes_total", "counter", "bytes the I/O threads read from the storage")
      .Sample("", labels, static_cast<double>(f.io.bytes));
  Family(&out, "feedrate_reads_total", "counter", "sample reads completed (a coalesced run counts once)")
      .Sample("", labels, static_cast<double>(f.io.reads));
  LatencyHistogramSeries(&out, f.io, labels);
  Family cpu(&out, "feedrate_cpu_seconds_total", "counter", "CPU time of this rank's process");
  cpu.Sample("", labels + ",mode=\"user\"", cpu_user_s);
  cpu.Sample("", labels + ",mode=\"system\"", cpu_sys_s);
  if (job) JobSeries(&out, *job, labels);
  return out;
}

LiveMetrics::LiveMetrics(Labels labels, uint64_t accelerators) : labels_(std::move(labels)), accelerators_(accelerators) {}

void LiveMetrics::Attach(const IoStats* io, const TrainProgress* progress, const AcceleratorLive* live) {
  std::lock_guard<std::mutex> lock(mu_);
  io_ = io;
  progress_ = progress;
  live_ = live;
  phase_ = RunPhase::kTraining;
}

void LiveMetrics::Freeze() {
  std::lock_guard<std::mutex> lock(mu_);
  frozen_ = TakeLocked();
  io_ = nullptr;
  progress_ = nullptr;
  live_ = nullptr;
}

void LiveMetrics::SetPhase(RunPhase phase) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_ = phase;
}

void LiveMetrics::SetJob(const JobFigures& job) {
  std::lock_guard<std::mutex> lock(mu_);
  job_ = job;
}

RunPhase LiveMetrics::phase() const {
  std::lock_guard<std::mutex> lock(mu_);
  return phase_;
}

LiveFigures LiveMetrics::TakeLocked() const {
  if (frozen_) return *frozen_;
  LiveFigures f;
  const int64_t now = NowNs();
  if (io_ != nullptr) f.io = io_->Take();
  if (progress_ != nullptr) {
    const TrainProgress& p = *progress_;
    f.epoch = p.epoch.load(std::memory_order_relaxed);
    f.steps = p.total_steps.load(std::memory_order_relaxed);
    f.delivered_bytes = p.total_bytes.load(std::memory_order_relaxed);
    f.compute_s = static_cast<double>(p.total_compute_ns.load(std::memory_order_relaxed)) / 1e9;
    const int64_t start = p.epoch_start_ns.load(std::memory_order_relaxed);
    if (start > 0 && now > start && accelerators_ > 0) {
      f.epoch_au_pct = 100.0 * static_cast<double>(p.compute_ns.load(std::memory_order_relaxed)) / 1e9 /
                       (static_cast<double>(now - start) / 1e9 * static_cast<double>(accelerators_));
    }
  }
  if (live_ != nullptr) {
    double stall_ns = 0;
    for (uint64_t a = 0; a < accelerators_; ++a) {
      const int64_t start = live_[a].wait_start_ns.load(std::memory_order_relaxed);
      stall_ns += static_cast<double>(live_[a].stall_ns.load(std::memory_order_relaxed));
      if (start > 0 && start < now) stall_ns += static_cast<double>(now - start);
    }
    f.stall_s = stall_ns / 1e9;
  }
  return f;
}

std::string LiveMetrics::Render() const {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  const std::string labels = "workload=\"" + EscapeLabelValue(labels_.workload) + "\",rank=\"" +
                             std::to_string(labels_.rank) + "\",host=\"" + EscapeLabelValue(labels_.host) + "\"";
  std::lock_guard<std::mutex> lock(mu_);
  return RenderLiveMetrics(TakeLocked(), phase_, accelerators_, labels, labels_.version, job_, TimevalSeconds(ru.ru_utime),
                           TimevalSeconds(ru.ru_stime));
}

MetricsTextfile::MetricsTextfile(const LiveMetrics& metrics, std::string path, double interval_s)
    : metrics_(metrics), path_(std::move(path)), interval_s_(interval_s > 0 ? interval_s : 1.0) {}

MetricsTextfile::~MetricsTextfile() { (void)Stop(); }

Status MetricsTextfile::Start() {
  FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(path_, metrics_.Render(), /*durable=*/false));
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

Status MetricsTextfile::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return first_error_;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  Status last = WriteFileSafely(path_, metrics_.Render(), /*durable=*/false);
  std::lock_guard<std::mutex> lock(mu_);
  if (first_error_.ok()) first_error_ = last;
  return first_error_;
}

void MetricsTextfile::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return stop_; })) {
    lock.unlock();
    Status st = WriteFileSafely(path_, metrics_.Render(), /*durable=*/false);
    lock.lock();
    if (first_error_.ok() && !st.ok()) first_error_ = st;
  }
}

}  // namespace feedrate
