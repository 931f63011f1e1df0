// Prefetcher: keeps up to `depth` batches of one accelerator in flight through the I/O engine and hands
// them over in order. Completion bookkeeping is atomic counters per batch slot: no lock per sample.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/io/io_engine.h"
#include "loader/status.h"

namespace feedrate {

struct BatchResult {
  uint64_t bytes = 0;  // bytes really read for this batch
  Status status;
};

class Prefetcher final : public CompletionTarget {
 public:
  // `extents[f]` is file f's sample extent; `samples_per_file` maps sample ids to files.
  // With retain_batches, each slot owns a buffer big enough for a whole batch and reads land there.
  // `direct_align` > 0 means O_DIRECT: each retained sample gets an aligned slot large enough for its window.
  Prefetcher(IoEngine& engine, const std::vector<SampleExtent>& extents, uint64_t samples_per_file,
             uint64_t batch_size, uint64_t depth, bool retain_batches, uint64_t direct_align = 0);
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  ~Prefetcher();  // waits for reads still in flight

  // Starts an epoch over `samples` (steps * batch ids, kept alive by the caller): submits the first batches.
  void StartEpoch(const std::vector<uint64_t>* samples, uint64_t steps);
  // Blocks until batch `step` is fully read, then refills the pipeline with batch step + depth.
  BatchResult WaitBatch(uint64_t step);
  // Waits for every batch still in flight (after an error or an early stop).
  void Drain();
  // Memory the slots hold (retain mode).
  uint64_t retained_bytes() const { return retained_bytes_; }
  // Largest sample extent, for memory planning.
  static uint64_t MaxExtent(const std::vector<SampleExtent>& extents);

  void OnComplete(uint64_t tag, uint64_t bytes, const Status& status) override;

 private:
  struct Slot {
    std::atomic<uint32_t> pending{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<bool> failed{false};
    Status error;  // written once, by the completion that set `failed`, before its pending decrement
    AlignedBuffer retained;
  };
  void SubmitBatch(uint64_t step);

  IoEngine& engine_;
  const std::vector<SampleExtent>& extents_;
  uint64_t samples_per_file_;
  uint64_t batch_;
  uint64_t depth_;
  uint64_t max_extent_ = 0;
  uint64_t stride_ = 0;  // bytes between retained samples in a slot
  uint64_t retained_bytes_ = 0;
  std::unique_ptr<Slot[]> slots_;
  const std::vector<uint64_t>* samples_ = nullptr;
  uint64_t steps_ = 0;
  uint64_t next_submit_ = 0;
};

}  // namespace feedrate
