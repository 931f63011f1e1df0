// Prefetcher: keeps up to `batches_in_flight` batches of one accelerator in flight through the I/O engine and hands
// them over in order. Completion bookkeeping is atomic counters per batch slot: no lock per sample.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loader/format/sample_table.h"
#include "loader/io/aligned_buffer.h"
#include "loader/io/io_engine.h"
#include "loader/io/page_cache.h"
#include "loader/pipeline/batch_staging.h"
#include "loader/pipeline/sample_sequence.h"
#include "loader/status.h"
#include "loader/util/choices.h"

namespace feedrate {

// run --verify: each sample's payload (content_pattern.h) checked against the dataset's verifiable pattern.
struct ContentCheck {
  DataFormat format = DataFormat::kNpz;
  std::vector<uint64_t> keys;  // per file of the FileTable: ContentKey(seed, path relative to the data folder)
  double fraction = 1.0;       // of each sample's payload bytes, as one window at a varying position
  std::atomic<uint64_t> bytes_checked{0};
  std::atomic<uint64_t> ns{0};  // time spent checking, summed over I/O threads
};

struct BatchResult {
  uint64_t bytes = 0;  // bytes really read for this batch
  Status status;
};

// Call order (one accelerator thread owns it): the set_* calls, then per epoch StartEpoch, then for each step in
// order WaitBatch(step) and, once the step's compute has started, Refill() (or Drain after an error or a stop), then
// the next StartEpoch. REQUIRES: the engine, table and files outlive it; a prefetcher a read was lost into (lost())
// is never destroyed (PrefetcherPtr).
class Prefetcher final : public CompletionTarget {
 public:
  // `table` maps sample ids to extents. With retain_batches, each slot owns a buffer big enough for a whole batch
  // and reads land there. `direct_align` > 0 means O_DIRECT: each retained sample gets an aligned slot large
  // enough for its window. table.check runs on each sample as it completes, on the engine thread, where the
  // engine hands over the sample in one piece (retain when samples can exceed one transfer); `files` names the
  // file in errors. With `coalesce_bytes` > 0, consecutive samples of a batch that lie back to back in one file
  // (TFRecord records in file order) are read as one request of up to that many bytes, the way TensorFlow's
  // reader fills a buffer of DLIO's reader.transfer_size: small records then cost one read per buffer, not each.
  // Retained reads are packed in their slot, so a slot needs room for `slot_reads` samples with bytes, the most a
  // batch can hold (SampleTable::MaxReadsPerBatch; 0: the batch size): whole Parquet row groups read in order
  // need one or two, not a batch's worth.
  Prefetcher(IoEngine& engine, const SampleTable& table, uint64_t batch_size, uint64_t batches_in_flight, bool retain_batches,
             uint64_t direct_align = 0, const FileTable* files = nullptr, uint64_t coalesce_bytes = 0,
             uint64_t slot_reads = 0);
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  ~Prefetcher();  // waits for reads still in flight

