// UringEngine implementation (liburing).
#include "loader/io/uring_engine.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "loader/io/aligned_buffer.h"
#include "loader/io/direct_io.h"
#include "loader/io/uring_setup.h"
#include "loader/util/thread_policy.h"

namespace feedrate {

// One sample being read by a worker.
struct SampleState {
  ReadRequest req;
  int fd = -1;
  uint64_t next = 0;      // next window offset to issue
  uint64_t wend = 0;      // window end (extent end, or aligned up with O_DIRECT)
  uint64_t end = 0;       // extent end
  uint32_t inflight = 0;  // transfers in flight
  uint64_t eof_at = UINT64_MAX;  // lowest end of data seen (transfers run concurrently, so take the minimum)
  int64_t held_buffer = -1;      // the one transfer buffer holding the whole sample, kept until it is retired
  int64_t start_ns = 0;          // when the worker took the sample (for the latency statistics)
  bool whole = false;            // kWholeFile: read to end of file, one transfer at a time
  bool empty = false;            // nothing to read: completes without an open or a read
  Status error;
};

// One transfer buffer and the read it is serving.
struct Transfer {
  uint32_t sample = 0;
  uint64_t off = 0;
  uint32_t len = 0;
  uint32_t done = 0;
};

struct UringEngine::Worker {
  UringEngine* engine = nullptr;
  size_t index = 0;  // the worker's shard in the engine's IoStats
  io_uring ring {};
  bool ring_ready = false;
  bool fixed_buffers = false;
  AlignedBuffer memory;
  std::vector<char*> buffers;
  std::vector<Transfer> transfers;
  std::vector<uint32_t> free_buffers;
  std::vector<SampleState> samples;
  std::vector<uint32_t> free_samples;
  std::vector<uint32_t> order;  // active samples, oldest first
  std::atomic<uint64_t> device_bytes{0};
  std::atomic<uint64_t> requeued{0};
  uint32_t inflight = 0;
  std::string setup_description;
  std::unique_ptr<FdCache> fds;  // set up with the worker (needs the engine's file table)
  // Set once io_uring_submit_and_wait has failed for good: the ring is unusable, every sample in flight and every
  // later request fails with this error instead of being read (the worker must not spin or strand requests).
  Status ring_error;
  // Test hook (FEEDRATE_TEST_URING_SUBMIT_ERRNO=N:ERRNO, read once at setup): after N submits, -ERRNO.
  int64_t submit_fail_after = -1;
  int submit_fail_errno = 0;

  ~Worker() {
    if (ring_ready) io_uring_queue_exit(&ring);
  }

  Result<std::string> Setup(size_t depth, uint64_t transfer_size, uint64_t align) {
    if (const char* e = std::getenv("FEEDRATE_TEST_URING_SETUP_ERRNO")) {  // test hook: injected setup failure
      return Status::Errno("io_uring_queue_init failed (injected)", std::atoi(e));
    }
    if (const char* e = std::getenv("FEEDRATE_TEST_URING_SUBMIT_ERRNO")) {  // test hook: the ring fails later
      submit_fail_after = std::atoll(e);
      if (const char* colon = std::strchr(e, ':')) submit_fail_errno = std::atoi(colon + 1);
    }
    FEEDRATE_ASSIGN_OR_RETURN(std::string how, InitRingWithLadder(ring, static_cast<unsigned>(depth)));
    ring_ready = true;
    memory = AlignedBuffer(depth * transfer_size, std::max<size_t>(AlignedBuffer::kAlignment, align));
    std::vector<iovec> iov(depth);
    for (size_t i = 0; i < depth; ++i) {
      buffers.push_back(memory.data() + i * transfer_size);
      iov[i] = {buffers.back(), transfer_size};
      free_buffers.push_back(static_cast<uint32_t>(depth - 1 - i));
      free_samples.push_back(static_cast<uint32_t>(depth - 1 - i));
    }
    transfers.resize(depth);
    samples.resize(depth);
    order.reserve(depth);
    // Registered buffers spare O_DIRECT a page pinning per read. Buffered reads copy out of the page cache, and
    // into a registered (bvec) buffer that copy is slower than into plain user memory, so they stay unregistered.
    // Without registration (RLIMIT_MEMLOCK) plain reads work.
    if (!engine->options_.odirect) return how + ", plain buffers (buffered reads)";
    fixed_buffers = io_uring_register_buffers(&ring, iov.data(), static_cast<unsigned>(depth)) == 0;
    return how + (fixed_buffers ? ", registered buffers" : ", unregistered buffers (registration refused)");
  }

