// CuFileEngine (run --accelerator-memory device --gds): I/O threads that read each sample's O_DIRECT window with
// cuFileRead straight into the device memory of the accelerator's batch slot; no host buffer, no copy of our own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "loader/gpu/cufile.h"
#include "loader/io/io_engine.h"
#include "loader/io/request_queue.h"
#include "loader/status.h"

namespace feedrate::gpu {

// Device memory registered with cuFile (cuFileBufRegister) that reads land in; cuFileRead is given its base and
// the destination's offset in it, as cuFile requires for registered memory.
struct DeviceRegion {
  char* base = nullptr;
  uint64_t bytes = 0;
  const DeviceContext* context = nullptr;  // the GPU it is on: made current before each read (as KvikIO does)
};

// REQUIRES: `cufile`, `files` (opened with O_DIRECT) and the options' faults and stats outlive the engine; every
// request's dest lies, with its whole O_DIRECT window, inside one of `regions`, and those stay registered and
// allocated until the engine is destroyed. OnComplete gets data == nullptr (device memory: the host cannot look).
class CuFileEngine final : public IoEngine {
 public:
  // Registers a cuFile handle per file up front when the table keeps files open; otherwise per open, on the I/O
  // thread. Errors: a handle that does not register (naming the file and cuFile's reason).
  static Result<std::unique_ptr<CuFileEngine>> Create(const CuFile& cufile, const FileTable& files,
                                                     const EngineOptions& options, std::vector<DeviceRegion> regions);
  ~CuFileEngine() override;  // stops and joins the I/O threads (outstanding requests complete first)
  CuFileEngine(const CuFileEngine&) = delete;
  CuFileEngine& operator=(const CuFileEngine&) = delete;

  const char* name() const override { return "cufile"; }
  using IoEngine::Submit;
  void Submit(std::span<const ReadRequest> requests) override;
  uint64_t buffer_bytes() const override { return 0; }  // reads land in the regions, which the caller owns
  EngineCounters counters() const override {
    return {device_bytes_.load(std::memory_order_relaxed), requeued_.load(std::memory_order_relaxed)};
  }

 private:
  // One I/O thread's registered handle for the descriptor it read last (kStream and kPerSample files), and the
  // GPU context it made current last (a read into another GPU's slot switches it).
  struct ThreadHandle {
    uint32_t file = 0;
    int fd = -1;
    CuFileHandle handle;
    const DeviceContext* context = nullptr;
  };
  CuFileEngine(const CuFile& cufile, const FileTable& files, const EngineOptions& options,
               std::vector<DeviceRegion> regions);
  void Start();
  void Worker(size_t index);
  Result<CUfileHandle_t> HandleFor(uint32_t file, int fd, ThreadHandle* cached);
  Status ReadExtent(const ReadRequest& r, FdCache* fds, ThreadHandle* cached, uint64_t* bytes);
  // The region holding [dest, dest + bytes), or nullptr.
  const DeviceRegion* RegionOf(const char* dest, uint64_t bytes) const;

  const CuFile& cufile_;
  const FileTable& files_;
  EngineOptions options_;
  std::vector<DeviceRegion> regions_;  // sorted by base; read-only once the threads run
  std::vector<CuFileHandle> kept_;     // per file, for a table that keeps its files open
  RequestQueue requests_;
  std::atomic<uint64_t> device_bytes_{0};
  std::atomic<uint64_t> requeued_{0};
  std::vector<std::thread> workers_;
};

}  // namespace feedrate::gpu
