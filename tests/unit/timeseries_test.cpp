// The time-series recorder and merge, and the --cache schedule and its drop check.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "emulator/host/cache_control.h"
#include "emulator/host/sysinfo.h"
#include "emulator/training/compute_clock.h"
#include "emulator/training/timeseries.h"
#include "test_util.h"

namespace feedrate {
namespace {

std::vector<std::vector<std::string>> CsvRows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
    rows.push_back(f);
  }
  return rows;
}

TEST(TimeSeries, OneRowPerIntervalWithTheIntervalsReads) {
  IoStats io(2);
  AcceleratorLive live[2];
  TimeSeriesRecorder rec(io, live, 2, 0.1);
  rec.Start();
  // One accelerator waits the whole time (a stall in progress counts as it happens); reads arrive steadily.
  live[0].wait_start_ns.store(NowNs());
  const int64_t end = NowNs() + 450'000'000;
  while (NowNs() < end) {
    io.Record(0, 1 << 20, 100'000);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  rec.Stop();
  const auto& rows = rec.rows();
  // Invariants, not timings: at least the last (partial) row; never more rows than whole intervals the rows span
  // (plus that last one), however late the recorder's thread woke on a loaded machine.
  ASSERT_GE(rows.size(), 1u);
  double spanned = 0;
  for (const auto& row : rows) spanned += row.seconds;
  EXPECT_NEAR(spanned, rows.back().time_s, 1e-6);  // the rows tile the recording from its start
  EXPECT_LE(static_cast<double>(rows.size()), spanned / 0.1 + 1.5);
  double mib = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_GT(rows[i].time_s, i > 0 ? rows[i - 1].time_s : 0.0);
    mib += rows[i].read_mib_per_s * rows[i].seconds;
    if (rows[i].seconds > 0.05) {
      EXPECT_NEAR(rows[i].stall_pct, 50, 10) << i;  // one of two accelerators stalled
      EXPECT_NEAR(rows[i].lat_p50_us, 100, 7);
    }
    EXPECT_GT(rows[i].rss_mib, 0);
  }
  EXPECT_NEAR(mib, static_cast<double>(io.Take().reads), 1.0);  // every MiB recorded lands in some interval
}

TEST(TimeSeries, MergeAddsTotalsPerInterval) {
  std::vector<TimeSeriesRow> a(2), b(2);
  for (int i = 0; i < 2; ++i) {
    a[i].time_s = b[i].time_s = i + 1;
    a[i].seconds = b[i].seconds = 1;
    a[i].read_mib_per_s = 100;
    b[i].read_mib_per_s = 50;
    a[i].lat_p99_us = 10;
    b[i].lat_p99_us = 30;
    a[i].stall_s = 0.5;
    b[i].stall_s = 0.5;
  }
  const std::string csv = MergeTimeSeries({TimeSeriesRows(0, "h1", a), TimeSeriesRows(1, "h2", b)}, 4, 1.0);
  auto rows = CsvRows(csv);
  ASSERT_EQ(rows.size(), 1u + 4u + 2u);
  EXPECT_EQ(rows[0][0], "rank");
  EXPECT_EQ(rows[0].size(), 16u);
  EXPECT_EQ(rows[1][1], "h1");
  EXPECT_EQ(rows[3][0], "1");
  EXPECT_EQ(rows[5][0], "all");
  EXPECT_DOUBLE_EQ(std::stod(rows[5][4]), 150);  // MiB/s summed
  EXPECT_DOUBLE_EQ(std::stod(rows[5][8]), 30);   // p99: the highest rank's
  EXPECT_DOUBLE_EQ(std::stod(rows[5][11]), 25);  // 1 accelerator-second of 4 stalled
}

// Each rank's last interval ends when that rank stops (and a late wake-up stretches one): the merged row holds the
// ranks' bytes over its own length, so the merged rows add up to what the ranks read (CI once saw 2.3% too many).
TEST(TimeSeries, MergeOfUnequalIntervalsKeepsTheBytes) {
  std::vector<TimeSeriesRow> a(2), b(2);
  a[0].seconds = b[0].seconds = 0.25;
  a[0].read_mib_per_s = b[0].read_mib_per_s = 40;
  a[1].seconds = 0.05;
  a[1].read_mib_per_s = 100;  // 5 MiB
  b[1].seconds = 0.2;
  b[1].read_mib_per_s = 10;  // 2 MiB
  a[1].read_iops = 200;      // 10 reads
  b[1].read_iops = 20;       // 4 reads
  a[1].cpu_user_pct = 100;   // 0.05 CPU s
  b[1].cpu_user_pct = 50;    // 0.1 CPU s
  auto rows = CsvRows(MergeTimeSeries({TimeSeriesRows(0, "h1", a), TimeSeriesRows(1, "h2", b)}, 2, 0.25));
  ASSERT_EQ(rows.size(), 1u + 4u + 2u);
  ASSERT_EQ(rows[6][0], "all");
  EXPECT_DOUBLE_EQ(std::stod(rows[6][3]), 0.2);  // the longer rank's interval
  EXPECT_NEAR(std::stod(rows[6][4]) * 0.2, 7.0, 1e-3);
  EXPECT_NEAR(std::stod(rows[6][5]) * 0.2, 14.0, 0.05);
  EXPECT_NEAR(std::stod(rows[6][12]) * 0.2, 15.0, 0.05);  // CPU %-seconds: 100 x 0.05 + 50 x 0.2
  double merged = 0, ranks = 0;
  for (size_t i = 1; i < rows.size(); ++i) (rows[i][0] == "all" ? merged : ranks) += std::stod(rows[i][4]) * std::stod(rows[i][3]);
  EXPECT_NEAR(merged, ranks, 1e-3);
}

TEST(CacheControl, ModesAndSchedule) {
  EXPECT_EQ(CacheModeName(*ParseCacheMode("drop-once")), std::string("drop-once"));
  EXPECT_FALSE(ParseCacheMode("flush").ok());
  CacheControl keep(CacheMode::kKeep, {}, 0, false, true), drop(CacheMode::kDrop, {}, 0, false, true),
      once(CacheMode::kDropOnce, {}, 0, false, true);
  EXPECT_FALSE(keep.DropsBefore(1));
  EXPECT_TRUE(drop.DropsBefore(1));
  EXPECT_TRUE(drop.DropsBefore(5));
  EXPECT_TRUE(once.DropsBefore(1));
  EXPECT_FALSE(once.DropsBefore(2));
}

TEST(CacheControl, DropEmptiesTheCacheOnADisk) {
  test::TempDir dir("/var/tmp");
  const std::string fs = FileSystemType(dir.path());
  if (fs == "tmpfs" || fs == "ramfs") GTEST_SKIP() << "/var/tmp is " << fs;
  std::vector<std::string> files;
  for (int i = 0; i < 4; ++i) {
    files.push_back(dir / ("f" + std::to_string(i)));
    test::WriteFile(files.back(), std::string(1 << 20, 'c'));  // dirty, resident
  }
  CacheControl c(CacheMode::kDrop, files, files.size(), false, true);
  ASSERT_TRUE(c.BeforeEpoch(1).ok());
  ASSERT_TRUE(c.BeforeEpoch(2).ok());
  auto j = c.ToJson();
  EXPECT_EQ(j["drops"], 2);
  EXPECT_EQ(j["checked_bytes"], 4u << 20);
  EXPECT_EQ(j["resident_before"], 4u << 20);
  EXPECT_EQ(j["resident_after"], 0u);
  EXPECT_TRUE(c.warnings().empty());
}

TEST(CacheControl, DropOnTmpfsWarnsThatNothingLeft) {
  test::TempDir dir("/dev/shm");
  if (FileSystemType(dir.path()) != "tmpfs") GTEST_SKIP() << "/dev/shm is not tmpfs";
  test::WriteFile(dir / "f", std::string(1 << 20, 't'));
  CacheControl c(CacheMode::kDropOnce, {dir / "f"}, 1, false, true);
  ASSERT_TRUE(c.BeforeEpoch(1).ok());
  ASSERT_EQ(c.warnings().size(), 1u);
  EXPECT_NE(c.warnings()[0].find("100% of the sampled files stayed resident"), std::string::npos);
  // A file that vanished is an error naming it.
  CacheControl gone(CacheMode::kDrop, {dir / "missing"}, 1, false, true);
  Status st = gone.BeforeEpoch(1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(dir / "missing"), std::string::npos);
}

}  // namespace
}  // namespace feedrate