  // Queues the read for transfer `b`'s remaining bytes.
  void Prep(uint32_t b) {
    Transfer& t = transfers[b];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);  // never null: at most `depth` reads are outstanding
    char* dst = (samples[t.sample].req.dest != nullptr ? samples[t.sample].req.dest + (t.off - Window(t.sample)) : buffers[b]) + t.done;
    if (fixed_buffers && samples[t.sample].req.dest == nullptr) {
      io_uring_prep_read_fixed(sqe, samples[t.sample].fd, dst, t.len - t.done, t.off + t.done, static_cast<int>(b));
    } else {
      io_uring_prep_read(sqe, samples[t.sample].fd, dst, t.len - t.done, t.off + t.done);
    }
    io_uring_sqe_set_data64(sqe, b);
  }

  uint64_t Window(uint32_t s) const {
    const auto& o = engine->options_;
    return o.odirect ? AlignDown(samples[s].req.extent.offset, o.direct_align) : samples[s].req.extent.offset;
  }

  // Starts reading a new sample (opening its file unless kept open).
  void Admit(const ReadRequest& r) {
    const FileTable& files = engine->files_;
    const auto& o = engine->options_;
    uint32_t s = free_samples.back();
    free_samples.pop_back();
    SampleState& st = samples[s];
    st = SampleState{};
    st.req = r;
    if (o.stats != nullptr) st.start_ns = NowNs();
    st.whole = r.extent.length == kWholeFile;
    st.end = st.whole ? UINT64_MAX : r.extent.offset + r.extent.length;
    st.next = Window(s);
    st.wend = o.odirect && !st.whole ? AlignUp(st.end, o.direct_align) : st.end;
    if (r.extent.length == 0) {  // nothing to read (a Parquet row group's rows after its first): no open, no read
      st.next = st.wend = st.end;
      st.empty = true;
      order.push_back(s);
      return;
    }
    if (!ring_error.ok()) {  // nothing can be read any more: the request fails at once
      st.error = ring_error;
      st.next = st.wend;
      order.push_back(s);
      return;
    }
    st.fd = fds->Acquire(r.extent.file);
    if (st.fd < 0) {
      st.error = Status::Errno("cannot open " + std::string(files.path(r.extent.file)), errno);
      st.next = st.wend;
    } else if (r.probe_residency) {
      r.target->BeforeRead(r, st.fd);
    }
    order.push_back(s);
  }

  // Issues transfers for active samples, oldest first, while buffers are free.
  void Issue() {
    const uint64_t ts = engine->options_.transfer_size;
    for (uint32_t s : order) {
      SampleState& st = samples[s];
      // A whole file's size is learnt by reading it: one transfer at a time, until one meets its end.
      while (st.next < st.wend && !free_buffers.empty() && !(st.whole && st.inflight > 0)) {
        uint32_t b = free_buffers.back();
        free_buffers.pop_back();
        transfers[b] = {s, st.next, static_cast<uint32_t>(std::min<uint64_t>(ts, st.wend - st.next)), 0};
        st.next += transfers[b].len;
        ++st.inflight;
        ++inflight;
        Prep(b);
      }
      if (free_buffers.empty()) break;
    }
  }

