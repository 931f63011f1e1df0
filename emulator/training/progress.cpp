// ProgressReporter: one thread that formats the counters and rewrites the terminal line (\r + erase line).
#include "emulator/training/progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "emulator/training/compute_clock.h"

namespace feedrate {

namespace {

struct Figures {
  uint64_t epoch = 0, step = 0;
  double elapsed = 0, mib_per_s = 0, au_pct = 0, eta_s = -1;
};

Figures Compute(const TrainProgress& p, const ProgressReporter::Shape& s, int64_t now_ns) {
  Figures f;
  f.epoch = p.epoch.load(std::memory_order_relaxed);
  const int64_t start = p.epoch_start_ns.load(std::memory_order_relaxed);
  const uint64_t acc_steps = p.steps.load(std::memory_order_relaxed);
  const double acc = static_cast<double>(std::max<uint64_t>(1, s.local_accelerators));
  f.step = acc_steps / std::max<uint64_t>(1, s.local_accelerators);
  f.elapsed = start > 0 && now_ns > start ? static_cast<double>(now_ns - start) / 1e9 : 0;
  if (f.elapsed > 0) {
    f.mib_per_s = static_cast<double>(p.bytes.load(std::memory_order_relaxed)) / 1048576.0 / f.elapsed;
    f.au_pct = 100.0 * static_cast<double>(p.compute_ns.load(std::memory_order_relaxed)) / 1e9 / (f.elapsed * acc);
  }
  if (acc_steps > 0 && f.epoch > 0) {
    const double per_step = f.elapsed / (static_cast<double>(acc_steps) / acc);
    const double left = static_cast<double>(s.steps_per_epoch - std::min(f.step, s.steps_per_epoch)) +
                        static_cast<double>(s.epochs - std::min(f.epoch, s.epochs)) * static_cast<double>(s.steps_per_epoch);
    f.eta_s = per_step * left;
  }
  return f;
}

std::string Clock(double secs) {
  if (secs < 0) return "--";
  const auto t = static_cast<long long>(secs + 0.5);
  char b[32];
  if (t >= 3600) {
    std::snprintf(b, sizeof b, "%lldh%02lldm", t / 3600, t / 60 % 60);
  } else {
    std::snprintf(b, sizeof b, "%lldm%02llds", t / 60, t % 60);
  }
  return b;
}

}  // namespace

ProgressMode ChooseProgressMode(bool quiet, bool json_events) {
  if (quiet) return ProgressMode::kQuiet;
  if (json_events) return ProgressMode::kJsonEvents;
  return ::isatty(STDOUT_FILENO) != 0 ? ProgressMode::kStatusLine : ProgressMode::kEpochLines;
}

std::string ProgressReporter::StatusText(const TrainProgress& p, const Shape& s, int64_t now_ns) {
  const Figures f = Compute(p, s, now_ns);
  char b[256];
  std::snprintf(b, sizeof b, "epoch %llu/%llu  step %llu/%llu  %.1f MiB/s  AU %.1f%%  ETA %s%s",
                static_cast<unsigned long long>(f.epoch), static_cast<unsigned long long>(s.epochs),
                static_cast<unsigned long long>(f.step), static_cast<unsigned long long>(s.steps_per_epoch), f.mib_per_s,
                f.au_pct, Clock(f.eta_s).c_str(), s.ranks > 1 ? "  (rank 0's accelerators)" : "");
  return b;
}

std::string ProgressReporter::StatusJson(const TrainProgress& p, const Shape& s, int64_t now_ns) {
  const Figures f = Compute(p, s, now_ns);
  nlohmann::json j = {{"event", "progress"}, {"epoch", f.epoch},     {"epochs", s.epochs},
                      {"step", f.step},      {"steps", s.steps_per_epoch},
                      {"mib_per_s", f.mib_per_s},
                      {"au_pct", f.au_pct},  {"eta_s", f.eta_s < 0 ? nlohmann::json() : nlohmann::json(f.eta_s)},
                      {"rank", s.rank},      {"accelerators", s.local_accelerators}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ProgressReporter::ProgressReporter(const TrainProgress& progress, Shape shape, ProgressMode mode)
    : progress_(progress), shape_(shape), mode_(mode) {
  if (mode_ == ProgressMode::kStatusLine || mode_ == ProgressMode::kJsonEvents) thread_ = std::thread([this] { Loop(); });
}

ProgressReporter::~ProgressReporter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (line_shown_) {
    std::fputs("\r\033[K", stdout);
    std::fflush(stdout);
  }
}

void ProgressReporter::Emit(const std::string& line) {
  if (mode_ == ProgressMode::kQuiet) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (line_shown_) std::fputs("\r\033[K", stdout);
  line_shown_ = false;
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void ProgressReporter::Loop() {
  const auto period = mode_ == ProgressMode::kStatusLine ? std::chrono::milliseconds(250) : std::chrono::milliseconds(1000);
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, period, [&] { return stop_; })) {
    if (progress_.epoch.load(std::memory_order_relaxed) == 0) continue;  // still setting up
    if (mode_ == ProgressMode::kStatusLine) {
      std::fputs(("\r\033[K" + StatusText(progress_, shape_, NowNs())).c_str(), stdout);
      line_shown_ = true;
    } else {
      std::fputs((StatusJson(progress_, shape_, NowNs()) + "\n").c_str(), stdout);
    }
    std::fflush(stdout);
  }
}

}  // namespace feedrate
