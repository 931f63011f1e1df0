// loader/gpu against the test doubles of libcuda and libcufile (tests/gpu_double): the missing-library and
// missing-device errors a user sees, and the control flow a GPU host runs (contexts, memory, streams, cuFile
// registration, reads and batches) with every resource given back. Real hardware: scripts/gpu-check.sh.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loader/gpu/cuda_driver.h"
#include "loader/gpu/cufile.h"
#include "loader/gpu/spin_kernel.h"
#include "loader/util/clock.h"
#include "gpu_double_util.h"
#include "test_util.h"

namespace feedrate::gpu {
namespace {

TEST(Gpu, AMissingDriverLibraryIsOneLineNamingItAndItsOverride) {
  ScopedEnv env("FEEDRATE_LIBCUDA", "/nonexistent/libcuda.so.1");
  auto cuda = Cuda::Load();
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), Status::Code::kNotFound);
  const std::string m = cuda.status().message();
  EXPECT_NE(m.find("cannot load /nonexistent/libcuda.so.1"), std::string::npos) << m;
  EXPECT_NE(m.find("FEEDRATE_LIBCUDA"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(Gpu, ALibraryWithoutAnEntryPointNamesIt) {
  ScopedEnv env("FEEDRATE_LIBCUDA", FEEDRATE_FAKE_CUFILE);  // a real shared library, but not the CUDA driver
  auto cuda = Cuda::Load();
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), Status::Code::kUnsupported);
  EXPECT_NE(cuda.status().message().find("has no cuInit"), std::string::npos) << cuda.status().message();
}

TEST(Gpu, NoDeviceIsCudasOwnErrorName) {
  ScopedEnv lib("FEEDRATE_LIBCUDA", FEEDRATE_FAKE_CUDA);
  ScopedEnv devices("FEEDRATE_FAKE_CUDA_DEVICES", "0");
  auto cuda = Cuda::Load();
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().message(), "cuInit: CUDA_ERROR_NO_DEVICE (100)");
}

TEST(Gpu, MemoryStreamsAndContextsAreGivenBack) {
  ScopedEnv lib("FEEDRATE_LIBCUDA", FEEDRATE_FAKE_CUDA);
  ScopedEnv devices("FEEDRATE_FAKE_CUDA_DEVICES", "2");
  Pinned pin(FEEDRATE_FAKE_CUDA);
  ASSERT_TRUE(pin.ok()) << ::dlerror();
  auto cuda = Cuda::Load();
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  EXPECT_EQ((*cuda)->device_count(), 2);
  EXPECT_EQ((*cuda)->driver_version(), 12040);
  EXPECT_EQ((*cuda)->DeviceName(1), "Feedrate test double GPU");
  EXPECT_FALSE(DeviceContext::Retain(**cuda, 2).ok());
  const CudaCounts before = FakeCudaCounts();
  {
    auto ctx = DeviceContext::Retain(**cuda, 1);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    ASSERT_TRUE(ctx->MakeCurrent().ok());
    auto dev = DeviceBuffer::Allocate(**cuda, 1 << 20);
    auto host = PinnedBuffer::Allocate(**cuda, 1 << 20);
    auto stream = Stream::Create(**cuda);
    ASSERT_TRUE(dev.ok() && host.ok() && stream.ok());
    for (size_t i = 0; i < host->size(); ++i) host->data()[i] = static_cast<char>(i * 7);
    ASSERT_TRUE(stream->CopyToDevice(dev->ptr(), host->data(), host->size()).ok());
    ASSERT_TRUE(stream->Synchronize().ok());
    std::vector<char> back(host->size());
    ASSERT_EQ((*cuda)->fn().MemcpyDtoH(back.data(), dev->ptr(), back.size()), kCudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), host->data(), back.size()), 0);
    const CudaCounts during = FakeCudaCounts();
    EXPECT_EQ(during.device_allocs, before.device_allocs + 1);
    EXPECT_EQ(during.pinned_allocs, before.pinned_allocs + 1);
    EXPECT_EQ(during.streams, before.streams + 1);
    EXPECT_EQ(during.h2d_bytes, before.h2d_bytes + (1u << 20));
    DeviceBuffer moved = std::move(*dev);  // ownership moves; one free
    EXPECT_EQ(moved.size(), 1u << 20);
    EXPECT_EQ(dev->size(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from buffer owns nothing
    EXPECT_EQ(dev->ptr(), CUdeviceptr{0});
    PinnedBuffer pinned = std::move(*host);
    EXPECT_EQ(host->size(), 0u);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(host->data(), nullptr);
    EXPECT_EQ(pinned.size(), 1u << 20);
  }
  const CudaCounts after = FakeCudaCounts();
  EXPECT_EQ(after.device_allocs, before.device_allocs);
  EXPECT_EQ(after.pinned_allocs, before.pinned_allocs);
  EXPECT_EQ(after.streams, before.streams);
  EXPECT_EQ(after.contexts, before.contexts);
  // Without a current context the driver's error comes back named.
  std::thread([&] {
    auto orphan = DeviceBuffer::Allocate(**cuda, 4096);
    ASSERT_FALSE(orphan.ok());
    EXPECT_NE(orphan.status().message().find("CUDA_ERROR_INVALID_CONTEXT (201)"), std::string::npos);
  }).join();
}

