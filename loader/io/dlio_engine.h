// DlioEngine: reads each sample as DLIO's reader does, with DLIO's concurrency. Every request belongs to a lane (one
// DataLoader worker of one accelerator, or one of TensorFlow's file streams); a lane reads its requests one after
// another, each as its reader's calls:
// openat, statx, the planned read(2)s in order, close. All of them go through io_uring, so a waiting request holds
// no thread: a few I/O threads keep every lane's request in flight (256 accelerators x 4 workers = 1,024).
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loader/io/io_engine.h"
#include "loader/io/request_queue.h"
#include "loader/util/time_draw.h"

namespace feedrate {

// A reader's CPU work on each sample's bytes (PIL's decode, with feedrate.decode), made on the lane's I/O thread once
// the sample's reads are in and before its preprocess wait and close: DLIO's worker decodes a sample before it reads
// its next, so the work lengthens that worker's chain as it lengthens DLIO's. One per I/O thread, called there only
// (it may keep state across samples).
class SampleWork {
 public:
  virtual ~SampleWork() = default;
  // The sample's bytes (the extent's, from its first); errors name `path`.
  virtual Status Run(const char* data, uint64_t n, const char* path) = 0;
};

// What the engine asks per sample, on an I/O thread, once the file is open and its size and block size are known:
// the read(2) calls, in order (loader/format/access_pattern.h plans them). Must be thread-safe and allocation-free
// with `out` reserved to MaxReads().
class ReadPlanner {
 public:
  virtual void Plan(const ReadRequest& r, uint64_t file_size, uint64_t block, std::vector<AccessRead>* out) const = 0;
  virtual uint64_t MaxReads() const = 0;
  // True for a reader that streams each file (TensorFlow's TFRecordDataset): a lane reads each file it is given
  // once per pass (ReadRequest::pass), in one stream opened at its first request (no further open or statx) and
  // closed once the stream meets the file's end, or left (closed) when a request for another file or pass comes.
  // Its requests are planned by PlanStream instead of Plan.
  virtual bool StreamsFiles() const { return false; }
  // The reads for request `r` of the stream whose next read is at *next (0 when the file was opened, kStreamEnded
  // once it met the end); advances *next. A request whose bytes the stream already read plans nothing.
  virtual void PlanStream(const ReadRequest& r, uint64_t file_size, uint64_t* next, std::vector<AccessRead>* out) const {
    (void)r;
    (void)file_size;
    (void)next;
    out->clear();
  }
  // A stream's check of the bytes as they come (0 bytes of state: none). Each lane holds StreamCheckBytes of state
  // (8-aligned) and a buffer of StreamFillBytes that every planned read (at most that long) lands in; the engine
  // calls StreamReset at the open, StreamFeed with each read's bytes in stream order, StreamEnd when a read meets
  // the end. Thread-safe (the state is the lane's); errors name `path`.
  virtual uint64_t StreamCheckBytes() const { return 0; }
  virtual uint64_t StreamFillBytes() const { return 0; }
  virtual void StreamReset(void* state) const { (void)state; }
  virtual Status StreamFeed(void* state, const char* data, uint64_t n, const char* path) const {
    (void)state;
    (void)data;
    (void)n;
    (void)path;
    return Status::Ok();
  }
  virtual Status StreamEnd(const void* state, const char* path) const {
    (void)state;
    (void)path;
    return Status::Ok();
  }
  // The bytes of a sample's first read when it starts the file (at most 4 KiB): a format's signature check (a PNG
  // named .jpeg is refused, as DLIO's reader would fail on it). Thread-safe; `path` names the file in the error.
  virtual Status CheckHead(const char* data, uint64_t n, const char* path) const {
    (void)data;
    (void)n;
    (void)path;
    return Status::Ok();
  }
  // Per-sample work on the bytes (nullptr: none; not for streams). With it each lane keeps its sample's bytes: the
  // planned reads that start within the sample's extent land at their place in a buffer of the lane's (grown to the
  // largest sample and its reads, at most kMaxSampleWorkBytes, then kept); the others (headers before the extent,
  // the read at EOF) land in the I/O thread's scratch buffer.
  virtual std::unique_ptr<SampleWork> NewSampleWork() const { return nullptr; }
  static constexpr uint64_t kMaxSampleWorkBytes = 1ULL << 30;

