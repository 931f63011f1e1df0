// DlioEngine: lanes of sequential per-sample call chains (openat, statx, reads, close) over io_uring.
#include "loader/io/dlio_engine.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "loader/io/aligned_buffer.h"
#include "loader/io/request_ring.h"
#include "loader/io/uring_setup.h"
#include "loader/util/thread_policy.h"

namespace feedrate {
namespace {

constexpr uint32_t kMaxPieces = 8;  // pieces of one large read in flight at once
constexpr uint64_t kHead = 4096;    // a first read at offset 0 this short lands in the lane's head buffer
// kMetadataAsync: openat, statx and close go straight to io-wq (IOSQE_ASYNC). io_uring first tries an operation in
// the submitting thread, and a file system's open (FUSE's FUSE_OPEN, NFS's) ignores O_NONBLOCK and waits there, as
// close waits for FUSE's flush: measured on latencyfs, each I/O thread then made one open at a time (2 threads at
// 50 ms: ~40 opens/s, whatever the lanes). Reads are tried inline: FUSE refuses nowait reads at once.
constexpr uint64_t kEofProbe = 0x80;  // tag bit: the piece was a read at EOF, sent as the last byte (PrepPiece)
constexpr uint64_t kDetachedClose = 0x40;  // tag: the close of a stream's file the lane has left (nothing waits on it)

enum Phase : uint8_t { kOpen, kStat, kRead, kPreprocess, kClose };

}  // namespace

// One DataLoader worker: its queued requests (a ring) and the sample it is reading.
struct Lane {
  RequestRing queue;
  bool active = false;
  ReadRequest req;
  Phase phase = kOpen;
  int fd = -1;
  bool own_fd = false;  // opened here (per sample), so closed here
  struct statx stx {};
  std::vector<AccessRead> plan;
  size_t op = 0;                   // the planned read in progress
  uint64_t piece_next = 0;         // its next piece's offset
  uint64_t op_got = 0;             // bytes it returned so far
  uint32_t pieces_inflight = 0;
  uint64_t piece_off[8] = {};       // each piece slot's offset and length in flight (tag's low byte: the slot)
  uint64_t piece_len[8] = {};
  uint8_t piece_used = 0;           // slots in use (bit per slot)
  std::unique_ptr<char[]> head_buf;  // kHead bytes: a sample's first read when it starts the file (CheckHead)
  bool op_short = false;           // a piece came back short: end of file
  uint64_t bytes = 0;              // what the planned reads returned (headers and re-reads included)
  int64_t start_ns = 0;
  int64_t preprocess_ns = 0;       // the sample's preprocess wait (not I/O: IoStats leaves it out)
  __kernel_timespec preprocess_ts {};  // the wait's timeout; read by the kernel at submission
  Status error;
  // A streaming reader's file (ReadPlanner::StreamsFiles): the one this lane streams in this pass, its descriptor
  // between requests (-1 once the stream met the end; owned: opened here), where the stream's next read goes, and
  // when the planner checks the stream, its state and the buffer the reads land in.
  bool streaming = false;
  bool stream_owned = false;
  bool switching = false;  // reading the stream's file through before the request's file opens (StartStream)
  uint32_t stream_file = 0, stream_pass = 0;
  uint32_t done_file = UINT32_MAX, done_pass = 0;  // the file last read through, and in which pass
  int stream_fd = -1;
  uint64_t stream_next = 0;
  std::unique_ptr<uint64_t[]> stream_state;
  std::unique_ptr<char[]> stream_buf;
};

struct DlioEngine::Worker {
  DlioEngine* engine = nullptr;
  size_t index = 0;
  io_uring ring {};
  bool ring_ready = false;
  AlignedBuffer scratch;
  std::optional<TimeDraw> preprocess;  // reader.preprocess_time's draws for this thread's lanes; none when always 0
  std::vector<Lane> lanes;  // this thread's lanes: global lane = local * threads + index
  std::unique_ptr<RequestQueue> requests;
  uint64_t inflight = 0;    // SQEs submitted and not completed
  uint64_t active = 0;      // lanes with a sample in progress
  std::atomic<uint64_t> device_bytes{0}, requeued{0};
  std::string setup_description;
  // Set once io_uring_submit_and_wait has failed for good: every sample in flight and every later request fails with
  // it (the run ends with that error and its record) instead of spinning or ending the process.
  Status ring_error;
  // Test hook (FEEDRATE_TEST_URING_SUBMIT_ERRNO=N:ERRNO, as UringEngine's): after N submits, -ERRNO.
  int64_t submit_fail_after = -1;
  int submit_fail_errno = 0;

