// Page-cache residency (mincore), eviction (fadvise) and the live read statistics.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "emulator/sysinfo.h"
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
