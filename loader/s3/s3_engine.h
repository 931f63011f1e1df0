// S3Engine: the IoEngine for datasets in S3. Each sample extent is fetched as ranged GETs of transfer_size bytes,
// many at once on a few curl multi loops (no thread per request), into the request's destination or into
// recycled transfer buffers. The file table's paths are the objects' keys. With lanes (DLIO's access pattern), each
// sample is its whole object, fetched as DLIO's S3 readers' client fetches it (S3LaneOptions), and each lane (one
// DataLoader worker) has one sample in flight at a time, in the order its requests were submitted.
// Allocation: the engine allocates nothing per sample (requests, buffers and sample slots are pooled); libcurl
// builds each HTTP request itself (URL, headers, signature), which is the price of the protocol.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/io/io_engine.h"
#include "loader/io/mpmc_queue.h"
#include "loader/s3/s3_dataset.h"
#include "loader/util/time_draw.h"

namespace feedrate {

// DLIO's S3 readers (npz_reader_s3.py, npy_reader_s3.py at e1919d7): storage.get_data(key) of the whole object per
// sample, one sample at a time per DataLoader worker. s3torchconnector's client (the AWS CRT's auto-ranged GET)
// fetches an object as a first ranged GET of part_size bytes, then, once that answered (its Content-Range gives
// the size), the rest in GETs of part_size, at once (here at most 16 of one object in flight).
struct S3LaneOptions {
  uint32_t lanes = 0;           // 0: ranged GETs of the extents (no lanes); else read_threads x accelerators, and
                                // ReadRequest::lane < lanes
  uint64_t lane_capacity = 64;  // requests one lane may have queued; past it a request fails at once, naming the lane
  uint64_t part_size = 8 << 20;
  std::vector<uint64_t> object_sizes;  // by file index (the listing's); 0 or missing: one GET without a Range
  // reader.preprocess_time: after a sample's object is in, its lane waits a draw of this (a timer of the loop: no
  // thread sleeps) before the sample completes and the lane takes its next, as DLIO's worker sleeps in
  // FormatReader.preprocess. Only with window 1.
  TimeDistribution preprocess;
  // Samples one lane keeps in flight: 1, one at a time (DLIO e1919d7's S3 readers); more, a window of whole-object
  // GETs, one per sample and no parts, as newer DLIO's iterable S3 readers prefetch a worker's objects
  // (feedrate.s3_reader_window). The lane's next sample starts as soon as one of its window's ends.
  uint32_t window = 1;
};

class S3Engine final : public IoEngine {
 public:
  // options.threads event loops, each with options.queue_depth GETs in flight on its own connections (with lanes:
  // as many as its lanes). With lanes the bytes land in one scratch buffer per loop and completions carry no data,
  // so it serves runs whose samples are neither checked nor retained.
  static Result<std::unique_ptr<S3Engine>> Create(const FileTable& keys, const EngineOptions& options, const S3Store& store,
                                                  const S3LaneOptions& lanes = {});
  ~S3Engine() override;  // finishes what is in flight, then joins the loops
  S3Engine(const S3Engine&) = delete;
  S3Engine& operator=(const S3Engine&) = delete;

  const char* name() const override { return "s3"; }
  using IoEngine::Submit;
  void Submit(std::span<const ReadRequest> requests) override;
  uint64_t buffer_bytes() const override;
  EngineCounters counters() const override {
    return {device_bytes_.load(std::memory_order_relaxed), requeued_.load(std::memory_order_relaxed)};
  }
  // GETs sent (retries included) and retries, over all loops.
  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  uint64_t retries() const { return retries_.load(std::memory_order_relaxed); }
  // The most GETs this engine had in flight at once, over all loops.
  uint64_t max_gets_in_flight() const { return max_in_flight_.load(std::memory_order_relaxed); }
  std::string description() const;

 private:
  struct Loop;
  S3Engine(const FileTable& keys, const EngineOptions& options, const S3Store& store, const S3LaneOptions& lanes);
  void Serve(Loop& loop, size_t index);
  void Sent();  // a GET handed to a loop's client: counted, and in flight until its Done

  const FileTable& keys_;
  EngineOptions options_;
  S3Store store_;
  S3LaneOptions lanes_;
  MpmcQueue<ReadRequest> queue_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> device_bytes_{0}, requeued_{0}, requests_{0}, retries_{0}, in_flight_{0}, max_in_flight_{0};
  std::vector<std::unique_ptr<Loop>> loops_;
};

}  // namespace feedrate