  ~Worker() {
    if (ring_ready) io_uring_queue_exit(&ring);
    for (Lane& l : lanes) {
      if (l.stream_fd >= 0 && l.stream_owned) ::close(l.stream_fd);
    }
  }

  Status Setup(size_t local_lanes) {
    const DlioEngineOptions& d = engine->dlio_;
    if (const char* e = std::getenv("FEEDRATE_TEST_URING_SETUP_ERRNO")) {  // the engines' test hook: setup fails
      return Status::Errno("io_uring_queue_init failed (injected)", std::atoi(e));
    }
    if (const char* e = std::getenv("FEEDRATE_TEST_URING_SUBMIT_ERRNO")) {
      submit_fail_after = std::atoll(e);
      if (const char* colon = std::strchr(e, ':')) submit_fail_errno = std::atoi(colon + 1);
    }
    // One call of each lane in flight, or up to kMaxPieces for a large read: SQ entries 4 x the lanes (min 64); the CQ
    // (twice the SQ) holds every completion of 8 pieces per lane.
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
    if (TimeDraw draw(d.preprocess, 0x9e3779b97f4a7c15ULL + index); !draw.zero()) preprocess.emplace(draw);
    lanes.resize(local_lanes);
    for (Lane& l : lanes) {
      l.queue = RequestRing(d.lane_capacity);
      l.plan.reserve(engine->planner_.MaxReads() + 8);
      l.head_buf = std::make_unique<char[]>(kHead);
      if (const uint64_t n = engine->planner_.StreamCheckBytes(); n > 0) {
        l.stream_state = std::make_unique<uint64_t[]>(n / 8 + 1);
        l.stream_buf = std::make_unique<char[]>(engine->planner_.StreamFillBytes());
      }
    }
    requests = std::make_unique<RequestQueue>(engine->options_.queue_capacity);
    return Status::Ok();
  }

  io_uring_sqe* Sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    while (sqe == nullptr) {  // the submission queue is full: hand it to the kernel and take another entry
      io_uring_submit(&ring);
      sqe = io_uring_get_sqe(&ring);
    }
    ++inflight;
    return sqe;
  }
  static uint64_t Tag(size_t lane, uint64_t extra = 0) { return static_cast<uint64_t>(lane) << 8 | extra; }

  // A queued request becomes the lane's sample: its open (or, for a table descriptor, its statx).
  void Start(size_t li) {
    Lane& l = lanes[li];
    l.req = l.queue.Pop();
    l.active = true;
    ++active;
    l.bytes = 0;
    l.preprocess_ns = 0;
    l.error = ring_error;  // Ok unless the ring failed for good: then the sample fails at once
    l.plan.clear();
    l.op = 0;
    if (!ring_error.ok()) {
      l.fd = -1;
      l.own_fd = false;
      return Finish(li);
    }
    if (engine->options_.stats != nullptr) l.start_ns = NowNs();
    if (engine->planner_.StreamsFiles()) return StartStream(li);
    Open(li);
  }

