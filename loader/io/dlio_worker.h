// DlioEngine's insides, shared by its two source files: a lane (one DataLoader worker's per-sample call chain,
// dlio_lane.cpp) and an I/O thread (a ring, its lanes and its loop, dlio_engine.cpp). Only those two include it.
#pragma once

#include <liburing.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cstdint>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/io/dlio_engine.h"
#include "loader/io/request_ring.h"

namespace feedrate {
namespace dlio_detail {

// Pieces of one large read in flight at once: 1. A planned read is one blocking read(2) of the emulated reader (a
// whole file's read(size + 1) under MLPerf Storage v3.0's DLIO), which the kernel serves one request after another
// where each waits (FUSE direct_io, a network file system): its pieces go one after another too, each on io-wq.
constexpr uint32_t kMaxPieces = 1;
constexpr uint64_t kHead = 4096;    // a first read at offset 0 this short lands in the lane's head buffer
// kMetadataAsync: openat, statx and close go straight to io-wq (IOSQE_ASYNC). io_uring first tries an operation in
// the submitting thread, and a file system's open (FUSE's FUSE_OPEN, NFS's) ignores O_NONBLOCK and waits there, as
// close waits for FUSE's flush: measured on latencyfs, each I/O thread then made one open at a time (2 threads at
// 50 ms: ~40 opens/s, whatever the lanes). Reads are tried inline: FUSE refuses nowait reads at once.
constexpr uint64_t kEofProbe = 0x80;  // tag bit: the piece was a read at EOF, sent as the last byte (PrepPiece)
constexpr uint64_t kDetachedClose = 0x40;
constexpr uint64_t kMaxCollateSource = 64 << 20;  // a larger resized image is copied from this much, in rounds  // tag: the close of a stream's file the lane has left (nothing waits on it)

enum Phase : uint8_t { kOpen, kStat, kRead, kPreprocess, kClose };

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
  std::unique_ptr<char[]> sample_buf;  // with a SampleWork: the sample's bytes, as its reads land (SizeSampleBuffer)
  uint64_t sample_cap = 0;
  bool op_short = false;           // a piece came back short: end of file
  uint64_t bytes = 0;              // what the planned reads returned (headers and re-reads included)
  int64_t start_ns = 0;
  int64_t preprocess_ns = 0;       // the sample's preprocess wait and work (not I/O: IoStats leaves them out)
  __kernel_timespec preprocess_ts {};  // the wait's timeout; read by the kernel at submission
  Status error;
  uint32_t batch_samples = 0;      // samples read since its last batch ended (the next collate's count)
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
  // A reader that learns its file's layout from its own reads (ReadPlanner::LearnStateBytes): its state, the buffer
  // the bytes it asks for land in, what it asks for and the planned read that brings them (kNoLearn: none), and the
  // two pieces of that read's destination (the buffer, then scratch), read by the kernel at submission.
  std::unique_ptr<uint64_t[]> learn_state;
  std::unique_ptr<char[]> learn_buf;
  ReadPlanner::LearnWant want;
  size_t learn_op = SIZE_MAX;
  struct iovec learn_iov[2]{};
};

}  // namespace dlio_detail

struct DlioEngine::Worker {
  using Lane = dlio_detail::Lane;
  DlioEngine* engine = nullptr;
  size_t index = 0;
  io_uring ring {};
  bool ring_ready = false;
  AlignedBuffer scratch;
  std::optional<TimeDraw> preprocess;  // reader.preprocess_time's draws for this thread's lanes; none when always 0
  std::unique_ptr<SampleWork> work;     // the planner's per-sample work (a decode); none for most readers
  std::atomic<uint64_t> work_ns{0};     // time in it
  std::atomic<uint64_t> collate_ns{0}, collates{0};  // time in the lanes' batch collates (Collate), and how many
  std::unique_ptr<char[]> collate_src;  // one resized image (DlioEngineOptions::collate_sample_bytes, at most 64 MiB)
  AlignedBuffer collate_dst;            // a batch of them (Collate)
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

  ~Worker();
  // Set-up on the I/O thread: the ring, io-wq's bound, the lanes and their buffers.
  Status Setup(size_t local_lanes);
  // The loop: requests in, completions out, until the engine stops and nothing is in flight (dlio_engine.cpp).
  void Run();
  void Admit(const ReadRequest& r);
  void OnCqe(uint64_t tag, int res);
  void FailRing(int err);
  io_uring_sqe* Sqe();  // a free submission entry (submitting first when the queue is full); counts it in flight
  static uint64_t Tag(size_t lane, uint64_t extra = 0) { return static_cast<uint64_t>(lane) << 8 | extra; }

  // A lane's sample, phase by phase (dlio_lane.cpp): each call prepares the next request of the chain, each
  // completion (On*) moves the lane on; Finish hands the sample to its target and starts the lane's next.
  void Start(size_t li);
  void Open(size_t li);
  void StartStream(size_t li);
  void ReadThrough(size_t li);
  static void TakeStreamFd(Lane& l);
  void StartPlan(size_t li);
  void OpenStream(size_t li);
  void Resume(size_t li);
  void Stat(size_t li);
  static void BeginRead(Lane& l);
  void NextRead(size_t li);
  static bool IsHead(const Lane& l);
  void PrepPiece(size_t li, uint32_t slot);
  bool PrepLearnPiece(Lane& l, uint32_t slot, io_uring_sqe* sqe);
  static Status FindLearnOp(Lane& l, size_t from, const char* path);
  Status Learn(Lane& l);
  void Work(size_t li);
  Status SizeSampleBuffer(Lane& l);
  char* ReadDst(const Lane& l, uint64_t off);
  static uint64_t SampleBytes(const Lane& l);
  void Preprocess(size_t li);
  void Close(size_t li);
  void AfterClose(size_t li);
  void Collate(Lane& l);
  void Finish(size_t li);
  void OnOpen(size_t li, int res);
  void OnStat(size_t li, int res);
  void OnRead(size_t li, uint32_t slot, int cqe_res);

  // The file the lane's calls are on: the request's, or while it reads a stream through, the stream's.
  static uint32_t FileOf(const Lane& l) { return l.switching ? l.stream_file : l.req.extent.file; }
  const char* PathOf(const Lane& l) const { return engine->files_.path(FileOf(l)); }
};

}  // namespace feedrate
