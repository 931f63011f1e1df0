// Live progress on rank 0: a status line refreshed four times a second on a terminal (epoch, step, delivered
// MiB/s, running AU, ETA), one JSON object per second with --json-events, nothing with --quiet. The figures are
// this rank's (labelled so under MPI), read from counters the accelerator threads add to once per step.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace feedrate {

// Written by the accelerator threads (one relaxed add each per step) and reset at each epoch's start barrier.
struct TrainProgress {
  std::atomic<uint64_t> epoch{0};          // 1-based epoch in progress; 0 before the first
  std::atomic<int64_t> epoch_start_ns{0};
  std::atomic<uint64_t> steps{0};          // accelerator-steps finished in this epoch, all local accelerators
  std::atomic<uint64_t> bytes{0};          // bytes read in this epoch
  std::atomic<uint64_t> compute_ns{0};     // emulated compute in this epoch
  // The same since training started, never reset (the metrics endpoint's counters).
  std::atomic<uint64_t> total_steps{0}, total_bytes{0}, total_compute_ns{0};
};

enum class ProgressMode { kStatusLine, kEpochLines, kJsonEvents, kQuiet };

// The mode a run gets: --quiet, --json-events, else a status line when stdout is a terminal, else epoch lines.
ProgressMode ChooseProgressMode(bool quiet, bool json_events);

class ProgressReporter {
 public:
  struct Shape {
    uint64_t epochs = 1, steps_per_epoch = 1, local_accelerators = 1;
    int rank = 0, ranks = 1;
  };
  // Starts the refresh thread for kStatusLine and kJsonEvents; otherwise does nothing until Emit.
  ProgressReporter(const TrainProgress& progress, Shape shape, ProgressMode mode);
  ~ProgressReporter();  // stops the thread and clears the status line
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Prints a whole line (an epoch summary or a JSON event) without tearing the status line.
  void Emit(const std::string& line);
  ProgressMode mode() const { return mode_; }

  // The status text for the current counters (exposed for tests).
  static std::string StatusText(const TrainProgress& p, const Shape& s, int64_t now_ns);
  static std::string StatusJson(const TrainProgress& p, const Shape& s, int64_t now_ns);

 private:
  void Loop();
  const TrainProgress& progress_;
  Shape shape_;
  ProgressMode mode_;
  std::mutex mu_;  // output and stop flag (a few times per second, never per sample)
  std::condition_variable wake_;
  bool stop_ = false;
  bool line_shown_ = false;
  std::thread thread_;
};

}  // namespace feedrate
