// iobench's GPU transfer modes (gdsio's): every block lands in GPU memory, through pinned host memory and a copy,
// or by GPUDirect Storage (cuFile), one read at a time, qd per batch, or qd queued on a CUDA stream. CUDA and cuFile come from loader/gpu.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "loader/gpu/cuda_driver.h"
#include "loader/gpu/cufile.h"
#include "loader/io/unique_fd.h"
#include "loader/iobench/cell.h"
#include "loader/util/clock.h"

namespace feedrate {

const char* XferName(XferMode m) {
  switch (m) {
    case XferMode::kHost: return "cpuonly";
    case XferMode::kCpuGpu: return "cpu_gpu";
    case XferMode::kCpuAsyncGpu: return "cpu_async_gpu";
    case XferMode::kCpuCachedGpu: return "cpu_cached_gpu";
    case XferMode::kGpuDirect: return "gpud";
    case XferMode::kGpuBatch: return "gpu_batch";
    case XferMode::kGpuDirectAsync: return "gpud_async";
  }
  return "?";
}

namespace iobench {
namespace {

// A read issued and not yet accounted: its offset, start and result (bytes, or a negative error).
struct Pending {
  uint64_t off;
  int64_t started;
  int64_t res;
};

// What a GPU cell's threads share: the driver, and cuFile for the GPUDirect modes.
struct GpuCell {
  const gpu::Cuda& cuda;
  const gpu::CuFile* cufile;
};

// --verify: the block as the device holds it, copied back to the host (nullptr when not verifying).
Result<const char*> DeviceView(const gpu::Cuda& cuda, gpu::CUdeviceptr block, std::vector<char>& check) {
  if (check.empty()) return static_cast<const char*>(nullptr);
  FEEDRATE_RETURN_IF_ERROR(cuda.Check(cuda.fn().MemcpyDtoH(check.data(), block, check.size()), "cuMemcpyDtoH (--verify)"));
  return static_cast<const char*>(check.data());
}

// Accounts a read whose negative result may be a cuFile error (5000 + n) rather than an errno.
Status CompleteRead(Shared& s, ThreadStats& t, const GpuCell& g, const Pending& p, const char* view) {
  if (p.res <= -gpu::kCuFileBaseError) {
    return Status::IoError(s.o.path + ": read failed at offset " + std::to_string(p.off) + ": " +
                           gpu::CuFileErrorText(g.cuda, {static_cast<int>(-p.res), 0}));
  }
  return Complete(s, t, true, p.res, p.off, view, p.started);
}

// cpu_gpu and cpu_cached_gpu: pread into pinned memory, then a copy the thread waits for.
Status CopyStream(Shared& s, const GpuCell& g, int fd, const gpu::DeviceBuffer& dev, Offsets& off, ThreadStats& t,
                  std::vector<char>& check) {
  FEEDRATE_ASSIGN_OR_RETURN(auto pinned, gpu::PinnedBuffer::Allocate(g.cuda, s.c.bs));
  FEEDRATE_ASSIGN_OR_RETURN(auto stream, gpu::Stream::Create(g.cuda));
  while (NowNs() < s.stop) {
    Pending p{off.Next(), NowNs(), 0};
    const ssize_t n = ::pread(fd, pinned.data(), s.c.bs, static_cast<off_t>(p.off));
    p.res = n < 0 ? -errno : n;
    if (n > 0) {
      FEEDRATE_RETURN_IF_ERROR(stream.CopyToDevice(dev.ptr(), pinned.data(), static_cast<size_t>(n)));
      FEEDRATE_RETURN_IF_ERROR(stream.Synchronize());
    }
    FEEDRATE_ASSIGN_OR_RETURN(const char* view, DeviceView(g.cuda, dev.ptr(), check));
    FEEDRATE_RETURN_IF_ERROR(CompleteRead(s, t, g, p, view));
  }
  return Status::Ok();
}

// cpu_async_gpu: qd pinned slots; each block's copy is queued on the thread's stream while the next block is read,
// and a block counts once the stream has finished its copy.
Status AsyncCopyStream(Shared& s, const GpuCell& g, int fd, const gpu::DeviceBuffer& dev, Offsets& off,
                       ThreadStats& t, std::vector<char>& check) {
  const uint64_t bs = s.c.bs;
  FEEDRATE_ASSIGN_OR_RETURN(auto pinned, gpu::PinnedBuffer::Allocate(g.cuda, bs * s.c.qd));
  FEEDRATE_ASSIGN_OR_RETURN(auto stream, gpu::Stream::Create(g.cuda));
  std::vector<Pending> pending;
  pending.reserve(s.c.qd);
  for (;;) {
    if (NowNs() < s.stop && pending.size() < s.c.qd) {
      const uint64_t slot = pending.size();
      Pending p{off.Next(), NowNs(), 0};
      const ssize_t n = ::pread(fd, pinned.data() + slot * bs, bs, static_cast<off_t>(p.off));
      p.res = n < 0 ? -errno : n;
      if (n > 0) FEEDRATE_RETURN_IF_ERROR(stream.CopyToDevice(dev.ptr() + slot * bs, pinned.data() + slot * bs, static_cast<size_t>(n)));
      pending.push_back(p);
      continue;
    }
    if (pending.empty()) return Status::Ok();
    FEEDRATE_RETURN_IF_ERROR(stream.Synchronize());
    for (size_t k = 0; k < pending.size(); ++k) {
      FEEDRATE_ASSIGN_OR_RETURN(const char* view, DeviceView(g.cuda, dev.ptr() + k * bs, check));
      FEEDRATE_RETURN_IF_ERROR(CompleteRead(s, t, g, pending[k], view));
    }
    pending.clear();
  }
}

// gpud: cuFileRead from the O_DIRECT file into registered device memory, one block at a time.
Status DirectStream(Shared& s, const GpuCell& g, int fd, const gpu::DeviceBuffer& dev, Offsets& off, ThreadStats& t,
                    std::vector<char>& check) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fh, gpu::CuFileHandle::Register(*g.cufile, fd, s.o.path));
  FEEDRATE_ASSIGN_OR_RETURN(auto reg, gpu::CuFileBuffer::Register(*g.cufile, dev.address(), dev.size()));
  while (NowNs() < s.stop) {
    Pending p{off.Next(), NowNs(), 0};
    FEEDRATE_ASSIGN_OR_RETURN(const size_t n, fh.Read(dev.address(), s.c.bs, p.off, 0));
    p.res = static_cast<int64_t>(n);
    FEEDRATE_ASSIGN_OR_RETURN(const char* view, DeviceView(g.cuda, dev.ptr(), check));
    FEEDRATE_RETURN_IF_ERROR(CompleteRead(s, t, g, p, view));
  }
  return Status::Ok();
}

// The events of one submitted batch, each read accounted as it is collected (the cookie is its slot). `events`
// holds pending.size() entries, allocated once per thread, not per batch.
Status CollectBatch(Shared& s, const GpuCell& g, const gpu::CuFileBatch& batch, const gpu::DeviceBuffer& dev,
                    std::vector<Pending>& pending, std::vector<gpu::CUfileIOEvents_t>& events, ThreadStats& t,
                    std::vector<char>& check) {
  for (size_t done = 0; done < pending.size();) {
    FEEDRATE_ASSIGN_OR_RETURN(const unsigned got, batch.Wait(1, events.data(), static_cast<unsigned>(events.size())));
    for (unsigned i = 0; i < got; ++i) {
      const auto slot = reinterpret_cast<uintptr_t>(events[i].cookie);
      if (slot >= pending.size()) return Status::IoError("cuFileBatchIOGetStatus returned an unknown cookie");
      Pending& p = pending[slot];
      if (events[i].status != gpu::kCuFileStatusComplete && events[i].status != gpu::kCuFileStatusFailed) {
        return Status::IoError(s.o.path + ": batched read at offset " + std::to_string(p.off) + " ended with status " +
                               std::to_string(events[i].status) + " (canceled, timed out or invalid)");
      }
      p.res = static_cast<int64_t>(static_cast<ssize_t>(events[i].ret));
      if (events[i].status == gpu::kCuFileStatusFailed && p.res >= 0) p.res = -EIO;
      FEEDRATE_ASSIGN_OR_RETURN(const char* view, DeviceView(g.cuda, dev.ptr() + slot * s.c.bs, check));
      FEEDRATE_RETURN_IF_ERROR(CompleteRead(s, t, g, p, view));
    }
    done += got;
  }
  return Status::Ok();
}

// gpu_batch: qd cuFile reads per batch (cuFileBatchIOSubmit), the next batch once all of them completed.
Status BatchStream(Shared& s, const GpuCell& g, int fd, const gpu::DeviceBuffer& dev, Offsets& off, ThreadStats& t,
                   std::vector<char>& check) {
  const uint32_t qd = s.c.qd;
  FEEDRATE_ASSIGN_OR_RETURN(auto fh, gpu::CuFileHandle::Register(*g.cufile, fd, s.o.path));
  FEEDRATE_ASSIGN_OR_RETURN(auto reg, gpu::CuFileBuffer::Register(*g.cufile, dev.address(), dev.size()));
  FEEDRATE_ASSIGN_OR_RETURN(auto batch, gpu::CuFileBatch::SetUp(*g.cufile, qd));
  std::vector<gpu::CUfileIOParams_t> params(qd);
  std::vector<Pending> pending(qd);
  std::vector<gpu::CUfileIOEvents_t> events(qd);
  while (NowNs() < s.stop) {
    for (uint32_t k = 0; k < qd; ++k) {
      pending[k] = {off.Next(), NowNs(), 0};
      params[k] = {};
      params[k].mode = gpu::kCuFileBatchMode;
      params[k].opcode = gpu::kCuFileRead;
      params[k].fh = fh.get();
      params[k].u.batch = {dev.address(), static_cast<off_t>(pending[k].off), static_cast<off_t>(k * s.c.bs), s.c.bs};
      params[k].cookie = reinterpret_cast<void*>(uintptr_t{k});
    }
    FEEDRATE_RETURN_IF_ERROR(batch.Submit(params.data(), qd));
    FEEDRATE_RETURN_IF_ERROR(CollectBatch(s, g, batch, dev, pending, events, t, check));
  }
  return Status::Ok();
}

// gpud_async (gdsio's GPU_DIRECT_ASYNC): qd cuFileReadAsync calls queued on the thread's stream, registered with
// cuFile; once the stream is synchronized every read has landed and its result word is set. The size, offset and
// result words are per slot and stay put until then, as the stream-ordered API requires.
Status AsyncDirectStream(Shared& s, const GpuCell& g, int fd, const gpu::DeviceBuffer& dev, Offsets& off,
                         ThreadStats& t, std::vector<char>& check) {
  struct Slot {
    size_t size;
    off_t file_offset, buf_offset;
    ssize_t bytes;
  };
  const uint32_t qd = s.c.qd;
  FEEDRATE_ASSIGN_OR_RETURN(auto fh, gpu::CuFileHandle::Register(*g.cufile, fd, s.o.path));
  FEEDRATE_ASSIGN_OR_RETURN(auto reg, gpu::CuFileBuffer::Register(*g.cufile, dev.address(), dev.size()));
  FEEDRATE_ASSIGN_OR_RETURN(auto stream, gpu::Stream::Create(g.cuda));
  FEEDRATE_ASSIGN_OR_RETURN(auto registered, gpu::CuFileStream::Register(*g.cufile, stream.get()));
  std::vector<Slot> slots(qd);
  std::vector<Pending> pending(qd);
  while (NowNs() < s.stop) {
    for (uint32_t k = 0; k < qd; ++k) {
      pending[k] = {off.Next(), NowNs(), 0};
      slots[k] = {s.c.bs, static_cast<off_t>(pending[k].off), static_cast<off_t>(k * s.c.bs), 0};
      FEEDRATE_RETURN_IF_ERROR(g.cufile->Check(
          g.cufile->fn().ReadAsync(fh.get(), dev.address(), &slots[k].size, &slots[k].file_offset, &slots[k].buf_offset,
                                   &slots[k].bytes, stream.get()),
          "cuFileReadAsync"));
    }
    FEEDRATE_RETURN_IF_ERROR(stream.Synchronize());
    for (uint32_t k = 0; k < qd; ++k) {
      pending[k].res = slots[k].bytes;
      FEEDRATE_ASSIGN_OR_RETURN(const char* view, DeviceView(g.cuda, dev.ptr() + k * s.c.bs, check));
      FEEDRATE_RETURN_IF_ERROR(CompleteRead(s, t, g, pending[k], view));
    }
  }
  return Status::Ok();
}

// One thread: the device's context made current, its own descriptor and device memory, the mode's stream.
Status GpuStream(Shared& s, const GpuCell& g, Offsets& off, ThreadStats& t) {
  const IoBenchOptions& o = s.o;
  FEEDRATE_ASSIGN_OR_RETURN(auto ctx, gpu::DeviceContext::Retain(g.cuda, o.gpu));
  FEEDRATE_RETURN_IF_ERROR(ctx.MakeCurrent());
  const bool direct = o.xfer != XferMode::kCpuCachedGpu;
  const int fd = ::open(o.path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (fd < 0) return Status::Errno("cannot open " + o.path + (direct ? " with O_DIRECT" : ""), errno);
  UniqueFd owned(fd);
  FEEDRATE_ASSIGN_OR_RETURN(auto dev, gpu::DeviceBuffer::Allocate(g.cuda, static_cast<size_t>(s.c.bs) * s.c.qd));
  std::vector<char> check(o.verify ? s.c.bs : 0);
  switch (o.xfer) {
    case XferMode::kGpuDirect: return DirectStream(s, g, fd, dev, off, t, check);
    case XferMode::kGpuBatch: return BatchStream(s, g, fd, dev, off, t, check);
    case XferMode::kGpuDirectAsync: return AsyncDirectStream(s, g, fd, dev, off, t, check);
    case XferMode::kCpuAsyncGpu: return AsyncCopyStream(s, g, fd, dev, off, t, check);
    default: return CopyStream(s, g, fd, dev, off, t, check);
  }
}

// What the cell's result says served it: the path, and for cuFile what its driver reports (GPUDirect through
// nvidia-fs, or compat mode).
std::string Describe(XferMode m, int device, const gpu::Cuda& cuda, const gpu::CuFile* cufile) {
  const std::string gpu = ", GPU " + std::to_string(device) + " " + cuda.DeviceName(device) + " via " + cuda.library();
  const std::string cf = cufile != nullptr ? cufile->library() + "; " + cufile->driver_info().Describe() : "";
  switch (m) {
    case XferMode::kCpuGpu: return "cpu_gpu (O_DIRECT pread to pinned memory, cuMemcpyHtoD" + gpu + ")";
    case XferMode::kCpuAsyncGpu: return "cpu_async_gpu (O_DIRECT pread to pinned memory, async copies" + gpu + ")";
    case XferMode::kCpuCachedGpu: return "cpu_cached_gpu (buffered pread to pinned memory, cuMemcpyHtoD" + gpu + ")";
    case XferMode::kGpuDirect: return "gpud (cuFileRead, " + cf + gpu + ")";
    case XferMode::kGpuBatch: return "gpu_batch (cuFile batch API, " + cf + gpu + ")";
    case XferMode::kGpuDirectAsync: return "gpud_async (cuFileReadAsync on a registered stream, " + cf + gpu + ")";
    default: return XferName(m);
  }
}

}  // namespace

Result<IoBenchResult> RunGpuXferCell(const IoBenchOptions& o, const IoBenchCell& c) {
  const std::string mode = std::string("--xfer ") + XferName(o.xfer);
  if (c.rw != "read" && c.rw != "randread") {
    return Status::InvalidArgument(mode + " reads (--rw read or randread); gdsio's write modes are not built");
  }
  if (o.xfer != XferMode::kCpuCachedGpu && c.bs % 4096 != 0) {
    return Status::InvalidArgument(mode + " reads with O_DIRECT: the block size must be a multiple of 4096 (got " +
                                   std::to_string(c.bs) + ")");
  }
  const bool deep = o.xfer == XferMode::kCpuAsyncGpu || o.xfer == XferMode::kGpuBatch || o.xfer == XferMode::kGpuDirectAsync;
  if (c.qd > 1 && !deep) {
    return Status::InvalidArgument(mode + " runs one read at a time per thread: --qd " + std::to_string(c.qd) +
                                   " needs cpu_async_gpu, gpu_batch or gpud_async (or use --threads)");
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto cuda, gpu::Cuda::Load());
  std::unique_ptr<gpu::CuFile> cufile;
  if (o.xfer == XferMode::kGpuDirect || o.xfer == XferMode::kGpuBatch || o.xfer == XferMode::kGpuDirectAsync) {
    FEEDRATE_ASSIGN_OR_RETURN(cufile, gpu::CuFile::Open(*cuda));
  }
  const GpuCell g{*cuda, cufile.get()};
  FEEDRATE_ASSIGN_OR_RETURN(IoBenchResult r, RunCellThreads(o, c, XferName(o.xfer),
                                                            [&](Shared& s, uint32_t, Offsets& off, ThreadStats& t,
                                                                std::mt19937_64&) { return GpuStream(s, g, off, t); }));
  r.detail = Describe(o.xfer, o.gpu, *cuda, cufile.get());
  return r;
}

}  // namespace iobench
}  // namespace feedrate
