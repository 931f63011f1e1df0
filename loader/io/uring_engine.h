// UringEngine: one io_uring per I/O thread. Each thread keeps up to queue_depth transfers in flight, splitting a
// sample into transfer_size reads that run concurrently (so one 140 MB sample is read with depth), into buffers
// registered with the ring. Short reads and -EAGAIN are resubmitted for the remainder.
#pragma once

#include <atomic>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loader/io/io_engine.h"
#include "loader/io/request_queue.h"

namespace feedrate {

class UringEngine final : public IoEngine {
 public:
  // Sets up every thread's ring (setup flags probed: SINGLE_ISSUER|DEFER_TASKRUN, then COOP_TASKRUN, then none,
  // each dropped on EINVAL). Fails with the reason when io_uring is unavailable (EPERM, ENOSYS, ...).
  static Result<std::unique_ptr<UringEngine>> Create(const FileTable& files, const EngineOptions& options);
  ~UringEngine() override;
  UringEngine(const UringEngine&) = delete;
  UringEngine& operator=(const UringEngine&) = delete;

  const char* name() const override { return "uring"; }
  using IoEngine::Submit;
  void Submit(std::span<const ReadRequest> requests) override;
  uint64_t buffer_bytes() const override;
  EngineCounters counters() const override;
  // How the rings were set up, e.g. "SINGLE_ISSUER|DEFER_TASKRUN, registered buffers".
  const std::string& setup_description() const { return setup_; }

  struct Worker;  // one thread and its ring (defined in the .cpp)

 private:
  UringEngine(const FileTable& files, const EngineOptions& options);

  const FileTable& files_;
  EngineOptions options_;
  RequestQueue requests_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::string setup_;
};

}  // namespace feedrate
