// DlioEngine: lanes of sequential per-sample call chains (openat, statx, reads, close) over io_uring; here the
// engine and its I/O threads' loop (a lane's chain is dlio_lane.cpp's).
#include "loader/io/dlio_engine.h"

#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "loader/io/dlio_worker.h"
#include "loader/io/uring_setup.h"
#include "loader/util/thread_policy.h"

namespace feedrate {

using namespace dlio_detail;  // NOLINT: the engine's own constants and lane

uint64_t DlioEngineBufferBytes(const DlioEngineOptions& d, uint64_t threads, uint64_t batch, uint64_t lane_bytes) {
  const uint64_t each = std::min<uint64_t>(d.collate_sample_bytes, kMaxCollateSource);
  const uint64_t collate =
      d.collate_sample_bytes == 0
          ? 0
          : each + std::min<uint64_t>(d.collate_sample_bytes * std::max<uint64_t>(1, batch), kMaxCollateSource);
  return threads * (d.chunk + collate) + uint64_t{d.lanes} * (kHead + lane_bytes);
}

DlioEngine::Worker::~Worker() {
  if (ring_ready) io_uring_queue_exit(&ring);
  for (Lane& l : lanes) {
    if (l.stream_fd >= 0 && l.stream_owned) ::close(l.stream_fd);
  }
}

Status DlioEngine::Worker::Setup(size_t local_lanes) {
  const DlioEngineOptions& d = engine->dlio_;
  if (const char* e = std::getenv("FEEDRATE_TEST_URING_SETUP_ERRNO")) {  // the engines' test hook: setup fails
    return Status::Errno("io_uring_queue_init failed (injected)", std::atoi(e));
  }
  if (const char* e = std::getenv("FEEDRATE_TEST_URING_SUBMIT_ERRNO")) {
    submit_fail_after = std::atoll(e);
    if (const char* colon = std::strchr(e, ':')) submit_fail_errno = std::atoi(colon + 1);
  }
  // One call of each lane in flight (kMaxPieces pieces of a large read): SQ entries 4 x the lanes (min 64); the CQ
  // (twice the SQ) holds every completion.
  const unsigned entries = static_cast<unsigned>(std::clamp<uint64_t>(2 * local_lanes * 2, 64, 32768));
  FEEDRATE_ASSIGN_OR_RETURN(setup_description, InitRingWithLadder(ring, entries));
  ring_ready = true;
  // Blocking file operations (a FUSE or NFS open or read) run on io-wq's bounded workers, which the kernel caps at
  // min(SQ entries, 4 x CPUs) per ring: 16 in flight on a 2-core client. One per lane (and its read's pieces)
  // keeps every lane's request in flight; those kernel workers sleep while they wait.
  unsigned workers[2] = {static_cast<unsigned>(std::min<uint64_t>(local_lanes * kMaxPieces, 65536)), 0};
  if (io_uring_register_iowq_max_workers(&ring, workers) == 0) {
    setup_description += ", io-wq bounded workers up to " + std::to_string(local_lanes * kMaxPieces);
  }
  scratch = AlignedBuffer(d.chunk, AlignedBuffer::kAlignment);
  if (d.collate_sample_bytes > 0) {  // DLIO's resized_image: random bytes (np.random.randint(255))
    const uint64_t n = std::min<uint64_t>(d.collate_sample_bytes, kMaxCollateSource);
    collate_src.reset(new char[n]);
    for (uint64_t i = 0; i < n; ++i) collate_src[i] = static_cast<char>((i * 2654435761u) >> 24);
  }
  work = engine->planner_.NewSampleWork();
  if (TimeDraw draw(d.preprocess, 0x9e3779b97f4a7c15ULL + index); !draw.zero()) preprocess.emplace(draw);
  lanes.resize(local_lanes);
  for (Lane& l : lanes) {
    l.queue = RequestRing(d.lane_capacity);
    l.plan.reserve(engine->planner_.MaxReads() + 8);
    l.head_buf = std::make_unique<char[]>(kHead);
    if (const uint64_t n = engine->planner_.LearnStateBytes(); n > 0) {
      l.learn_state = std::make_unique<uint64_t[]>(n / 8 + 1);
      l.learn_buf = std::make_unique<char[]>(engine->planner_.LearnBufferBytes());
    }
    if (const uint64_t n = engine->planner_.StreamCheckBytes(); n > 0) {
      l.stream_state = std::make_unique<uint64_t[]>(n / 8 + 1);
      l.stream_buf = std::make_unique<char[]>(engine->planner_.StreamFillBytes());
    }
  }
  requests = std::make_unique<RequestQueue>(engine->options_.queue_capacity);
  return Status::Ok();
}

io_uring_sqe* DlioEngine::Worker::Sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  while (sqe == nullptr) {  // the submission queue is full: hand it to the kernel and take another entry
    io_uring_submit(&ring);
    sqe = io_uring_get_sqe(&ring);
  }
  ++inflight;
  return sqe;
}

void DlioEngine::Worker::OnCqe(uint64_t tag, int res) {
  const size_t li = static_cast<size_t>(tag >> 8);
  --inflight;
  if ((tag & 0xff) == kDetachedClose) return;  // a left stream's close: read-only, nothing to report
  switch (lanes[li].phase) {
    case kOpen: return OnOpen(li, res);
    case kStat: return OnStat(li, res);
    case kRead: return OnRead(li, static_cast<uint32_t>(tag & 0xff), res);  // slot, and kEofProbe
    case kPreprocess:  // a timeout's end: -ETIME
      if (res < 0 && res != -ETIME && lanes[li].error.ok()) {
        lanes[li].error = Status::Errno(std::string(PathOf(lanes[li])) + ": the reader.preprocess_time wait failed", -res);
      }
      return Close(li);
    case kClose:
      if (res < 0 && lanes[li].error.ok()) lanes[li].error = Status::Errno(std::string(PathOf(lanes[li])) + ": close failed", -res);
      return AfterClose(li);
  }
}

