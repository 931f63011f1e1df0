// Page-cache residency (mincore), eviction (fadvise) and the live read statistics.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "emulator/host/sysinfo.h"
#include "loader/format/sample_index.h"
#include "loader/io/io_stats.h"
#include "loader/io/page_cache.h"
#include "loader/io/unique_fd.h"
#include "test_util.h"

namespace feedrate {
namespace {

// 8 MiB of data, written and flushed, in a directory on the disk.
std::string WriteDiskFile(const test::TempDir& dir) {
  const std::string path = dir / "data.bin";
  test::WriteFile(path, std::string(8 << 20, 'x'));
  return path;
}

TEST(PageCache, ResidencyAfterReadAndAfterEviction) {
  test::TempDir dir("/var/tmp");
  const std::string fs = FileSystemType(dir.path());
  if (fs == "tmpfs" || fs == "ramfs") GTEST_SKIP() << "/var/tmp is " << fs << ": nothing can be evicted there";
  const std::string path = WriteDiskFile(dir);
  // Dirty pages stay: the first eviction writes them back.
  ASSERT_TRUE(EvictFromPageCache(path, true).ok());
  auto cold = ProbeFileResidency(path);
  ASSERT_TRUE(cold.ok()) << cold.status().ToString();
  EXPECT_EQ(cold->bytes, 8u << 20);
  EXPECT_LT(cold->fraction(), 0.02);
  // Read the second MiB only: that range is resident, the rest of the file mostly not.
  auto fd = OpenForRead(path);
  ASSERT_TRUE(fd.ok());
  std::string buf(1 << 20, '\0');
  ASSERT_TRUE(PreadFull(fd->get(), buf.data(), buf.size(), 1 << 20, path).ok());
  auto range = ProbeResidency(path, 1 << 20, 1 << 20);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->resident_bytes, 1u << 20);
  auto first = ProbeResidency(path, 0, 1 << 20);
  ASSERT_TRUE(first.ok());
  EXPECT_LT(first->fraction(), 0.5);  // readahead starts at the read, not before it
  ASSERT_TRUE(EvictFromPageCache(path, false).ok());
  EXPECT_EQ(ProbeResidency(path, 1 << 20, 1 << 20)->resident_bytes, 0u);
}

// The probe behind the DLIO engine's choice for FUSE (run_engine.cpp CachedFuse): a disk file's reads fill the
// page cache, and the page its one read brought in is dropped again; an empty file says no.
TEST(PageCache, ReadsFillPageCacheProbesAndLeavesTheCacheAsItWas) {
  test::TempDir dir("/var/tmp");
  ASSERT_EQ(FileSystemType(dir.path()).find("tmpfs"), std::string::npos) << "/var/tmp must be on a disk";
  const std::string path = WriteDiskFile(dir);
  ASSERT_TRUE(EvictFromPageCache(path, true).ok());
  auto cached = ReadsFillPageCache(path);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  EXPECT_TRUE(*cached);
  EXPECT_EQ(ProbeResidency(path, 0, 4096)->resident_bytes, 0u);
  test::WriteFile(dir / "empty", "");
  EXPECT_FALSE(*ReadsFillPageCache(dir / "empty"));
  EXPECT_NE(ReadsFillPageCache(dir / "absent").status().ToString().find("absent"), std::string::npos);
}

// Set-up's index reads leave the page cache as they found them (DLIO reads nothing before training): a cold file
// is cold again once indexed, a cached one stays cached. indexed_binary: its .idx files and the data file's size.
TEST(PageCache, IndexingAFileLeavesItsPagesAsTheyWere) {
  test::TempDir dir("/var/tmp");
  const std::string fs = FileSystemType(dir.path());
  if (fs == "tmpfs" || fs == "ramfs") GTEST_SKIP() << "/var/tmp is " << fs << ": nothing can be evicted there";
  const std::string data = WriteDiskFile(dir);
  const int64_t off = 0, len = 8 << 20;
  test::WriteFile(data + ".off.idx", std::string(reinterpret_cast<const char*>(&off), 8));
  test::WriteFile(data + ".sz.idx", std::string(reinterpret_cast<const char*>(&len), 8));
  IndexOptions o;
  o.format = DataFormat::kIndexedBinary;
  for (const std::string& f : {data, data + ".off.idx", data + ".sz.idx"}) ASSERT_TRUE(EvictFromPageCache(f, true).ok());
  ListedExtents listed;
  ASSERT_TRUE(IndexTrainingFile(data, o, &listed, nullptr).ok());
  for (const std::string& f : {data, data + ".off.idx", data + ".sz.idx"}) {
    EXPECT_EQ(ProbeFileResidency(f)->resident_bytes, 0u) << f << ": indexing left pages cached";
  }
  // Cached before: left cached.
  auto fd = OpenForRead(data + ".off.idx");
  char b[8];
  ASSERT_TRUE(PreadFull(fd->get(), b, 8, 0, data).ok());
  ASSERT_TRUE(IndexTrainingFile(data, o, &listed, nullptr).ok());
  EXPECT_EQ(ProbeFileResidency(data + ".off.idx")->resident_bytes, 8u);
}

TEST(PageCache, UnalignedRangesCountTheirOwnBytes) {
  test::TempDir dir;
  const std::string path = dir / "small.bin";
  test::WriteFile(path, std::string(10000, 'y'));  // just written: resident wherever it lives
  auto r = ProbeResidency(path, 4000, 5000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, 5000u);
  EXPECT_EQ(r->resident_bytes, 5000u);
  EXPECT_DOUBLE_EQ(r->fraction(), 1.0);
  EXPECT_EQ(ProbeResidency(path, 0, 0)->bytes, 0u);
}

// The sampled probe against the full mincore lookup, on a file half of whose MiBs were evicted: cachestat is exact;
// the mincore window is exact for short ranges and, over many ranges, agrees with the full lookup on average.
TEST(PageCache, SampledProbesAgreeWithTheFullLookup) {
  test::TempDir dir("/var/tmp");
  const std::string fs = FileSystemType(dir.path());
  if (fs == "tmpfs" || fs == "ramfs") GTEST_SKIP() << "/var/tmp is " << fs << ": nothing can be evicted there";
  const std::string path = WriteDiskFile(dir);
  ASSERT_TRUE(EvictFromPageCache(path, true).ok());
  auto fd = OpenForRead(path);
  ASSERT_TRUE(fd.ok());
  std::string buf(8 << 20, '\0');
  ASSERT_TRUE(PreadFull(fd->get(), buf.data(), buf.size(), 0, path).ok());
  for (uint64_t mib = 1; mib < 8; mib += 2) {  // odd MiBs out: 50% resident
    ASSERT_EQ(::posix_fadvise(fd->get(), static_cast<off_t>(mib << 20), 1 << 20, POSIX_FADV_DONTNEED), 0);
  }
  ASSERT_EQ(ProbeResidency(fd->get(), 0, 8 << 20)->resident_bytes, 4u << 20);
  const bool have_cachestat = DefaultResidencyMethod() == ResidencyMethod::kCachestat;
  double full_sum = 0, window_sum = 0;
  for (uint64_t off = 0; off + (1 << 20) <= (8u << 20); off += 4096 * 7) {
    const uint64_t len = (1 << 20) + 1000;
    const uint64_t cut = std::min<uint64_t>(len, (8u << 20) - off);
    auto full = ProbeResidency(fd->get(), off, cut);
    auto window = SampleResidency(fd->get(), off, cut, ResidencyMethod::kMincoreWindow);
    ASSERT_TRUE(full.ok() && window.ok());
    EXPECT_EQ(window->bytes, cut);
    full_sum += full->fraction();
    window_sum += window->fraction();
    if (have_cachestat) {
      auto exact = SampleResidency(fd->get(), off, cut, ResidencyMethod::kCachestat);
      ASSERT_TRUE(exact.ok());
      EXPECT_NEAR(static_cast<double>(exact->resident_bytes), static_cast<double>(full->resident_bytes), 8192.0) << off;
    }
    auto small = SampleResidency(fd->get(), off + 100, 20000, ResidencyMethod::kMincoreWindow);
    EXPECT_EQ(small->resident_bytes, ProbeResidency(fd->get(), off + 100, 20000)->resident_bytes);
  }
  EXPECT_NEAR(window_sum, full_sum, 0.1 * full_sum);
}

TEST(PageCache, SampledProbesSeeAFileJustWritten) {
  test::TempDir dir;
  const std::string path = dir / "fresh.bin";
  test::WriteFile(path, std::string(3 << 20, 'z'));
  auto fd = OpenForRead(path);
  ASSERT_TRUE(fd.ok());
  for (ResidencyMethod m : {DefaultResidencyMethod(), ResidencyMethod::kMincoreWindow}) {
    auto r = SampleResidency(fd->get(), 12345, 2 << 20, m);
    ASSERT_TRUE(r.ok()) << ResidencyMethodName(m);
    EXPECT_EQ(r->bytes, 2u << 20);
    EXPECT_EQ(r->resident_bytes, 2u << 20) << ResidencyMethodName(m);
  }
  EXPECT_EQ(SampleResidency(fd->get(), 0, 0, ResidencyMethod::kCachestat)->bytes, 0u);
}

TEST(PageCache, ErrorsNameThePath) {
  auto r = ProbeFileResidency("/nonexistent/feedrate/file");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/feedrate/file"), std::string::npos);
  Status st = EvictFromPageCache("/nonexistent/feedrate/file", false);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent/feedrate/file"), std::string::npos);
}

TEST(IoStats, SnapshotsSumShardsAndDifferences) {
  IoStats stats(3);
  for (int i = 0; i < 100; ++i) stats.Record(static_cast<size_t>(i % 3), 1000, 1000 * (i + 1));  // 1..100 us
  IoSnapshot a = stats.Take();
  EXPECT_EQ(a.reads, 100u);
  EXPECT_EQ(a.bytes, 100000u);
  EXPECT_EQ(a.latency.total(), 100u);
  EXPECT_EQ(a.latency.max(), 100000u);
  EXPECT_NEAR(static_cast<double>(a.latency.Percentile(50)), 50000, 50000 * 0.07);
  for (int i = 0; i < 10; ++i) stats.Record(1, 4096, 5'000'000);  // 5 ms
  IoSnapshot d = stats.Take().Since(a);
  EXPECT_EQ(d.reads, 10u);
  EXPECT_EQ(d.bytes, 40960u);
  EXPECT_EQ(d.latency.total(), 10u);
  EXPECT_NEAR(static_cast<double>(d.latency.Percentile(50)), 5e6, 5e6 * 0.07);
  EXPECT_NEAR(static_cast<double>(d.latency.max()), 5e6, 5e6 * 0.07);
}

}  // namespace
}  // namespace feedrate
