// `feedrate iobench` cells: raw reads/writes of one block size at one queue depth from N threads against one file,
// timed (with ramp), with per-I/O latency histograms, like a fio/gdsio grid cell. No MPI here (the CLI reduces).
#pragma once

#include <cstdint>
#include <string>

#include "loader/status.h"
#include "loader/util/latency_histogram.h"

namespace feedrate {

struct IoBenchCell {
  std::string rw;  // read | randread | write | randwrite | randrw
  uint64_t bs = 4096;
  uint32_t qd = 1;
  uint32_t threads = 1;
};

// gdsio's transfer modes. kHost: today's reads into host memory (gdsio's CPUONLY); the others land every block
// in GPU memory: kCpuGpu (O_DIRECT pread into pinned memory, then a synchronous copy), kCpuAsyncGpu (the same with
// qd copies in flight on the thread's stream), kCpuCachedGpu (buffered pread, page cache, then the copy),
// kGpuDirect (cuFileRead into registered device memory), kGpuBatch (qd cuFile reads per batch), kGpuDirectAsync
// (qd cuFileReadAsync calls queued on a registered CUDA stream).
enum class XferMode { kHost, kCpuGpu, kCpuAsyncGpu, kCpuCachedGpu, kGpuDirect, kGpuBatch, kGpuDirectAsync };
inline bool IsGpuXfer(XferMode m) { return m != XferMode::kHost; }
// gdsio's spelling of a mode ("cpuonly", "cpu_gpu", "cpu_async_gpu", "cpu_cached_gpu", "gpud", "gpu_batch",
// "gpud_async").
const char* XferName(XferMode m);

struct IoBenchOptions {
  std::string path;           // the file (created/extended for writes)
  uint64_t size = 0;          // bytes of the file used
  double runtime_s = 5;       // measured time per cell
  double ramp_s = 0;          // time before measuring starts
  int rwmixread = 50;         // randrw: percent reads
  std::string engine = "auto";
  bool direct = false;
  bool verify = false;        // writes lay down a pattern derived from (seed, offset); reads check it
  uint64_t seed = 1;
  // I/Os prepared before one submission (fio's iodepth_batch_submit, default 1 there too): on a virtio disk
  // submitting each I/O as soon as a slot frees measured ~20% more 4 KiB IOPS than batching a whole refill.
  uint32_t submit_batch = 1;
  XferMode xfer = XferMode::kHost;
  int gpu = 0;                // the device the GPU modes land blocks on
};

struct IoBenchResult {
  std::string engine;  // engine really used (a GPU cell: its --xfer mode)
  std::string detail;  // how the bytes moved and what served them (the GPU modes: path, library, device)
  uint64_t read_bytes = 0, write_bytes = 0, ios = 0;
  double seconds = 0;  // measured window
  double cpu_seconds = 0;
  double first_done_seconds = 0;
  uint64_t first_done_bytes = 0;
  LatencyHistogram latency;
};

// Makes sure `o.path` can serve the cell: reads need an existing file of at least `size` bytes; writes create it
// (and extend it to `size`). Returns the size to use when `o.size` is 0 (the file's size, or 1 GiB for a new file).
Result<uint64_t> PrepareIoBenchFile(const IoBenchOptions& o, bool writes);
Result<IoBenchResult> RunIoBenchCell(const IoBenchOptions& o, const IoBenchCell& cell);

}  // namespace feedrate
