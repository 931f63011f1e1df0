// Prefetcher implementation.
#include "loader/pipeline/prefetcher.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "loader/format/image_decode.h"
#include "loader/format/tfrecord.h"
#include "loader/util/clock.h"
#include "loader/util/content_pattern.h"
#include "loader/util/futex.h"

namespace feedrate {

Prefetcher::Prefetcher(IoEngine& engine, const SampleTable& table, uint64_t batch_size, uint64_t batches_in_flight,
                       bool retain_batches, uint64_t direct_align, const FileTable* files, uint64_t coalesce_bytes,
                       uint64_t slot_reads)
    : engine_(engine),
      table_(table),
      files_(files),
      batch_(batch_size),
      direct_align_(direct_align),
      coalesce_bytes_(coalesce_bytes),
      batches_in_flight_(std::max<uint64_t>(1, batches_in_flight)),
      max_extent_(table.MaxLength()),
      slots_(std::make_unique<Slot[]>(batches_in_flight_)),
      requests_(std::make_unique<ReadRequest[]>(batch_)) {
  stride_ = SlotBytes(table, 1, direct_align);
  slot_bytes_ = stride_ * std::min(batch_, slot_reads > 0 ? slot_reads : batch_);
  for (uint64_t i = 0; i < batches_in_flight_; ++i) {
    slots_[i].group = std::make_unique<uint32_t[]>(batch_);
    slots_[i].done = std::make_unique<std::atomic<uint8_t>[]>(batch_);
  }
  if (retain_batches) {
    size_t align = std::max<size_t>(AlignedBuffer::kAlignment, direct_align);
    for (uint64_t i = 0; i < batches_in_flight_; ++i) {
      slots_[i].retained = AlignedBuffer(slot_bytes_, align);
      slots_[i].base = slots_[i].retained.data();
    }
    retained_bytes_ = batches_in_flight_ * slot_bytes_;
  }
}

uint64_t Prefetcher::SlotBytes(const SampleTable& table, uint64_t slot_reads, uint64_t direct_align) {
  return slot_reads * WindowBytes(table.MaxLength(), direct_align);
}

// What a read of `length` bytes takes in a retained slot: O_DIRECT widens it to aligned ends (and keeps the next
// window aligned).
uint64_t Prefetcher::WindowBytes(uint64_t length, uint64_t direct_align) {
  return direct_align > 0 ? (length + 2 * direct_align + direct_align - 1) / direct_align * direct_align : length;
}

Status Prefetcher::set_staging(BatchStaging* staging) {
  if (slots_[0].retained.data() == nullptr) return Status::InvalidArgument("batch staging needs retained batches");
  if (staging->slots() != batches_in_flight_ || staging->slot_bytes() < slot_bytes_) {
    return Status::InvalidArgument("batch staging of " + std::to_string(staging->slots()) + " slots of " +
                                   std::to_string(staging->slot_bytes()) + " bytes; the prefetcher needs " +
                                   std::to_string(batches_in_flight_) + " of " + std::to_string(slot_bytes_));
  }
  if (staging->slots_on_device() && (table_.check != SampleCheck::kNone || content_ != nullptr)) {
    return Status::InvalidArgument("batch staging in GPU memory: the samples cannot be checked on the host");
  }
  staging_ = staging;
  copies_ = staging->copies();
  for (uint64_t i = 0; i < batches_in_flight_; ++i) {
    slots_[i].retained = AlignedBuffer();  // the staging's memory replaces it
    slots_[i].base = staging->slot(i);
    if (copies_) slots_[i].ranges = std::make_unique<CopyRange[]>(batch_);
  }
  return Status::Ok();
}

Prefetcher::~Prefetcher() {
  for (uint64_t i = 0; i < batches_in_flight_ && !lost_; ++i) WaitSlot(slots_[i], -1);  // every read, stop or not
}

void Prefetcher::StartEpoch(const SampleSequence* samples, uint64_t steps) {
  samples_ = samples;
  steps_ = steps;
  ++epoch_salt_;
  next_submit_ = 0;
  consumed_ = 0;
  refill_ok_ = true;
  Refill();
}

void Prefetcher::SubmitBatch(uint64_t step) {
  Slot& slot = slots_[step % batches_in_flight_];
  slot.bytes.store(0, std::memory_order_relaxed);
  slot.failed.store(false, std::memory_order_relaxed);
  slot.error = Status::Ok();
  slot.step = step;
  slot.nranges = 0;
  slot.pending.store(static_cast<uint32_t>(batch_ + (copies_ ? 1 : 0)), std::memory_order_release);
  const SampleIds ids = samples_->From(step * batch_);
  size_t queued = 0;
  uint64_t fill = 0;  // retained slots: where the next read lands (reads are packed, see the constructor)
  for (uint64_t i = 0; i < batch_;) {
    ReadRequest& r = requests_[queued++];
    r = ReadRequest{};
    r.extent = table_.At(ids[i]);
    // PyTorch: batch k goes to worker k % workers; TensorFlow: each file is one stream's
    r.pass = static_cast<uint32_t>(epoch_salt_);  // a stream reads each file once per epoch
    r.lane = lane_first_ + (file_lanes_ != nullptr ? (*file_lanes_)[r.extent.file] : static_cast<uint32_t>(step % lane_count_));
    uint64_t n = 1;
    for (; i + n < batch_ && coalesce_bytes_ > 0 && r.extent.length != kWholeFile; ++n) {
      const SampleExtent next = table_.At(ids[i + n]);
      if (next.length == kWholeFile || next.file != r.extent.file || next.offset != r.extent.offset + r.extent.length ||
          r.extent.length + next.length + 2 * direct_align_ > coalesce_bytes_) {  // the window fits one transfer
        break;
      }
      r.extent.length += next.length;
    }
    slot.group[i] = static_cast<uint32_t>(n);
    r.ends_batch = i + n == batch_;
    slot.done[i].store(0, std::memory_order_relaxed);  // published to the I/O thread by Submit's queue
    // A request's window takes at most `stride_` per sample with bytes in it, and a slot holds slot_reads of
    // those: the packed windows fit. One that would not (a bound that was wrong) is read into the engine's
    // buffers and fails the batch: its bytes never reach the batch's memory.
    const uint64_t window = r.extent.length == kWholeFile ? stride_ : r.extent.length == 0 ? 0 : WindowBytes(r.extent.length, direct_align_);
    const bool fits = slot.base != nullptr && fill + window <= slot_bytes_;
    if (slot.base != nullptr && !fits) {
      Fail(slot, Status::IoError("batch " + std::to_string(step) + "'s reads need more than its retained slot of " +
                                  std::to_string(slot_bytes_) + " bytes"));
    }
    r.dest = fits ? slot.base + fill : nullptr;
    if (copies_ && fits) {  // the sample bytes inside the request's window (O_DIRECT widens it to the alignment)
      const uint64_t lead = direct_align_ > 0 ? r.extent.offset % direct_align_ : 0;
      slot.ranges[slot.nranges++] = {fill + lead, r.extent.length == kWholeFile ? 0 : r.extent.length};
    }
    if (fits) fill += window;
    r.target = this;
    r.tag = (step % batches_in_flight_) * batch_ + i;
    r.probe_residency = probe_every_ > 0 && probe_count_++ % probe_every_ == 0;
    i += n;
  }
  engine_.Submit(std::span<const ReadRequest>(requests_.get(), queued));  // one wake-up for the batch
}

// Whether the request's bytes are in the page cache right before they are read (sampled; see
// set_residency_sampling). Runs on the I/O thread, on the fd the read is about to use.
void Prefetcher::BeforeRead(const ReadRequest& request, int fd) {
  if (probe_ == nullptr) return;
  uint64_t length = request.extent.length;
  if (length == kWholeFile) {  // a sampled probe may stat the file: it runs outside the accelerator's wait
    struct stat st {};
    length = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }
  Result<Residency> r = probe_(fd, request.extent.offset, length, probe_method_);
  if (r.ok()) {
    probed_bytes_.fetch_add(r->bytes, std::memory_order_relaxed);
    resident_bytes_.fetch_add(r->resident_bytes, std::memory_order_relaxed);
  } else {
    probe_failures_.fetch_add(1, std::memory_order_relaxed);
  }
}

// Runs on the engine thread that completed the sample, so checks (CRC) spread over the I/O threads.
Status Prefetcher::CheckSample(const SampleExtent& e, uint64_t id, const char* data) const {
  const char* path = files_ != nullptr ? files_->path(e.file) : "(file)";  // (no copy: this runs per sample)
  if (e.length == 0) return Status::Ok();  // nothing read (a Parquet row group's rows after its first)
  if (data == nullptr) {  // the caller sized transfers or retained batches so that this cannot happen
    return Status::IoError(std::string(path) + ": sample at offset " + std::to_string(e.offset) +
                           " was not in one buffer, so it could not be checked (raise reader.transfer_size or retain batches)");
  }
  switch (table_.check) {
    case SampleCheck::kTfRecordFrame:
    case SampleCheck::kTfRecordCrc:
      return CheckTfRecord(data, e.length - kTfRecordOverhead, table_.check == SampleCheck::kTfRecordCrc, path,
                           id % table_.samples_per_file(), e.offset);
    case SampleCheck::kHdf5Decode: {
      const Hdf5ChunkCodec* codec = table_.CodecOf(e.file);
      if (codec == nullptr) break;  // an unfiltered file among filtered ones
      thread_local Hdf5ChunkDecoder decoder;  // per I/O thread: its buffers grow once, to the largest chunk
      const char* decoded = nullptr;
      Status st = decoder.Decode(*codec, table_.FilterMaskAt(id), data, e.length, &decoded);
      if (!st.ok()) {
        return Status::Corruption(std::string(path) + ": HDF5 chunk at offset " + std::to_string(e.offset) + " (sample " +
                                  std::to_string(id % table_.samples_per_file()) + "): " + st.message());
      }
      break;
    }
    case SampleCheck::kJpegSignature:
    case SampleCheck::kPngSignature: {
      if (data == nullptr) break;  // larger than one transfer: read, not checked (docs/formats.md)
      // The indexer's check, for a file it did not open.
      return CheckImageSignature(table_.check == SampleCheck::kPngSignature ? DataFormat::kPng : DataFormat::kJpeg, data, e.length, path);
    }
    case SampleCheck::kImageDecode: {
      thread_local ImageDecoder decoder;  // per I/O thread: keeps its decompressor and pixel buffer
      return decoder.DecodeSample(data, e.length, path);
    }
    case SampleCheck::kParquetPages:
    case SampleCheck::kParquetDecode:
      return CheckParquetGroup(e, data, path);
    case SampleCheck::kNone:
      break;
  }
  return Status::Ok();
}

// A Parquet row group's span, read whole by its first row: every selected chunk's pages walked (and decoded).
Status Prefetcher::CheckParquetGroup(const SampleExtent& e, const char* data, std::string_view path) const {
  const PqGroupLayout* g = table_.ParquetGroupAt(e.file, e.offset);
  if (g == nullptr || g->span_length != e.length) {
    return Status::Corruption(std::string(path) + ": no Parquet row group spans offset " + std::to_string(e.offset));
  }
  thread_local ParquetChunkDecoder decoder;  // per I/O thread: its buffers grow once, to the largest page
  const auto mode = table_.check == SampleCheck::kParquetDecode ? ParquetChunkDecoder::Mode::kDecode
                                                                 : ParquetChunkDecoder::Mode::kHeaders;
  for (const PqChunkLayout& c : g->chunks) {
    PqChunkStats st;
    Status s = decoder.Walk(c, reinterpret_cast<const uint8_t*>(data) + (c.offset - e.offset), mode, &st);
    if (!s.ok()) return s.WithContext(std::string(path) + ": Parquet column chunk at offset " + std::to_string(c.offset));
  }
  return Status::Ok();
}

// Checks a window of the sample's payload against the verifiable pattern; a mismatch names file and offset.
Status Prefetcher::VerifyContent(const SampleExtent& e, uint64_t id, const char* data) const {
  const char* path = files_ != nullptr ? files_->path(e.file) : "(file)";  // (no copy: this runs per sample)
  if (data == nullptr) {
    return Status::IoError(std::string(path) + ": sample at offset " + std::to_string(e.offset) +
                           " was not in one buffer, so its content could not be verified");
  }
  const int64_t t0 = NowNs();
  auto range = ContentRange(content_->format, data, e.length);
  if (!range.ok()) return Status::Corruption(std::string(path) + ": sample at offset " + std::to_string(e.offset) + ": " + range.status().message());
  const auto [b, end] = *range;
  const uint64_t len = end - b;
  uint64_t n = content_->fraction >= 1 ? len : static_cast<uint64_t>(content_->fraction * static_cast<double>(len) + 0.999);
  n = std::min(n, len);
  uint64_t start = b;
  if (n < len) {  // a window whose position moves with the sample and the epoch
    uint64_t h = (id + 1) * 0x9e3779b97f4a7c15ULL ^ epoch_salt_ * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
    start += h % (len - n + 1);
  }
  const uint64_t key = content_->keys[e.file];
  const int64_t bad = FirstContentMismatch(key, e.offset + start, data + start, static_cast<size_t>(n));
  content_->bytes_checked.fetch_add(n, std::memory_order_relaxed);
  content_->ns.fetch_add(static_cast<uint64_t>(NowNs() - t0), std::memory_order_relaxed);
  if (bad < 0) return Status::Ok();
  const uint64_t at = e.offset + start + static_cast<uint64_t>(bad);
  char detail[96];
  std::snprintf(detail, sizeof detail, "expected 0x%02x, found 0x%02x", ExpectedContentByte(key, at),
                static_cast<unsigned>(static_cast<uint8_t>(data[start + static_cast<uint64_t>(bad)])));
  return Status::Corruption(std::string(path) + ": content check failed at offset " + std::to_string(at) + ": " + detail +
                            " (the bytes read are not the dataset's: corruption, a stale cache or the wrong file)");
}

// The first failure of a batch is kept (written before the pending decrement that publishes it).
void Prefetcher::Fail(Slot& slot, const Status& st) {
  if (!slot.failed.exchange(true, std::memory_order_relaxed)) slot.error = st;
}

void Prefetcher::OnComplete(uint64_t tag, uint64_t bytes, const Status& status, const char* data) {
  Slot& slot = slots_[tag / batch_];
  const uint64_t first = tag % batch_;
  const uint32_t n = slot.group[first];
  slot.bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (!status.ok()) {
    Fail(slot, status);
  } else if (table_.check != SampleCheck::kNone || content_ != nullptr) {
    const int64_t t0 = check_ns_ != nullptr ? NowNs() : 0;
    // The request covered samples first .. first+n-1, back to back from the first one's offset.
    const SampleIds ids = samples_->From(slot.step * batch_ + first);
    const uint64_t base = table_.At(ids[0]).offset;
    for (uint32_t k = 0; k < n; ++k) {
      SampleExtent e = table_.At(ids[k]);
      if (e.length == kWholeFile) e.length = bytes;  // never coalesced: the completion's bytes are the file's
      const char* sample = data == nullptr ? nullptr : data + (e.offset - base);
      Status st = table_.check != SampleCheck::kNone ? CheckSample(e, ids[k], sample) : Status::Ok();
      if (st.ok() && content_ != nullptr) st = VerifyContent(e, ids[k], sample);
      if (!st.ok()) {
        Fail(slot, st);
        break;
      }
    }
    if (check_ns_ != nullptr) {
      check_ns_->fetch_add(static_cast<uint64_t>(NowNs() - t0), std::memory_order_relaxed);
    }
  }
  slot.done[first].store(1, std::memory_order_relaxed);  // read by Outstanding() only after a timeout
  // The last completion of the batch wakes the waiter, if one waits: one wake per batch, none otherwise. Nothing
  // of the slot is read after the decrement (the futex wake only uses the address). With a copying staging the
  // count holds one more, the copy's: the completion that leaves only it queues the copy, then releases it.
  const bool copies = copies_;  // read before the decrement: without a copy, the owner may free *this after it
  const uint32_t before = slot.pending.fetch_sub(n, std::memory_order_acq_rel);
  if (copies && (before & ~kWaiting) == n + 1) {
    EndBatchReads(slot, tag / batch_);  // the copy's count still holds the slot (and *this)
  } else if (before == (n | kWaiting)) {
    FutexWakeAll(slot.pending);
  }
}

// The batch's reads are all done (the copy's count is still held, so the slot stays put): queue its copy to the
// device unless a read failed, then release the last count.
void Prefetcher::EndBatchReads(Slot& slot, uint64_t index) {
  if (!slot.failed.load(std::memory_order_relaxed)) {
    Status st = staging_->StartCopy(index, std::span<const CopyRange>(slot.ranges.get(), slot.nranges));
    if (!st.ok()) Fail(slot, st);
  }
  if (slot.pending.fetch_sub(1, std::memory_order_acq_rel) == (1 | kWaiting)) FutexWakeAll(slot.pending);
}

// Waits for `slot`'s reads. Gives up (kLost, lost_ set) when none completes within the completion timeout, and
// (kStopped) when `stop_at` >= 0 and the stop flag is raised: the flag is looked at every kStopPoll of a wait
// that long, since a signal handler cannot wake this slot's futex; a wait that short never looks (no cost on the
// path a storage that answers takes). Past `stop_at` (an instant; 0: at once) a stopped wait sets lost_ too.
Prefetcher::WaitEnd Prefetcher::WaitSlot(Slot& slot, int64_t stop_at) {
  if ((slot.pending.load(std::memory_order_acquire) & ~kWaiting) == 0) return WaitEnd::kDone;
  if (lost_) return WaitEnd::kLost;
  const bool stoppable = stop_ != nullptr && stop_at >= 0;
  uint32_t p = slot.pending.fetch_or(kWaiting, std::memory_order_acq_rel) | kWaiting;
  // The last completion seen (or the wait's start): read only when a completion timeout needs it.
  int64_t progressed = completion_timeout_ns_ > 0 ? NowNs() : 0;
  while ((p & ~kWaiting) != 0) {
    if (stoppable && stop_->load(std::memory_order_relaxed) && NowNs() >= stop_at) {
      if (stop_at > 0) lost_ = true;  // a drain's grace ran out: reads may still land here later
      return WaitEnd::kStopped;
    }
    int64_t wait = -1;  // no limit
    if (completion_timeout_ns_ > 0) {
      wait = progressed + completion_timeout_ns_ - NowNs();
      if (wait <= 0) {  // not one completion in the whole timeout
        lost_ = true;
        return WaitEnd::kLost;
      }
    }
    if (stoppable) wait = wait < 0 ? kStopPoll : std::min(wait, kStopPoll);
    FutexWait(slot.pending, p, wait);
    const uint32_t now = slot.pending.load(std::memory_order_acquire);
    if (now != p && completion_timeout_ns_ > 0) progressed = NowNs();
    p = now;
  }
  slot.pending.store(0, std::memory_order_relaxed);  // drops kWaiting; no read of this batch is left to complete
  return WaitEnd::kDone;
}

Status Prefetcher::Outstanding(const Slot& slot) const {
  const SampleIds ids = samples_->From(slot.step * batch_);
  for (uint64_t i = 0; i < batch_; i += slot.group[i]) {
    if (slot.done[i].load(std::memory_order_relaxed) != 0) continue;
    const SampleExtent e = table_.At(ids[i]);
    uint64_t length = 0;
    for (uint32_t k = 0; k < slot.group[i]; ++k) length += table_.At(ids[i + k]).length;
    char timeout[32];
    std::snprintf(timeout, sizeof timeout, "%.3g", static_cast<double>(completion_timeout_ns_) / 1e9);
    return Status::IoError("a read of " + std::string(files_ != nullptr ? files_->path(e.file) : "(file)") +
                           " at offset " + std::to_string(e.offset) + " (" +
                           (e.length == kWholeFile ? std::string("the whole file") : std::to_string(length) + " bytes") +
                           ", batch " + std::to_string(slot.step) + ") has not completed after " + timeout +
                           " s (--io-timeout) with no other read of its batch completing: the storage stopped "
                           "answering, or an I/O thread is stuck");
  }
  return Status::IoError("a batch read did not complete within --io-timeout");
}

BatchResult Prefetcher::WaitBatch(uint64_t step) {
  while (next_submit_ <= step && next_submit_ < steps_ && refill_ok_) SubmitBatch(next_submit_++);  // Refill skipped
  Slot& slot = slots_[step % batches_in_flight_];
  consumed_ = step + 1;
  refill_ok_ = false;
  switch (WaitSlot(slot, 0)) {
    case WaitEnd::kDone:
      break;
    case WaitEnd::kLost:
      return {slot.bytes.load(std::memory_order_relaxed), Outstanding(slot)};
    case WaitEnd::kStopped:
      return {slot.bytes.load(std::memory_order_relaxed), Status::Stopped("stopped while batch " +
                                                                           std::to_string(step) + " was read")};
  }
  BatchResult r{slot.bytes.load(std::memory_order_relaxed), slot.failed.load(std::memory_order_relaxed) ? slot.error : Status::Ok()};
  if (r.status.ok() && copies_) r.status = staging_->FinishCopy(step % batches_in_flight_);  // on the device before compute
  refill_ok_ = r.status.ok();
  return r;
}

void Prefetcher::Refill() {
  while (refill_ok_ && next_submit_ < steps_ && next_submit_ < consumed_ + batches_in_flight_) SubmitBatch(next_submit_++);
}

void Prefetcher::Drain() {
  // After a stop, reads still in flight get kStopGrace in all; past it they are left to land in this object (lost).
  const int64_t grace_end = stop_ != nullptr && stop_->load(std::memory_order_relaxed) ? NowNs() + kStopGrace : -1;
  for (uint64_t i = 0; i < batches_in_flight_ && !lost_; ++i) WaitSlot(slots_[i], grace_end);
}

}  // namespace feedrate