  // Starts an epoch over `samples` (steps * batch ids, kept alive and unchanged by the caller until the next
  // StartEpoch or Drain): submits the first batches.
  void StartEpoch(const SampleSequence* samples, uint64_t steps);
  // The same over a list of ids (kept alive by the caller likewise).
  void StartEpoch(const std::vector<uint64_t>* ids, uint64_t steps) {
    listed_ = SampleSequence::View(ids->data(), ids->size());
    StartEpoch(&listed_, steps);
  }
  // Blocks until batch `step` is fully read. It does not queue the next batch: Refill does, so that queueing reads
  // (and the I/O threads it wakes, which may take the CPU) falls in the compute the accelerator overlaps it with,
  // not in the timed wait. Batches up to `step` that Refill did not queue are queued first. With a completion
  // timeout, a wait in which no read of the batch completes for that long gives up: the result is an error naming
  // the first read still outstanding (file, offset, length), and lost() turns true.
  BatchResult WaitBatch(uint64_t step);
  // Refills the pipeline: queues the batches that fit the slots freed so far (batch step + batches_in_flight after
  // WaitBatch(step)). Nothing after a failed batch.
  void Refill();
  // Waits for every batch still in flight (after an error or an early stop), within the completion timeout; returns
  // at once once lost(). Once the stop flag is raised, within kStopGrace: reads still out then are left (lost()).
  void Drain();
  // A flag (a signal handler's) that ends waits: WaitBatch then returns a Stopped status within kStopPoll, and
  // Drain gives reads in flight kStopGrace. nullptr (the default): waits end only on completion or timeout.
  void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }
  static constexpr int64_t kStopPoll = 200'000'000;   // ns
  static constexpr int64_t kStopGrace = 300'000'000;  // ns
  // Gives up a wait after `ns` without a completion (0: wait forever, the default). Call before StartEpoch.
  void set_completion_timeout(int64_t ns) { completion_timeout_ns_ = ns; }
  // A read never completed within the timeout: an I/O thread may still complete it into this object later, so the
  // owner must not destroy it (nor the engine) while the process lives (see KeepIfLost).
  bool lost() const { return lost_; }
  // Where to add the time the I/O threads spend in sample checks (CRC, decoding), in ns; nullptr: not measured.
  void set_check_time_counter(std::atomic<uint64_t>* ns) { check_ns_ = ns; }
  // How a residency probe looks at the page cache: SampleResidency with the run's method, or a test's fake.
  using ResidencyProbe = Result<Residency> (*)(int fd, uint64_t offset, uint64_t length, ResidencyMethod method);
  // Page-cache residency sampling: every `every`-th read request is probed by the I/O thread that reads it, once
  // its file is open and just before its read (IoEngine calls BeforeRead), never on the accelerator thread; 0 turns
  // it off. Call before StartEpoch. What the probes saw accumulates until TakeResidency().
  void set_residency_sampling(uint64_t every, ResidencyMethod method = DefaultResidencyMethod(),
                              ResidencyProbe probe = &SampleResidency) {
    probe_every_ = every;
    probe_method_ = method;
    probe_ = probe;
  }
  // DLIO's DataLoader workers (DlioEngine): batch `step` of each epoch is read by lane first + step % count, as
  // PyTorch's DataLoader hands batch k to worker k % read_threads. Call before StartEpoch; default: lane 0 alone.
  // `file_lanes` (TensorFlow's streams): a request goes to lane first + (*file_lanes)[its file] instead, so each
  // file is one lane's stream. REQUIRES: file_lanes, when given, outlives the prefetcher, has an entry < count for
  // every file of the table.
  void set_lanes(uint32_t first, uint32_t count, const std::vector<uint32_t>* file_lanes = nullptr) {
    lane_first_ = first;
    lane_count_ = count == 0 ? 1 : count;
    file_lanes_ = file_lanes;
  }
  // Content verification on the I/O threads as samples complete (nullptr: off); needs samples in one buffer,
  // like the sample checks.
  void set_content_check(ContentCheck* check) { content_ = check; }
  // What the probes of the reads completed so far saw; call when no read is in flight (after WaitBatch of an
  // epoch's last step or Drain), since probes run on the I/O threads.
  Residency TakeResidency() {
    return {probed_bytes_.exchange(0, std::memory_order_relaxed), resident_bytes_.exchange(0, std::memory_order_relaxed)};
  }
  // Probes that failed (e.g. a file system without mmap); their reads count as not examined.
  uint64_t probe_failures() const { return probe_failures_.load(std::memory_order_relaxed); }
  // Memory the slots hold (retain mode).
  uint64_t retained_bytes() const { return retained_bytes_; }
  // The slot size a retained prefetcher needs for `slot_reads` samples with bytes a batch (what a BatchStaging's
  // slots must hold).
  static uint64_t SlotBytes(const SampleTable& table, uint64_t slot_reads, uint64_t direct_align);
  static uint64_t WindowBytes(uint64_t length, uint64_t direct_align);
  // Batches land in `staging`'s slots instead of the prefetcher's own (run --accelerator-memory), and when it
  // copies, a batch is handed out only once its copy has landed (WaitBatch waits for it: part of the stall).
  // REQUIRES: retain mode, staging->slots() == batches_in_flight, staging->slot_bytes() >= SlotBytes(...); call before the
  // first StartEpoch; `staging` outlives the prefetcher.
  Status set_staging(BatchStaging* staging);

  void OnComplete(uint64_t tag, uint64_t bytes, const Status& status, const char* data) override;
  void BeforeRead(const ReadRequest& request, int fd) override;

