// S3Engine: the IoEngine for datasets in S3. Each sample extent is fetched as ranged GETs of transfer_size bytes,
// many at once on a few curl multi loops (no thread per request), into the request's destination or into
// recycled transfer buffers. The file table's paths are the objects' keys.
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

namespace feedrate {

class S3Engine final : public IoEngine {
 public:
  // options.threads event loops, each with options.queue_depth GETs in flight on its own connections.
  static Result<std::unique_ptr<S3Engine>> Create(const FileTable& keys, const EngineOptions& options, const S3Store& store);
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
  std::string description() const;

 private:
  struct Loop;
  S3Engine(const FileTable& keys, const EngineOptions& options, const S3Store& store);
  void Serve(Loop& loop, size_t index);

  const FileTable& keys_;
  EngineOptions options_;
  S3Store store_;
  MpmcQueue<ReadRequest> queue_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> device_bytes_{0}, requeued_{0}, requests_{0}, retries_{0};
  std::vector<std::unique_ptr<Loop>> loops_;
};

}  // namespace feedrate
