// PosixEngine: a pool of threads each doing open/pread/close for whole sample extents, reading in
// transfer_size pieces into one recycled, aligned buffer per thread (or into the request's destination).
// With O_DIRECT each extent is read as its aligned window. The fallback when io_uring is unavailable.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/io/io_engine.h"
#include "loader/io/request_queue.h"

namespace feedrate {

class PosixEngine final : public IoEngine {
 public:
  PosixEngine(const FileTable& files, const EngineOptions& options);
  ~PosixEngine() override;  // stops and joins the workers (outstanding requests are completed first)
  PosixEngine(const PosixEngine&) = delete;
  PosixEngine& operator=(const PosixEngine&) = delete;

  const char* name() const override { return "posix"; }
  using IoEngine::Submit;
  void Submit(std::span<const ReadRequest> requests) override;
  uint64_t buffer_bytes() const override { return static_cast<uint64_t>(options_.threads) * options_.transfer_size; }
  EngineCounters counters() const override {
    return {device_bytes_.load(std::memory_order_relaxed), requeued_.load(std::memory_order_relaxed)};
  }

 private:
  void Worker(size_t index);
  // Reads r's extent; `*data` gets the sample's first byte when it is whole in one buffer (see OnComplete).
  Status ReadExtent(const ReadRequest& r, char* scratch, FaultInjector* faults, FdCache* fds, uint64_t* bytes,
                    const char** data);

  const FileTable& files_;
  EngineOptions options_;
  RequestQueue requests_;
  std::atomic<uint64_t> device_bytes_{0};
  std::atomic<uint64_t> requeued_{0};  // reads retried after EINTR/EAGAIN or continued after a short read
  std::vector<AlignedBuffer> buffers_;
  std::vector<std::thread> workers_;
};

}  // namespace feedrate