TEST(Gpu, CuFileDriverFailureIsNamed) {
  ScopedEnv lib("FEEDRATE_LIBCUDA", FEEDRATE_FAKE_CUDA);
  ScopedEnv cufile_lib("FEEDRATE_LIBCUFILE", FEEDRATE_FAKE_CUFILE);
  ScopedEnv fail("FEEDRATE_FAKE_CUFILE_DRIVER", "fail");
  auto cuda = Cuda::Load();
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  auto f = CuFile::Open(**cuda);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(),
            "cuFileDriverOpen: CU_FILE_DRIVER_NOT_INITIALIZED (the nvidia-fs module is not loaded) (5001)");
  ScopedEnv missing("FEEDRATE_LIBCUFILE", "/nonexistent/libcufile.so.0");
  auto none = CuFile::Open(**cuda);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("FEEDRATE_LIBCUFILE"), std::string::npos);
}

TEST(Gpu, CuFileReadsAndBatchesLandTheFilesBytesInDeviceMemory) {
  ScopedEnv lib("FEEDRATE_LIBCUDA", FEEDRATE_FAKE_CUDA);
  ScopedEnv cufile_lib("FEEDRATE_LIBCUFILE", FEEDRATE_FAKE_CUFILE);
  test::TempDir dir;
  std::string content(300000, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 131) >> 3);
  const std::string path = dir / "data.bin";
  test::WriteFile(path, content);
  Pinned pin(FEEDRATE_FAKE_CUFILE);
  ASSERT_TRUE(pin.ok()) << ::dlerror();
  auto cuda = Cuda::Load();
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  const CuFileCounts before = FakeCuFileCounts();
  {
    auto ctx = DeviceContext::Retain(**cuda, 0);
    ASSERT_TRUE(ctx.ok() && ctx->MakeCurrent().ok());
    auto cufile = CuFile::Open(**cuda);
    ASSERT_TRUE(cufile.ok()) << cufile.status().ToString();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto fh = CuFileHandle::Register(**cufile, fd, path);
    auto dev = DeviceBuffer::Allocate(**cuda, content.size());
    ASSERT_TRUE(fh.ok() && dev.ok());
    auto reg = CuFileBuffer::Register(**cufile, dev->address(), dev->size());
    ASSERT_TRUE(reg.ok()) << reg.status().ToString();
    EXPECT_FALSE(CuFileBuffer::Register(**cufile, dev->address(), dev->size()).ok());  // already registered
    // One synchronous read, short at the end of the file.
    auto n = fh->Read(dev->address(), 100000, 250000, 0);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 50000u);
    std::vector<char> back(content.size());
    ASSERT_EQ((*cuda)->fn().MemcpyDtoH(back.data(), dev->ptr(), 50000), kCudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), content.data() + 250000, 50000), 0);
    // A batch of four reads that tile the file, each identified by its cookie.
    auto batch = CuFileBatch::SetUp(**cufile, 4);
    ASSERT_TRUE(batch.ok());
    std::vector<CUfileIOParams_t> params(4);
    for (unsigned k = 0; k < 4; ++k) {
      params[k].mode = kCuFileBatchMode;
      params[k].opcode = kCuFileRead;
      params[k].fh = fh->get();
      params[k].u.batch = {dev->address(), static_cast<off_t>(k * 75000), static_cast<off_t>(k * 75000), 75000};
      params[k].cookie = reinterpret_cast<void*>(uintptr_t{k + 1});
    }
    ASSERT_TRUE(batch->Submit(params.data(), 4).ok());
    std::vector<CUfileIOEvents_t> events(4);
    unsigned seen = 0, cookies = 0;
    while (seen < 4) {
      auto got = batch->Wait(1, events.data(), 4);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      for (unsigned i = 0; i < *got; ++i) {
        EXPECT_EQ(events[i].status, kCuFileStatusComplete);
        EXPECT_EQ(events[i].ret, 75000u);
        cookies += static_cast<unsigned>(reinterpret_cast<uintptr_t>(events[i].cookie));
      }
      seen += *got;
    }
    EXPECT_EQ(cookies, 1u + 2 + 3 + 4);
    ASSERT_EQ((*cuda)->fn().MemcpyDtoH(back.data(), dev->ptr(), back.size()), kCudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), content.data(), content.size()), 0);
    EXPECT_FALSE(batch->Submit(params.data(), 5).ok());  // more than the batch holds
    *fh = CuFileHandle();  // deregistered before its descriptor closes
    ::close(fd);
  }
  const CuFileCounts after = FakeCuFileCounts();
  EXPECT_EQ(after.driver_opens, before.driver_opens);
  EXPECT_EQ(after.handles, before.handles);
  EXPECT_EQ(after.buffers, before.buffers);
  EXPECT_EQ(after.batches, before.batches);
  EXPECT_EQ(after.bytes, before.bytes + 50000 + 300000);
}