  // The request's file: the table's descriptor (then statx), or openat.
  void Open(size_t li) {
    Lane& l = lanes[li];
    const FileTable& files = engine->files_;
    if (int fd = files.open_fd(l.req.extent.file); fd >= 0) {
      l.fd = fd;
      l.own_fd = false;
      return Stat(li);
    }
    l.phase = kOpen;
    l.own_fd = true;
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_openat(sqe, AT_FDCWD, files.path(l.req.extent.file), O_RDONLY | O_CLOEXEC | files.open_flags(), 0);
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);  // see kMetadataAsync
    io_uring_sqe_set_data64(sqe, Tag(li));
  }

  // A streaming reader's request (ReadPlanner::StreamsFiles). The lane's stream goes on where the request is its
  // file's in this pass. Else, within a pass, the stream's file is first read through to its end, as TensorFlow's
  // interleave reads a file through before its slot takes the next, whatever order tf.data's shuffle buffer hands
  // the records on in; a record of the file the lane read through needs no read. Then the new file's stream opens.
  void StartStream(size_t li) {
    Lane& l = lanes[li];
    const bool same_pass = l.streaming && l.stream_pass == l.req.pass;
    if (same_pass && l.stream_file == l.req.extent.file) return Resume(li);
    if (l.done_pass == l.req.pass && l.done_file == l.req.extent.file) return Finish(li);
    if (same_pass && l.stream_next != kStreamEnded && l.stream_fd >= 0) return ReadThrough(li);
    OpenStream(li);
  }

  // The stream's file to its end: its remaining fills (the record asked for waits until they are in).
  void ReadThrough(size_t li) {
    Lane& l = lanes[li];
    TakeStreamFd(l);
    l.switching = true;
    ReadRequest rest = l.req;
    rest.extent = {l.stream_file, l.stx.stx_size, 0};
    engine->planner_.PlanStream(rest, l.stx.stx_size, &l.stream_next, &l.plan);
    StartPlan(li);
  }

  // The stream's descriptor becomes the lane's call's (owned as the stream owned it).
  static void TakeStreamFd(Lane& l) {
    l.fd = l.stream_fd;
    l.own_fd = l.stream_owned;
    l.stream_fd = -1;
  }

  // The lane's planned reads, from the first.
  void StartPlan(size_t li) {
    Lane& l = lanes[li];
    l.op = 0;
    l.pieces_inflight = 0;
    l.piece_used = 0;
    BeginRead(l);
    NextRead(li);
  }

  // A new stream at offset 0 of the request's file; the lane's last one, if still open, is left (its close goes
  // now, no sample waiting on it).
  void OpenStream(size_t li) {
    Lane& l = lanes[li];
    if (l.stream_fd >= 0 && l.stream_owned) {
      io_uring_sqe* sqe = Sqe();
      io_uring_prep_close(sqe, l.stream_fd);
      io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
      io_uring_sqe_set_data64(sqe, Tag(li, kDetachedClose));
    }
    l.stream_fd = -1;
    l.streaming = true;
    l.stream_file = l.req.extent.file;
    l.stream_pass = l.req.pass;
    l.stream_next = 0;
    if (l.stream_state) engine->planner_.StreamReset(l.stream_state.get());
    Open(li);
  }

  // The lane's stream goes on: no open or statx (the size is the one read at the open); once the stream met the
  // end there is no descriptor and nothing more to read.
  void Resume(size_t li) {
    Lane& l = lanes[li];
    TakeStreamFd(l);
    if (l.req.probe_residency && l.fd >= 0) l.req.target->BeforeRead(l.req, l.fd);
    l.phase = kStat;
    OnStat(li, 0);
  }

  // fstat after the open, as Python's open() does: the size and block size the reader's calls follow.
  void Stat(size_t li) {
    Lane& l = lanes[li];
    if (l.req.probe_residency) l.req.target->BeforeRead(l.req, l.fd);
    l.phase = kStat;
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_statx(sqe, l.fd, "", AT_EMPTY_PATH, STATX_SIZE | STATX_BLOCKS, &l.stx);
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, Tag(li));
  }

  // The planned read `op` begins: its first piece at its offset.
  static void BeginRead(Lane& l) {
    l.piece_next = l.op < l.plan.size() ? l.plan[l.op].offset : 0;
    l.op_got = 0;
    l.op_short = false;
  }

  // The planned reads, one after another; a read larger than the scratch buffer goes as pieces, up to 8 at once.
  void NextRead(size_t li) {
    Lane& l = lanes[li];
    l.phase = kRead;
    if (l.op >= l.plan.size()) return Preprocess(li);
    const AccessRead& a = l.plan[l.op];
    const uint64_t end = a.offset + a.length;
    while (l.piece_next < end && !l.op_short && l.pieces_inflight < kMaxPieces) {
      const uint64_t len = std::min<uint64_t>(end - l.piece_next, scratch.size());
      uint32_t slot = 0;
      while (l.piece_used & (1u << slot)) ++slot;
      l.piece_used = static_cast<uint8_t>(l.piece_used | (1u << slot));
      l.piece_off[slot] = l.piece_next;
      l.piece_len[slot] = len;
      PrepPiece(li, slot);
      l.pieces_inflight++;
      l.piece_next += len;
    }
  }

  // The sample's first read, when it starts the file and fits the head buffer, lands there for CheckHead.
  static bool IsHead(const Lane& l) {
    return !l.streaming && l.op == 0 && l.plan[0].offset == 0 && l.plan[0].length <= kHead;
  }

  // A read that starts at or past the end of the file (numpy's read(1) at the end, PIL's last read) is the reader
  // meeting EOF: a synchronous read(2) there still makes the round trip to a FUSE daemon, but FUSE answers an
  // asynchronous one (io_uring's) from i_size without asking. It goes as a read of the file's last byte instead,
  // which makes the same round trip wherever DLIO's does (and is served from the cache wherever DLIO's is).
  void PrepPiece(size_t li, uint32_t slot) {
    Lane& l = lanes[li];
    io_uring_sqe* sqe = Sqe();
    char* dst = IsHead(l)        ? l.head_buf.get() + l.piece_off[slot]
                : l.stream_buf ? l.stream_buf.get() + (l.piece_off[slot] - l.plan[l.op].offset)  // a checked stream
                               : scratch.data();
    const uint64_t size = l.stx.stx_size;
    if (l.piece_off[slot] >= size && size > 0) {
      io_uring_prep_read(sqe, l.fd, scratch.data(), 1, size - 1);
      if (engine->dlio_.async_reads) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
      io_uring_sqe_set_data64(sqe, Tag(li, slot | kEofProbe));
      return;
    }
    io_uring_prep_read(sqe, l.fd, dst, static_cast<unsigned>(l.piece_len[slot]), l.piece_off[slot]);
    if (engine->dlio_.async_reads) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, Tag(li, slot));
  }

  // The sample's reads are in: DLIO's worker sleeps reader.preprocess_time (FormatReader.preprocess) before the
  // on-demand close, a timeout here. Streams (TensorFlow) and failed samples go on at once.
  void Preprocess(size_t li) {
    Lane& l = lanes[li];
    if (!preprocess || l.streaming || !l.error.ok()) return Close(li);
    const double s = preprocess->Next();
    l.preprocess_ns = static_cast<int64_t>(s * 1e9);
    if (l.preprocess_ns <= 0) return Close(li);
    l.phase = kPreprocess;
    l.preprocess_ts.tv_sec = l.preprocess_ns / 1000000000;
    l.preprocess_ts.tv_nsec = l.preprocess_ns % 1000000000;
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_timeout(sqe, &l.preprocess_ts, 0, 0);
    io_uring_sqe_set_data64(sqe, Tag(li));
  }

  void Close(size_t li) {
    Lane& l = lanes[li];
    if (l.streaming) {  // a stream keeps its file until its reads meet the end; one that failed ends here
      l.streaming = l.error.ok();
      if (l.streaming && l.stream_next != kStreamEnded) {
        l.stream_fd = l.fd;
        l.stream_owned = l.own_fd;
        return Finish(li);
      }
      if (l.streaming) {
        l.done_file = l.stream_file;
        l.done_pass = l.stream_pass;
      }
    }
    if (!l.own_fd || l.fd < 0) return AfterClose(li);
    l.phase = kClose;
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_close(sqe, l.fd);
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, Tag(li));
  }

  // A stream read through for the request's file (ReadThrough): that file's stream opens now, unless it failed.
  void AfterClose(size_t li) {
    Lane& l = lanes[li];
    if (!l.switching) return Finish(li);
    l.switching = false;
    l.fd = -1;
    if (!l.error.ok()) return Finish(li);
    OpenStream(li);
  }

  void Finish(size_t li) {
    Lane& l = lanes[li];
    l.fd = -1;
    l.active = false;
    --active;
    if (IoStats* stats = engine->options_.stats; stats != nullptr && l.error.ok()) stats->Record(index, l.bytes, NowNs() - l.start_ns - l.preprocess_ns);
    const ReadRequest req = l.req;
    // The sample's bytes, every one of which the planned reads covered (a whole file: its size); the reads' headers
    // and re-reads count in device_bytes, not as sample bytes.
    const uint64_t sample = req.extent.length == kWholeFile ? l.stx.stx_size : req.extent.length;
    req.target->OnComplete(req.tag, l.error.ok() ? sample : 0, l.error, nullptr);
    if (!l.queue.empty()) Start(li);
  }

  // The file the lane's calls are on: the request's, or while it reads a stream through, the stream's.
  static uint32_t FileOf(const Lane& l) { return l.switching ? l.stream_file : l.req.extent.file; }
  const char* PathOf(const Lane& l) const { return engine->files_.path(FileOf(l)); }

  void OnOpen(size_t li, int res) {
    Lane& l = lanes[li];
    if (res < 0) {
      l.error = Status::Errno("cannot open " + std::string(PathOf(l)), -res);
      l.fd = -1;
      return Finish(li);
    }
    l.fd = res;
    Stat(li);
  }

  void OnStat(size_t li, int res) {
    Lane& l = lanes[li];
    if (res < 0) {
      l.error = Status::Errno(std::string(PathOf(l)) + ": fstat failed", -res);
      return Close(li);
    }
    const uint64_t size = l.stx.stx_size;
    const SampleExtent& e = l.req.extent;
    if (e.length != kWholeFile && e.offset + e.length > size) {
      l.error = Status::Corruption(std::string(PathOf(l)) + ": file is truncated: sample extent ends at offset " +
                                   std::to_string(e.offset + e.length) + " but data ends at offset " + std::to_string(size));
      return Close(li);
    }
    if (l.streaming) {
      engine->planner_.PlanStream(l.req, size, &l.stream_next, &l.plan);
    } else {
      engine->planner_.Plan(l.req, size, l.stx.stx_blksize, &l.plan);
    }
    StartPlan(li);
  }

  void OnRead(size_t li, uint32_t slot, int cqe_res) {
    Lane& l = lanes[li];
    if (slot & kEofProbe) {  // the reader's read at EOF: it returns nothing, whatever the probe read
      slot &= ~static_cast<uint32_t>(kEofProbe);
      if (cqe_res > 0) device_bytes.fetch_add(static_cast<uint64_t>(cqe_res), std::memory_order_relaxed);
      if (cqe_res >= 0) cqe_res = 0;
    }
    const AccessRead& a = l.plan[l.op];
    FaultInjector* faults = engine->options_.faults;
    const uint64_t off = l.piece_off[slot], len = l.piece_len[slot];
    const int64_t res = faults == nullptr ? cqe_res : faults->OnRead(FileOf(l), off, len, cqe_res);
    const uint64_t size = l.stx.stx_size;
    if (res == -EAGAIN || res == -EINTR || (res > 0 && static_cast<uint64_t>(res) < len && off + res < size)) {
      // Retried from where it stopped, as the Python reader's loop would: EAGAIN, EINTR or a short read before EOF.
      requeued.fetch_add(1, std::memory_order_relaxed);
      if (res > 0) {
        l.op_got += static_cast<uint64_t>(res);
        l.bytes += static_cast<uint64_t>(res);
        device_bytes.fetch_add(static_cast<uint64_t>(res), std::memory_order_relaxed);
        l.piece_off[slot] += static_cast<uint64_t>(res);
        l.piece_len[slot] -= static_cast<uint64_t>(res);
      }
      return PrepPiece(li, slot);
    }
    --l.pieces_inflight;
    l.piece_used = static_cast<uint8_t>(l.piece_used & ~(1u << slot));
    if (res < 0) {
      if (l.error.ok()) {
        l.error = Status::Errno(std::string(PathOf(l)) + ": read failed at offset " + std::to_string(off), static_cast<int>(-res));
      }
    } else {
      l.op_got += static_cast<uint64_t>(res);
      l.bytes += static_cast<uint64_t>(res);
      device_bytes.fetch_add(static_cast<uint64_t>(res), std::memory_order_relaxed);
      if (static_cast<uint64_t>(res) < len) l.op_short = true;  // end of file, as the reader meets it
    }
    if (l.pieces_inflight > 0) return;
    if (l.error.ok() && l.piece_next < a.offset + a.length && !l.op_short) return NextRead(li);  // more pieces
    // A read that ends short of what the file held at its statx: the file shrank under the run.
    const uint64_t expect = a.offset >= size ? 0 : std::min(a.length, size - a.offset);
    if (l.error.ok() && l.op_got < expect) {
      l.error = Status::Corruption(std::string(PathOf(l)) + ": file is truncated: a read at offset " +
                                   std::to_string(a.offset) + " of " + std::to_string(expect) + " bytes returned " +
                                   std::to_string(l.op_got));
    }
    if (l.error.ok() && IsHead(l)) l.error = engine->planner_.CheckHead(l.head_buf.get(), l.op_got, PathOf(l));
    if (l.error.ok() && l.streaming && l.stream_state) {  // the stream's bytes, checked in order as they come
      const ReadPlanner& p = engine->planner_;
      l.error = a.offset >= size ? p.StreamEnd(l.stream_state.get(), PathOf(l))
                                 : p.StreamFeed(l.stream_state.get(), l.stream_buf.get(), l.op_got, PathOf(l));
    }
    if (!l.error.ok()) return Close(li);
    ++l.op;
    BeginRead(l);
    NextRead(li);
  }

  void OnCqe(uint64_t tag, int res) {
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
  void FailRing(int err) {
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
  void Admit(const ReadRequest& r) {
    const size_t li = r.lane / engine->workers_.size();
    Lane& l = lanes[li];
    if (!l.queue.Push(r)) {  // more than the prefetchers keep in flight (DlioEngineOptions::lane_capacity)
      r.target->OnComplete(r.tag, 0, LaneFull("DlioEngine", r.lane), nullptr);
      return;
    }
    if (!l.active) Start(li);
  }

  void Run() {
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
};

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
  }
  return c;
}

}  // namespace feedrate