// The ring is unusable: nothing in flight will complete. Every active sample fails now (its descriptor closed
// here), and Start fails every later one at once. The lanes' buffers stay allocated until the engine goes.
void DlioEngine::Worker::FailRing(int err) {
  ring_error = Status::Errno("io_uring_submit_and_wait failed; this I/O thread can read no more", err);
  inflight = 0;
  for (size_t li = 0; li < lanes.size(); ++li) {
    Lane& l = lanes[li];
    if (l.stream_fd >= 0 && l.stream_owned) ::close(l.stream_fd);
    l.stream_fd = -1;
    l.streaming = false;
    l.switching = false;
    if (!l.active) continue;
    if (l.own_fd && l.fd >= 0 && l.phase != kOpen) ::close(l.fd);
    l.own_fd = false;
    if (l.error.ok()) l.error = ring_error;
    Finish(li);
  }
}

// A request to its lane: started at once when the lane is idle.
void DlioEngine::Worker::Admit(const ReadRequest& r) {
  const size_t li = r.lane / engine->workers_.size();
  Lane& l = lanes[li];
  if (!l.queue.Push(r)) {  // more than the prefetchers keep in flight (DlioEngineOptions::lane_capacity)
    r.target->OnComplete(r.tag, 0, LaneFull("DlioEngine", r.lane), nullptr);
    return;
  }
  if (!l.active) Start(li);
}

void DlioEngine::Worker::Run() {
  for (;;) {
    ReadRequest r;
    if (inflight == 0 && active == 0) {
      if (!requests->Pop(&r)) return;  // idle: block; false when stopping
      Admit(r);
    }
    while (requests->TryPop(&r)) Admit(r);
    if (inflight == 0) continue;
    const int ret = submit_fail_after >= 0 && submit_fail_after-- == 0 ? -submit_fail_errno
                                                                       : io_uring_submit_and_wait(&ring, 1);
    if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
      FailRing(-ret);
      continue;
    }
    io_uring_cqe* cqe;
    unsigned head;
    io_uring_for_each_cqe(&ring, head, cqe) {
      const uint64_t tag = io_uring_cqe_get_data64(cqe);
      const int res = cqe->res;
      io_uring_cq_advance(&ring, 1);  // before OnCqe, which may queue more
      OnCqe(tag, res);
    }
  }
}

DlioEngine::DlioEngine(const FileTable& files, const EngineOptions& options, const DlioEngineOptions& dlio,
                       const ReadPlanner& planner)
    : files_(files), options_(options), dlio_(dlio), planner_(planner) {}

Result<std::unique_ptr<DlioEngine>> DlioEngine::Create(const FileTable& files, const EngineOptions& options,
                                                       const DlioEngineOptions& dlio, const ReadPlanner& planner) {
  std::unique_ptr<DlioEngine> e(new DlioEngine(files, options, dlio, planner));
  const size_t threads = std::clamp<size_t>(options.threads, 1, std::max<uint32_t>(1, dlio.lanes));
  e->dlio_.lanes = std::max<uint32_t>(1, dlio.lanes);
  for (size_t i = 0; i < threads; ++i) {
    e->workers_.push_back(std::make_unique<Worker>());
    e->workers_.back()->engine = e.get();
    e->workers_.back()->index = i;
  }
  DlioEngine* eng = e.get();
  auto setup = [eng, threads](size_t i) {
    ApplyIoThreadPolicy(eng->options_.thread_policy);
    return eng->workers_[i]->Setup((eng->dlio_.lanes + threads - 1 - i) / threads);  // lanes i, i + threads, ...
  };
  FEEDRATE_RETURN_IF_ERROR(StartRingThreads(threads, setup, [eng](size_t i) { eng->workers_[i]->Run(); }, &e->threads_));
  e->setup_ = std::to_string(threads) + " I/O threads, " + std::to_string(e->dlio_.lanes) + " lanes" +
              (e->dlio_.async_reads ? ", reads straight to io-wq" : "") + "; " + e->workers_.front()->setup_description;
  return e;
}

DlioEngine::~DlioEngine() {
  for (auto& w : workers_) {
    if (w->requests) w->requests->Stop(1);
  }
  for (auto& t : threads_) t.join();
}

void DlioEngine::Submit(std::span<const ReadRequest> requests) {
  const size_t n = workers_.size();
  size_t begin = 0;
  while (begin < requests.size()) {  // runs of one thread's lanes go with one wake-up (a batch is one lane)
    const size_t w = requests[begin].lane % n;
    size_t end = begin + 1;
    while (end < requests.size() && requests[end].lane % n == w) ++end;
    workers_[w]->requests->Push(requests.subspan(begin, end - begin));
    begin = end;
  }
}

uint64_t DlioEngine::buffer_bytes() const { return static_cast<uint64_t>(workers_.size()) * dlio_.chunk; }

EngineCounters DlioEngine::counters() const {
  EngineCounters c;
  for (const auto& w : workers_) {
    c.device_bytes += w->device_bytes.load(std::memory_order_relaxed);
    c.requeued += w->requeued.load(std::memory_order_relaxed);
    c.sample_work_ns += w->work_ns.load(std::memory_order_relaxed);
    c.collate_ns += w->collate_ns.load(std::memory_order_relaxed);
    c.collates += w->collates.load(std::memory_order_relaxed);
  }
  return c;
}

}  // namespace feedrate
