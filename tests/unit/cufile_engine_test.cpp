// The cuFile engine (run --gds) against the test doubles: every sample's O_DIRECT window lands, byte for byte, in
// registered device memory at the offset the prefetcher gave it, under each file-open mode; handles are registered
// on O_DIRECT descriptors only and all given back; a bad destination or a truncated file is an error naming the file.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "completions.h"
#include "gpu_double_util.h"
#include "loader/gpu/cufile_engine.h"
#include "loader/io/direct_io.h"
#include "test_util.h"

namespace feedrate::gpu {
namespace {

struct Dataset {
  std::vector<std::string> paths;
  std::vector<std::string> content;
};
Dataset WriteFiles(const test::TempDir& dir) {
  Dataset d;
  std::mt19937_64 rng(7);
  for (int f = 0; f < 2; ++f) {
    std::string c(1048576 + 4321 * (f + 1), '\0');
    for (auto& ch : c) ch = static_cast<char>(rng());
    d.paths.push_back(dir / ("f" + std::to_string(f) + ".bin"));
    test::WriteFile(d.paths.back(), c);
    d.content.push_back(std::move(c));
  }
  return d;
}

class CuFileEngineModes : public ::testing::TestWithParam<FileOpenMode> {};

TEST_P(CuFileEngineModes, EachWindowLandsInRegisteredDeviceMemory) {
  ScopedEnv lib("FEEDRATE_LIBCUDA", FEEDRATE_FAKE_CUDA);
  ScopedEnv cufile_lib("FEEDRATE_LIBCUFILE", FEEDRATE_FAKE_CUFILE);
  Pinned pin(FEEDRATE_FAKE_CUFILE);
  ASSERT_TRUE(pin.ok());
  test::TempDir dir;
  const Dataset d = WriteFiles(dir);
  auto align = DirectIoAlignment(d.paths[0]);
  ASSERT_TRUE(align.ok()) << align.status().ToString();
  constexpr size_t kReads = 40;
  constexpr uint64_t kMaxLen = 200000;
  const uint64_t stride = AlignUp(kMaxLen + 2 * *align, *align);
  std::mt19937_64 rng(11);
  std::vector<SampleExtent> extents;
  for (size_t i = 0; i < kReads; ++i) {
    const uint32_t f = static_cast<uint32_t>(rng() % 2);
    const uint64_t len = 1 + rng() % kMaxLen;
    extents.push_back({f, rng() % (d.content[f].size() - len), len});
  }
  const CuFileCounts before = FakeCuFileCounts();
  const CuFileReads reads_before = FakeCuFileReads();
  uint64_t engine_reads_bytes = 0;
  {
    auto cuda = Cuda::Load();
    ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
    auto ctx = DeviceContext::Retain(**cuda, 0);
    ASSERT_TRUE(ctx.ok() && ctx->MakeCurrent().ok());
    auto cufile = CuFile::Open(**cuda);
    ASSERT_TRUE(cufile.ok()) << cufile.status().ToString();
    EXPECT_TRUE((*cufile)->driver_info().gpudirect());
    EXPECT_EQ((*cufile)->driver_info().Describe(), "GPUDirect (nvidia-fs 2.17; serves: NFS, NVMe; compat mode allowed for the rest)");
    auto dev = DeviceBuffer::Allocate(**cuda, kReads * stride);
    ASSERT_TRUE(dev.ok());
    auto reg = CuFileBuffer::Register(**cufile, dev->address(), dev->size());
    ASSERT_TRUE(reg.ok());
    auto files = FileTable::Create(d.paths, GetParam(), O_DIRECT);
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    EngineOptions o;
    o.threads = 2;
    o.transfer_size = 65536;  // several cuFileRead calls per sample
    o.odirect = true;
    o.direct_align = *align;
    char* base = static_cast<char*>(dev->address());
    auto engine = CuFileEngine::Create(**cufile, *files, o, {{base, dev->size(), &*ctx}});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    test::Collector done(kReads);
    std::vector<ReadRequest> requests(kReads);
    for (size_t i = 0; i < kReads; ++i) requests[i] = {extents[i], base + i * stride, &done, i};
    (*engine)->Submit(requests);
    done.Wait();
    engine_reads_bytes = (*engine)->counters().device_bytes;
    engine->reset();
    std::vector<char> back(dev->size());
    ASSERT_EQ((*cuda)->fn().MemcpyDtoH(back.data(), dev->ptr(), back.size()), kCudaSuccess);
    for (size_t i = 0; i < kReads; ++i) {
      ASSERT_TRUE(done.status_[i].ok()) << done.status_[i].ToString();
      EXPECT_EQ(done.bytes_[i], extents[i].length);
      EXPECT_FALSE(done.had_data_[i]);  // device memory: nothing for the host to look at
      const uint64_t lead = extents[i].offset % *align;
      EXPECT_EQ(std::memcmp(back.data() + i * stride + lead, d.content[extents[i].file].data() + extents[i].offset,
                            extents[i].length), 0) << "read " << i;
    }
  }
  const CuFileCounts after = FakeCuFileCounts();
  const CuFileReads reads = FakeCuFileReads();
  EXPECT_EQ(after.handles, before.handles);
  EXPECT_EQ(after.buffers, before.buffers);
  EXPECT_EQ(after.driver_opens, before.driver_opens);
  EXPECT_EQ(after.bytes - before.bytes, engine_reads_bytes);
  EXPECT_GE(reads.registered - reads_before.registered, kReads);
  EXPECT_EQ(reads.unregistered, reads_before.unregistered);
  EXPECT_EQ(reads.buffered_handles, reads_before.buffered_handles);
  const unsigned long long registrations = reads.registrations - reads_before.registrations;
  switch (GetParam()) {
    case FileOpenMode::kOnce: EXPECT_EQ(registrations, 2u); break;           // one per file, up front
    case FileOpenMode::kPerSample: EXPECT_EQ(registrations, kReads); break;  // one per open
    case FileOpenMode::kStream: EXPECT_LE(registrations, kReads); break;     // one per file visit
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CuFileEngineModes,
                         ::testing::Values(FileOpenMode::kPerSample, FileOpenMode::kStream, FileOpenMode::kOnce));

TEST(CuFileEngine, BadDestinationsTruncatedFilesAndBufferedFilesAreErrorsNamingTheFile) {
  ScopedEnv lib("FEEDRATE_LIBCUDA", FEEDRATE_FAKE_CUDA);
  ScopedEnv cufile_lib("FEEDRATE_LIBCUFILE", FEEDRATE_FAKE_CUFILE);
  test::TempDir dir;
  const Dataset d = WriteFiles(dir);
  auto cuda = Cuda::Load();
  ASSERT_TRUE(cuda.ok());
  auto ctx = DeviceContext::Retain(**cuda, 0);
  ASSERT_TRUE(ctx.ok() && ctx->MakeCurrent().ok());
  auto cufile = CuFile::Open(**cuda);
  ASSERT_TRUE(cufile.ok());
  auto buffered = FileTable::Create(d.paths, FileOpenMode::kPerSample, 0);
  ASSERT_TRUE(buffered.ok());
  EngineOptions o;
  o.odirect = true;
  auto refused = CuFileEngine::Create(**cufile, *buffered, o, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("O_DIRECT"), std::string::npos);

  auto dev = DeviceBuffer::Allocate(**cuda, 1 << 20);
  ASSERT_TRUE(dev.ok());
  auto files = FileTable::Create(d.paths, FileOpenMode::kPerSample, O_DIRECT);
  ASSERT_TRUE(files.ok());
  char* base = static_cast<char*>(dev->address());
  auto engine = CuFileEngine::Create(**cufile, *files, o, {{base, 1 << 19, &*ctx}});
  ASSERT_TRUE(engine.ok());
  test::Collector done(3);
  const uint64_t size = d.content[1].size();
  std::vector<ReadRequest> requests = {
      {{0, 100, 5000}, base + (1 << 19), &done, 0},      // past the registered region
      {{1, size - 1000, 5000}, base, &done, 1},         // runs past the end of the file
      {{0, 4096, 8192}, base + 4096, &done, 2}};        // fine
  (*engine)->Submit(requests);
  done.Wait();
  EXPECT_NE(done.status_[0].message().find(d.paths[0] + ": a cuFile read's destination is not in registered device memory"),
            std::string::npos) << done.status_[0].ToString();
  EXPECT_NE(done.status_[1].message().find(d.paths[1] + ": file is truncated"), std::string::npos)
      << done.status_[1].ToString();
  EXPECT_TRUE(done.status_[2].ok()) << done.status_[2].ToString();
}

}  // namespace
}  // namespace feedrate::gpu