 private:
  struct Slot {
    // Reads of the batch not completed yet, plus kWaiting while the accelerator thread waits on it: in one word, so
    // the completion that ends the batch learns from its own decrement whether to wake anyone and touches the slot
    // no more after it (the owner may free it as soon as it sees 0).
    std::atomic<uint32_t> pending{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<bool> failed{false};
    Status error;  // written once, by the completion that set `failed`, before its pending decrement
    AlignedBuffer retained;
    char* base = nullptr;  // where the batch's reads land: `retained`, a staging slot, or nullptr (engine buffers)
    uint64_t step = 0;  // the batch the slot holds (written before its reads are submitted)
    std::unique_ptr<uint32_t[]> group;  // group[i]: samples read by the request starting at batch index i
    std::unique_ptr<std::atomic<uint8_t>[]> done;  // done[i]: the request starting at batch index i completed
    std::unique_ptr<CopyRange[]> ranges;  // staging that copies: each request's sample bytes in the slot
    uint32_t nranges = 0;
  };
  Status CheckSample(const SampleExtent& e, uint64_t id, const char* data) const;
  Status VerifyContent(const SampleExtent& e, uint64_t id, const char* data) const;
  Status CheckParquetGroup(const SampleExtent& e, const char* data, std::string_view path) const;
  static void Fail(Slot& slot, const Status& st);
  void EndBatchReads(Slot& slot, uint64_t index);
  void SubmitBatch(uint64_t step);
  static constexpr uint32_t kWaiting = 1u << 31;
  enum class WaitEnd { kDone, kLost, kStopped };
  WaitEnd WaitSlot(Slot& slot, int64_t stop_at);  // stop_at < 0: the stop flag is not looked at

  Status Outstanding(const Slot& slot) const;  // the error naming the first read of `slot` not completed

  IoEngine& engine_;
  const SampleTable& table_;
  const FileTable* files_;
  uint64_t batch_;
  uint64_t direct_align_;
  uint64_t coalesce_bytes_;
  uint64_t batches_in_flight_;
  uint64_t max_extent_ = 0;
  uint64_t stride_ = 0;  // the most bytes one retained sample's window takes in a slot
  uint64_t slot_bytes_ = 0;  // a retained slot's size: slot_reads samples of stride_
  uint64_t retained_bytes_ = 0;
  std::unique_ptr<Slot[]> slots_;
  const SampleSequence* samples_ = nullptr;
  SampleSequence listed_;  // StartEpoch's view of a caller's list
  uint64_t steps_ = 0;
  uint64_t next_submit_ = 0;
  std::unique_ptr<ReadRequest[]> requests_;  // one batch's requests, built here and queued with one Submit
  uint64_t consumed_ = 0;      // batches WaitBatch has handed out this epoch
  bool refill_ok_ = true;      // the last batch handed out read cleanly
  BatchStaging* staging_ = nullptr;
  bool copies_ = false;        // staging_ copies each batch: pending holds one more count, the copy's
  std::atomic<uint64_t>* check_ns_ = nullptr;
  ContentCheck* content_ = nullptr;
  uint64_t epoch_salt_ = 0;
  const std::vector<uint32_t>* file_lanes_ = nullptr;
  uint32_t lane_first_ = 0, lane_count_ = 1;  // varies the verified window's position between epochs
  int64_t completion_timeout_ns_ = 0;
  const std::atomic<bool>* stop_ = nullptr;
  bool lost_ = false;
  uint64_t probe_every_ = 0;
  uint64_t probe_count_ = 0;  // requests submitted (accelerator thread only)
  ResidencyMethod probe_method_ = ResidencyMethod::kMincoreWindow;
  ResidencyProbe probe_ = nullptr;
  // Written by the I/O threads' probes (relaxed adds, sampled requests only).
  std::atomic<uint64_t> probed_bytes_{0};
  std::atomic<uint64_t> resident_bytes_{0};
  std::atomic<uint64_t> probe_failures_{0};
};

// Owns a Prefetcher but leaves it allocated when a read into it was lost (Prefetcher::lost()): an I/O thread may
// still complete that read into it, so freeing it would be a use after free; the process ends without it.
struct KeepIfLost {
  void operator()(Prefetcher* p) const {
    if (!p->lost()) delete p;
  }
};
using PrefetcherPtr = std::unique_ptr<Prefetcher, KeepIfLost>;

}  // namespace feedrate