  // Completes samples that have nothing left in flight, in any order.
  void Retire() {
    for (size_t i = 0; i < order.size();) {
      SampleState& st = samples[order[i]];
      if (st.inflight == 0 && st.next >= st.wend) {
        fds->Release(st.req.extent.file, st.fd);
        if (st.eof_at != UINT64_MAX && st.error.ok() && !st.whole) {
          st.error = Status::Corruption(std::string(engine->files_.path(st.req.extent.file)) + ": file is truncated: sample extent ends at offset " +
                                        std::to_string(st.end) + " but data ends at offset " + std::to_string(st.eof_at));
        }
        // A sample counts once all of it was read (a whole file: up to its end).
        uint64_t bytes = !st.error.ok() ? 0 : st.whole ? st.eof_at - st.req.extent.offset : st.req.extent.length;
        ReadRequest req = st.req;
        Status err = std::move(st.error);
        const uint64_t shift = req.extent.offset - Window(order[i]);
        const char* data = !err.ok()                ? nullptr
                           : st.empty               ? req.dest
                           : req.dest != nullptr    ? req.dest + shift
                           : st.held_buffer >= 0    ? buffers[static_cast<size_t>(st.held_buffer)] + shift
                                                    : nullptr;
        const int64_t held = st.held_buffer;
        if (IoStats* stats = engine->options_.stats; stats != nullptr && err.ok() && !st.empty) {
          stats->Record(index, bytes, NowNs() - st.start_ns);
        }
        free_samples.push_back(order[i]);
        order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
        req.target->OnComplete(req.tag, bytes, err, data);
        if (held >= 0) free_buffers.push_back(static_cast<uint32_t>(held));
      } else {
        ++i;
      }
    }
  }

  void OnCqe(uint32_t b, int cqe_res) {
    Transfer& t = transfers[b];
    SampleState& st = samples[t.sample];
    FaultInjector* faults = engine->options_.faults;
    const int res = faults == nullptr ? cqe_res
                                      : static_cast<int>(faults->OnRead(st.req.extent.file, t.off + t.done, t.len - t.done, cqe_res));
    const auto& o = engine->options_;
    const char* path = engine->files_.path(st.req.extent.file);
    if (res == -EAGAIN || res == -EINTR) {
      requeued.fetch_add(1, std::memory_order_relaxed);
      Prep(b);
      return;
    }
    bool finished = true;
    if (res < 0) {
      if (st.error.ok()) st.error = Status::Errno(std::string(path) + ": read failed at offset " + std::to_string(t.off + t.done), -res);
    } else {
      t.done += static_cast<uint32_t>(res);
      device_bytes.fetch_add(static_cast<uint64_t>(res), std::memory_order_relaxed);
      uint64_t pos = t.off + t.done;
      bool eof = res == 0 || (o.odirect && pos % o.direct_align != 0);
      if (t.done < t.len && pos < st.end) {
        if (eof) {
          st.eof_at = std::min(st.eof_at, pos);
          st.next = st.wend;  // stop issuing; the message is built at retirement from the lowest EOF seen
        } else {
          // A short read: the remainder goes again (a whole file's: its end, which the next read confirms).
          if (!st.whole) requeued.fetch_add(1, std::memory_order_relaxed);
          Prep(b);
          finished = false;
        }
      }
    }
    if (!finished) return;
    if (!st.error.ok()) st.next = st.wend;  // stop issuing more of a failed sample
    // A sample read by this one transfer stays in its buffer until retired, so the target can check it in place.
    const bool all_here = st.whole ? st.eof_at != UINT64_MAX : t.off + t.len >= st.wend;
    if (st.error.ok() && st.req.dest == nullptr && t.off == Window(t.sample) && all_here) {
      st.held_buffer = b;
    } else {
      free_buffers.push_back(b);
    }
    --st.inflight;
    --inflight;
  }

  // The ring failed for good: the transfers in flight will never complete, so their samples fail now (their
  // buffers are not reused: the kernel may still own them, and nothing is read after this).
  void FailRing(int err) {
    ring_error = Status::Errno("io_uring_submit_and_wait failed; this I/O thread can read no more", err);
    for (uint32_t s : order) {
      SampleState& st = samples[s];
      if (st.error.ok()) st.error = ring_error;
      st.inflight = 0;
      st.next = st.wend;
      st.held_buffer = -1;
    }
    inflight = 0;
  }