  // A reader whose calls follow what its own reads return (np.load's zip layout, where set-up indexed nothing of the
  // file): each lane holds LearnStateBytes of state (8-aligned; 0: none, every sample planned by Plan) and a buffer
  // of LearnBufferBytes. LearnStart plans the sample from what its size tells and names in *want the bytes the plan
  // needs next; the lane lands them in its buffer from the planned read that starts at want->offset, and once that
  // read is in calls LearnFeed, which plans again (the reads made so far unchanged) and names the next (length 0:
  // none). The sample's bytes are then LearntSampleBytes. Thread-safe (the state is the lane's); errors name `path`.
  struct LearnWant {
    uint64_t offset = 0, length = 0;
  };
  virtual uint64_t LearnStateBytes() const { return 0; }
  virtual uint64_t LearnBufferBytes() const { return 0; }
  virtual void LearnStart(void* state, const ReadRequest& r, uint64_t file_size, uint64_t block,
                          std::vector<AccessRead>* out, LearnWant* want) const {
    (void)state;
    Plan(r, file_size, block, out);
    *want = {};
  }
  virtual Status LearnFeed(void* state, const ReadRequest& r, const char* data, uint64_t n, uint64_t block,
                           const char* path, std::vector<AccessRead>* out, LearnWant* want) const {
    (void)state;
    (void)r;
    (void)data;
    (void)n;
    (void)block;
    (void)path;
    (void)out;
    *want = {};
    return Status::Ok();
  }
  virtual uint64_t LearntSampleBytes(const void* state) const {
    (void)state;
    return 0;
  }

 protected:
  ~ReadPlanner() = default;
};

struct DlioEngineOptions {
  uint32_t lanes = 1;           // read_threads x accelerators on this rank; ReadRequest::lane < lanes
  uint64_t lane_capacity = 64;  // requests one lane may have queued (its batches in flight x batch); past it a request
                                // fails at once, naming the lane
  uint64_t chunk = 1 << 20;     // a planned read larger than this goes as pieces of it, one after another
  // reader.preprocess_time: after a sample's planned reads and before its close, the lane waits a draw of this (an
  // io_uring timeout: no thread sleeps), as DLIO's worker sleeps in FormatReader.preprocess before its next sample.
  // Not for streams (DLIO's TFReader does not call it). The sample completes after the wait.
  TimeDistribution preprocess;
  // Reads go straight to io-wq (IOSQE_ASYNC) instead of being tried in the submitting thread first. For a FUSE mount
  // read through the page cache: there an inline attempt that misses is polled (FUSE files have poll) and retried
  // before io-wq takes it, which cost 35% more client CPU than a blocking read in io-wq (full-size Unet3D on
  // latencyfs, page cache on: sys 4.8 s against 3.1 s). Not for FUSE direct_io, whose inline reads are sent
  // asynchronously (there io-wq cost 40% more).
  bool async_reads = false;
  // DLIO's PyTorch DataLoader worker collates each batch once its samples are read, in series with its reads:
  // default_collate stacks the batch's `resized_image`s (this many bytes each, DLIO's max_dimension^2) into a new
  // shared-memory tensor. The lane does the same copy before its batch's last sample completes (Worker::Collate).
  // 0: none (TensorFlow's loader; feedrate.worker_collate off).
  uint64_t collate_sample_bytes = 0;
};

// The host memory an engine of `threads` I/O threads and options `d` takes at most, for the read-buffer check: per
// thread its scratch (d.chunk) and, where it collates, the collate source and the batch it copies into (each at most
// 64 MiB; `batch` samples a batch); per lane its head buffer and `lane_bytes` more (a checked stream's fill, a
// learnt layout's buffer). (feedrate.decode's lane buffers are counted apart: they follow the images' sizes.)
uint64_t DlioEngineBufferBytes(const DlioEngineOptions& d, uint64_t threads, uint64_t batch, uint64_t lane_bytes);

// REQUIRES: `files`, `planner` and the options' faults and stats outlive the engine; FileTable modes kPerSample or
// kStream (the lane opens and closes the file per sample, or per stream where the planner StreamsFiles) or kOnce
// (the table's descriptors); buffered reads only (no O_DIRECT: DLIO's readers
// do not use it). The bytes land in a scratch buffer per I/O thread (or, for a planner's SampleWork, the lane's
// buffer): completions carry data == nullptr, so it serves runs whose samples are neither checked (but by the
// planner) nor retained.
class DlioEngine final : public IoEngine {
 public:
  static Result<std::unique_ptr<DlioEngine>> Create(const FileTable& files, const EngineOptions& options,
                                                    const DlioEngineOptions& dlio, const ReadPlanner& planner);
  ~DlioEngine() override;
  const char* name() const override { return "dlio"; }
  // Requests go to their lane's I/O thread; a lane's requests are read in the order submitted.
  void Submit(std::span<const ReadRequest> requests) override;
  using IoEngine::Submit;  // one request
  uint64_t buffer_bytes() const override;
  EngineCounters counters() const override;
  const std::string& setup_description() const { return setup_; }

 private:
  struct Worker;
  DlioEngine(const FileTable& files, const EngineOptions& options, const DlioEngineOptions& dlio, const ReadPlanner& planner);

  const FileTable& files_;
  EngineOptions options_;
  DlioEngineOptions dlio_;
  const ReadPlanner& planner_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::string setup_;
};

}  // namespace feedrate
