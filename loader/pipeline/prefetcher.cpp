// Prefetcher implementation.
#include "loader/pipeline/prefetcher.h"

#include <algorithm>

namespace feedrate {

uint64_t Prefetcher::MaxExtent(const std::vector<SampleExtent>& extents) {
  uint64_t m = 0;
  for (const auto& e : extents) m = std::max(m, e.length);
  return m;
}

Prefetcher::Prefetcher(IoEngine& engine, const std::vector<SampleExtent>& extents, uint64_t samples_per_file,
                       uint64_t batch_size, uint64_t depth, bool retain_batches, uint64_t direct_align)
    : engine_(engine),
      extents_(extents),
      samples_per_file_(samples_per_file),
      batch_(batch_size),
      depth_(std::max<uint64_t>(1, depth)),
      max_extent_(MaxExtent(extents)),
      slots_(std::make_unique<Slot[]>(depth_)) {
  stride_ = direct_align > 0 ? (max_extent_ + 2 * direct_align + direct_align - 1) / direct_align * direct_align
                             : max_extent_;
  if (retain_batches) {
    size_t align = std::max<size_t>(AlignedBuffer::kAlignment, direct_align);
    for (uint64_t i = 0; i < depth_; ++i) slots_[i].retained = AlignedBuffer(batch_ * stride_, align);
    retained_bytes_ = depth_ * batch_ * stride_;
  }
}

Prefetcher::~Prefetcher() { Drain(); }

void Prefetcher::StartEpoch(const std::vector<uint64_t>* samples, uint64_t steps) {
  samples_ = samples;
  steps_ = steps;
  next_submit_ = 0;
  while (next_submit_ < steps_ && next_submit_ < depth_) SubmitBatch(next_submit_++);
}

void Prefetcher::SubmitBatch(uint64_t step) {
  Slot& slot = slots_[step % depth_];
  slot.bytes.store(0, std::memory_order_relaxed);
  slot.failed.store(false, std::memory_order_relaxed);
  slot.error = Status::Ok();
  slot.pending.store(static_cast<uint32_t>(batch_), std::memory_order_release);
  const uint64_t* ids = samples_->data() + step * batch_;
  for (uint64_t i = 0; i < batch_; ++i) {
    ReadRequest r;
    r.extent = extents_[ids[i] / samples_per_file_];
    r.dest = slot.retained.data() != nullptr ? slot.retained.data() + i * stride_ : nullptr;
    r.target = this;
    r.tag = step % depth_;
    engine_.Submit(r);
  }
}

void Prefetcher::OnComplete(uint64_t tag, uint64_t bytes, const Status& status) {
  Slot& slot = slots_[tag];
  slot.bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (!status.ok() && !slot.failed.exchange(true, std::memory_order_relaxed)) slot.error = status;
  if (slot.pending.fetch_sub(1, std::memory_order_acq_rel) == 1) slot.pending.notify_all();
}

BatchResult Prefetcher::WaitBatch(uint64_t step) {
  Slot& slot = slots_[step % depth_];
  for (uint32_t p; (p = slot.pending.load(std::memory_order_acquire)) != 0;) {
    slot.pending.wait(p, std::memory_order_acquire);
  }
  BatchResult r{slot.bytes.load(std::memory_order_relaxed), slot.failed.load(std::memory_order_relaxed) ? slot.error : Status::Ok()};
  if (r.status.ok() && next_submit_ < steps_) SubmitBatch(next_submit_++);
  return r;
}

void Prefetcher::Drain() {
  for (uint64_t i = 0; i < depth_; ++i) {
    Slot& slot = slots_[i];
    for (uint32_t p; (p = slot.pending.load(std::memory_order_acquire)) != 0;) {
      slot.pending.wait(p, std::memory_order_acquire);
    }
  }
}

}  // namespace feedrate