  int SubmitAndWait() {
    if (submit_fail_after >= 0 && submit_fail_after-- == 0) return -submit_fail_errno;
    return io_uring_submit_and_wait(&ring, 1);
  }

  void Run() {
    UringEngine& e = *engine;
    for (;;) {
      Issue();
      // Take new samples while a buffer is free (any time once the ring failed: they fail at once); block only
      // when there is nothing else to do.
      while ((!free_buffers.empty() || !ring_error.ok()) && !free_samples.empty()) {
        ReadRequest r;
        if (inflight == 0 && order.empty()) {
          if (!e.requests_.Pop(&r)) return;  // idle: block; false when stopping
        } else if (!e.requests_.TryPop(&r)) {
          break;
        }
        Admit(r);
        Issue();
      }
      Retire();
      if (inflight == 0) continue;
      int ret = SubmitAndWait();
      if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
        FailRing(-ret);  // the ring itself failed: fail every sample in flight rather than spin
        Retire();
        continue;
      }
      io_uring_cqe* cqe;
      unsigned head, seen = 0;
      io_uring_for_each_cqe(&ring, head, cqe) {
        OnCqe(static_cast<uint32_t>(io_uring_cqe_get_data64(cqe)), cqe->res);
        ++seen;
      }
      io_uring_cq_advance(&ring, seen);
      Retire();
    }
  }
};

UringEngine::UringEngine(const FileTable& files, const EngineOptions& options)
    : files_(files), options_(options), requests_(options.queue_capacity) {}

Result<std::unique_ptr<UringEngine>> UringEngine::Create(const FileTable& files, const EngineOptions& options) {
  std::unique_ptr<UringEngine> e(new UringEngine(files, options));
  EngineOptions& o = e->options_;
  o.threads = std::max<size_t>(1, o.threads);
  o.queue_depth = std::max<size_t>(1, o.queue_depth);
  if (o.odirect) o.transfer_size = AlignUp(o.transfer_size, o.direct_align);
  for (size_t i = 0; i < o.threads; ++i) {
    e->workers_.push_back(std::make_unique<Worker>());
    e->workers_.back()->engine = e.get();
    e->workers_.back()->index = i;
  }
  UringEngine* eng = e.get();
  auto setup = [eng](size_t i) -> Status {
    Worker* w = eng->workers_[i].get();
    const EngineOptions& opt = eng->options_;
    ApplyIoThreadPolicy(opt.thread_policy);  // before the ring: its io-wq workers copy this thread's policy
    w->fds = std::make_unique<FdCache>(eng->files_);
    auto how = w->Setup(opt.queue_depth, opt.transfer_size, opt.direct_align);
    if (!how.ok()) return how.status();
    w->setup_description = *how;
    return Status::Ok();
  };
  FEEDRATE_RETURN_IF_ERROR(StartRingThreads(o.threads, setup, [eng](size_t i) { eng->workers_[i]->Run(); }, &e->threads_));
  e->setup_ = e->workers_.front()->setup_description;
  return e;
}

UringEngine::~UringEngine() {
  requests_.Stop(threads_.size());
  for (auto& t : threads_) t.join();
}

void UringEngine::Submit(std::span<const ReadRequest> requests) { requests_.Push(requests); }

uint64_t UringEngine::buffer_bytes() const {
  return static_cast<uint64_t>(options_.threads) * options_.queue_depth * options_.transfer_size;
}

EngineCounters UringEngine::counters() const {
  EngineCounters c;
  for (const auto& w : workers_) {
    c.device_bytes += w->device_bytes.load(std::memory_order_relaxed);
    c.requeued += w->requeued.load(std::memory_order_relaxed);
  }
  return c;
}

}  // namespace feedrate