// The PTX text embedded at build time is the committed file's, with the header the driver's JIT needs.
TEST(Gpu, TheSpinKernelShipsAsPtxTextForTheDriversJit) {
  const std::string ptx = kFeedrateSpinKernelPtx;
  EXPECT_NE(ptx.find(".version 7.0\n.target sm_60\n.address_size 64"), std::string::npos);
  EXPECT_NE(ptx.find(".visible .entry feedrate_spin("), std::string::npos);
  EXPECT_NE(ptx.find("%globaltimer"), std::string::npos);
  EXPECT_EQ(ptx, test::ReadFile(std::string(FEEDRATE_SOURCE_DIR) + "/loader/gpu/spin_kernel.ptx"));
}

TEST(Gpu, SpinKernelKeepsItsStreamBusyForTheAskedTimeAndStaysInsideItsMemory) {
  ScopedEnv lib("FEEDRATE_LIBCUDA", FEEDRATE_FAKE_CUDA);
  Pinned pin(FEEDRATE_FAKE_CUDA);
  ASSERT_TRUE(pin.ok());
  auto cuda = Cuda::Load();
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  const CudaCounts before = FakeCudaCounts();
  {
    auto ctx = DeviceContext::Retain(**cuda, 0);
    ASSERT_TRUE(ctx.ok());
    auto k = SpinKernel::Create(**cuda, *ctx, 1 << 20);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    EXPECT_EQ((*k)->grid(), 4u);  // one block of 256 per multiprocessor (the double has 4)
    EXPECT_EQ((*k)->block(), 256u);
    const int64_t t0 = NowNs();
    ASSERT_TRUE((*k)->Run(20'000'000).ok());
    const int64_t wall = NowNs() - t0;
    EXPECT_GE(wall, 20'000'000);  // Run returns once the kernel has finished
    ASSERT_TRUE((*k)->Run(0).ok());       // nothing left of the step's time: no launch
    const SpinStats st = (*k)->stats();
    EXPECT_EQ(st.launches, 1u);
    EXPECT_EQ(st.requested_ns, 20'000'000u);
    // The events bracket the kernel: at least the asked time, at most the call's own wall time (a host that is
    // slow between the launch and the second event adds to both, as on a real GPU; no bound depends on its speed).
    EXPECT_GE(st.kernel_ns, 19'999'000u);  // the events' elapsed time is a float in milliseconds
    EXPECT_LE(static_cast<int64_t>(st.kernel_ns), wall + 1000);
    // Fewer words than a full grid's threads: no thread starts past the end (the double refuses such a launch).
    auto small = SpinKernel::Create(**cuda, *ctx, 64);
    ASSERT_TRUE(small.ok()) << small.status().ToString();
    EXPECT_EQ(uint64_t{(*small)->grid()} * (*small)->block(), 8u);
    EXPECT_TRUE((*small)->Run(1'000'000).ok());
    auto tiny = SpinKernel::Create(**cuda, *ctx, 4);
    ASSERT_FALSE(tiny.ok());
    EXPECT_EQ(tiny.status().message(), "feedrate.compute_memory_bytes: at least 8 bytes");
  }
  const CudaCounts after = FakeCudaCounts();
  EXPECT_EQ(after.device_allocs, before.device_allocs);
  EXPECT_EQ(after.streams, before.streams);
  EXPECT_EQ(after.contexts, before.contexts);
}

}  // namespace
}  // namespace feedrate::gpu
