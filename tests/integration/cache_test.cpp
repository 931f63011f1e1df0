// What served the bytes: --cache drop/drop-once/keep/direct on a disk and on tmpfs, per-epoch resident fractions,
// device bytes against loader bytes, the run manifest, and timeseries.csv under MPI.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "emulator/host/sysinfo.h"
#include "harness.h"
#include "loader/io/page_cache.h"

namespace feedrate::it {
namespace {

const std::string kCacheShape = SmallDatasetParams(24, 1 << 20) + " --param reader.batch_size=2";

// A dataset on the local disk (/var/tmp), or "" when /var/tmp is not a disk file system here.
std::string DiskDataset(const test::TempDir& dir) {
  const std::string fs = FileSystemType(dir.path());
  if (fs == "tmpfs" || fs == "ramfs") return "";
  std::string data = dir / "unet3d";
  auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + " " + kCacheShape));
  EXPECT_EQ(gen.code, 0) << gen.output;
  return data;
}

nlohmann::json RunAndRead(const std::string& data, const std::string& results, const std::string& extra) {
  auto run = Sh(Feedrate("run -w unet3d_h100 --data-dir " + data + " " + kCacheShape +
                         " --param train.epochs=2 --param train.computation_time=0.001 -q --results-dir " + results + " " + extra));
  EXPECT_TRUE(run.code == 0 || run.code == 3) << run.output;
  return ReadJson(results + "/summary.json");
}

TEST(Cache, DropMakesEveryEpochColdAndTheDeviceDeliversTheBytes) {
  test::TempDir dir("/var/tmp");
  const std::string data = DiskDataset(dir);
  if (data.empty()) GTEST_SKIP() << "/var/tmp is not on a disk here";
  auto s = RunAndRead(data, dir / "r", "--cache drop");
  const auto& f = s["feedrate"];
  EXPECT_EQ(f["cache_mode"], "drop");
  EXPECT_EQ(f["cache"]["drops"], 2);
  EXPECT_TRUE(f["cache"]["check"]["effective"].get<bool>()) << f["cache"].dump();
  EXPECT_GT(f["cache"]["check"]["resident_before"].get<double>(), 0.5);  // just written
  ASSERT_EQ(f["epochs"].size(), 2u);
  for (const auto& e : f["epochs"]) {
    // One sample per file: readahead cannot bring a sample in before its own read.
    EXPECT_LT(e["resident_fraction"].get<double>(), 0.1) << e.dump();
    EXPECT_EQ(e["probed_bytes"], e["bytes_read"]);  // small epochs: every read probed
  }
  EXPECT_GT(f["cold_read_mib_per_s"].get<double>(), 0);
  EXPECT_GT(f["warm_read_mib_per_s"].get<double>(), 0);
  const auto& mount = f["host_facts"]["data_dir_mount"];
  EXPECT_FALSE(mount["fs_type"].get<std::string>().empty());
  EXPECT_NE(f["host_facts"]["command_line"].get<std::string>().find("--cache drop"), std::string::npos);
  if (f["devices"][0]["kind"] != "block") GTEST_SKIP() << "no device counter: " << f["devices"].dump();
  // Every byte came from the device (readahead may add a little; other processes' reads count too).
  const double loader = static_cast<double>(f["bytes_read"].get<uint64_t>());
  const double device = f["device_bytes_read"].get<double>();
  EXPECT_GE(device, 0.9 * loader);
  EXPECT_LE(device, 2.0 * loader + 16.0 * 1048576);
  EXPECT_NE(f["loader_vs_device"].get<std::string>().find("devices delivered"), std::string::npos);
}

TEST(Cache, DropOnceGivesAColdThenAWarmEpoch) {
  test::TempDir dir("/var/tmp");
  const std::string data = DiskDataset(dir);
  if (data.empty()) GTEST_SKIP() << "/var/tmp is not on a disk here";
  auto s = RunAndRead(data, dir / "r", "--cache drop-once");
  const auto& e = s["feedrate"]["epochs"];
  ASSERT_EQ(e.size(), 2u);
  EXPECT_LT(e[0]["resident_fraction"].get<double>(), 0.1);
  EXPECT_GT(e[1]["resident_fraction"].get<double>(), 0.9);  // a small dataset stays cached after epoch 1
  EXPECT_EQ(s["feedrate"]["cache"]["drops"], 1);
  // per_epoch.csv carries the same columns.
  std::istringstream csv(test::ReadFile(dir / "r/per_epoch.csv"));
  std::string header;
  std::getline(csv, header);
  EXPECT_NE(header.find("resident_fraction,device_bytes_read"), std::string::npos);
}

TEST(Cache, KeepOnTmpfsIsResidentAndDropWarns) {
  test::TempDir dir("/dev/shm");
  if (FileSystemType(dir.path()) != "tmpfs") GTEST_SKIP() << "/dev/shm is not tmpfs";
  const std::string data = dir / "unet3d";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + " " + kCacheShape)).code, 0);
  auto s = RunAndRead(data, dir / "r", "--cache drop");
  const auto& f = s["feedrate"];
  EXPECT_TRUE(f["device_bytes_read"].is_null());
  EXPECT_EQ(f["devices"][0]["kind"], "none");
  EXPECT_FALSE(f["cache"]["check"]["effective"].get<bool>());
  for (const auto& e : f["epochs"]) {
    EXPECT_DOUBLE_EQ(e["resident_fraction"].get<double>(), 1.0);
    EXPECT_TRUE(e["device_bytes_read"].is_null());
  }
  bool warned = false;
  for (const auto& w : f["warnings"]) warned |= w.get<std::string>().find("did not empty the page cache") != std::string::npos;
  EXPECT_TRUE(warned) << f["warnings"].dump();
}

// Issue 22 item 5: sweep points start from the same (cold) page cache unless told otherwise. With --cache keep, what
// the user (half the files, read beforehand) and earlier points left cached serves the next point, and the verdict
// names those points with their shares instead of calling the answer the storage's.
TEST(Cache, SweepPointsStartColdAndPointsTheCacheServedAreNamed) {
  test::TempDir dir("/var/tmp");
  const std::string data = DiskDataset(dir);
  if (data.empty()) GTEST_SKIP() << "/var/tmp is not on a disk here";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(data + "/train")) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 24u);
  for (const auto& f : files) ASSERT_TRUE(EvictFromPageCache(f, true).ok()) << f;
  for (size_t i = 0; i < files.size() / 2; ++i) test::ReadFile(files[i]);  // a known share: half the bytes
  const std::string sweep = Feedrate("sweep -w unet3d_h100 --data-dir " + data + " " + kCacheShape +
                                     " --param train.epochs=1 --param train.computation_time=0.001 --param metric.au=0"
                                     " --max 2 --results-dir ");
  auto keep = Sh(sweep + (dir / "keep") + " --cache keep");
  ASSERT_EQ(keep.code, 0) << keep.output;
  EXPECT_NE(keep.output.find("kept between points"), std::string::npos) << keep.output;
  EXPECT_NE(keep.output.find("not a storage answer"), std::string::npos) << keep.output;
  auto k = ReadJson(dir / "keep/sweep.json");
  ASSERT_EQ(k["points"].size(), 2u);
  const double first = k["points"][0]["runs"][0]["cache_served"].get<double>();
  EXPECT_GT(first, 0.35);
  EXPECT_LT(first, 0.65);
  EXPECT_GT(k["points"][1]["runs"][0]["cache_served"].get<double>(), 0.9);  // point 1 read every file
  EXPECT_EQ(k["cache"]["storage_answer"], false);
  EXPECT_EQ(k["cache"]["cache_served_points"].size(), 2u);
  EXPECT_EQ(k["validity"]["category"], "INVALID");

  // The default: the whole dataset is cached now, yet every point starts cold.
  auto cold = Sh(sweep + (dir / "cold"));
  ASSERT_EQ(cold.code, 0) << cold.output;
  EXPECT_NE(cold.output.find("every point starts cold (--cache drop-once)"), std::string::npos) << cold.output;
  auto c = ReadJson(dir / "cold/sweep.json");
  EXPECT_EQ(c["cache"]["mode"], "drop-once");
  EXPECT_EQ(c["cache"]["storage_answer"], true) << c["cache"];
  for (const auto& p : c["points"]) {
    EXPECT_LT(p["runs"][0]["cache_served"].get<double>(), 0.1) << p;
    auto s = ReadJson(p["runs"][0]["results_dir"].get<std::string>() + "/summary.json");
    EXPECT_EQ(s["feedrate"]["cache"]["drops"], 1);
  }
}

// tmpfs is memory by nature: the sweep says so once, leaves the cache alone and counts no share against the answer.
TEST(Cache, SweepOnTmpfsSaysSoOnceAndIsExempt) {
  test::TempDir dir("/dev/shm");
  if (FileSystemType(dir.path()) != "tmpfs") GTEST_SKIP() << "/dev/shm is not tmpfs";
  const std::string data = dir / "unet3d";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + " " + kCacheShape)).code, 0);
  auto sweep = Sh(Feedrate("sweep -w unet3d_h100 --data-dir " + data + " " + kCacheShape +
                           " --param train.epochs=1 --param train.computation_time=0.001 --param metric.au=0 --max 2"
                           " --results-dir " + (dir / "r")));
  ASSERT_EQ(sweep.code, 0) << sweep.output;
  const std::string said = "the dataset is on tmpfs";
  size_t times = 0;
  for (size_t at = sweep.output.find(said); at != std::string::npos; at = sweep.output.find(said, at + 1)) ++times;
  EXPECT_EQ(times, 2u) << sweep.output;  // before the first point, and in the verdict
  EXPECT_NE(sweep.output.find("cache: " + said), std::string::npos) << sweep.output;
  auto j = ReadJson(dir / "r/sweep.json");
  EXPECT_EQ(j["cache"]["storage_in_memory"], true);
  EXPECT_EQ(j["cache"]["storage_answer"], true);
  for (const auto& p : j["points"]) {
    EXPECT_GT(p["runs"][0]["cache_served"].get<double>(), 0.99);
    auto s = ReadJson(p["runs"][0]["results_dir"].get<std::string>() + "/summary.json");
    EXPECT_EQ(s["feedrate"]["cache_mode"], "keep");
    EXPECT_TRUE(s["feedrate"]["warnings"].dump().find("did not empty") == std::string::npos) << s["feedrate"]["warnings"];
  }
}

TEST(Cache, DirectAndItsConflicts) {
  test::TempDir dir("/var/tmp");
  const std::string data = DiskDataset(dir);
  if (data.empty()) GTEST_SKIP() << "/var/tmp is not on a disk here";
  auto s = RunAndRead(data, dir / "r", "--cache direct");
  EXPECT_EQ(s["feedrate"]["cache_mode"], "direct");
  EXPECT_TRUE(s["feedrate"]["odirect"].get<bool>());
  for (const auto& e : s["feedrate"]["epochs"]) EXPECT_EQ(e["resident_fraction"], 0.0);
  auto bad = Sh(Feedrate("run -w unet3d_h100 --data-dir " + data + " " + kCacheShape + " --odirect --cache drop -q --results-dir " +
                         dir / "bad"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("use --cache direct"), std::string::npos) << bad.output;
}

TEST(TimeSeriesCsv, OneRowPerIntervalPerRankUnderMpi) {
  test::TempDir dir;
  const std::string data = dir / "unet3d", results = dir / "r";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + " " + kCacheShape)).code, 0);
  auto run = Sh(MpiFeedrate(2, "run -w unet3d_h100 --data-dir " + data + " " + kCacheShape +
                                   " --param train.epochs=2 --param train.computation_time=0.1 --timeseries-interval 0.25"
                                   " -q --results-dir " + results));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto s = ReadJson(results + "/summary.json");
  EXPECT_EQ(s["feedrate"]["timeseries"]["file"], "timeseries.csv");
  const double wall = s["feedrate"]["wall_seconds"].get<double>();
  std::istringstream in(test::ReadFile(results + "/timeseries.csv"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("rank,host,time_s,interval_s,read_mib_per_s,read_iops,lat_p50_us", 0), 0u) << line;
  std::map<std::string, int> rows;
  std::map<std::string, double> mib;
  while (std::getline(in, line)) {
    std::stringstream ls(line);
    std::string rank, host, t, iv, m;
    std::getline(ls, rank, ',');
    std::getline(ls, host, ',');
    std::getline(ls, t, ',');
    std::getline(ls, iv, ',');
    std::getline(ls, m, ',');
    ++rows[rank];
    mib[rank] += std::stod(m) * std::stod(iv);
  }
  ASSERT_EQ(rows.size(), 3u);  // ranks 0 and 1, and the totals
  const int expect = static_cast<int>(wall / 0.25);
  for (const char* r : {"0", "1"}) {
    EXPECT_GE(rows[r], expect - 1) << r;
    EXPECT_LE(rows[r], expect + 3) << r;
  }
  EXPECT_EQ(rows["all"], std::max(rows["0"], rows["1"]));
  // The rows add up to the bytes read (the training reads and v3.0's pre-warm passes outside the window, in MiB).
  const double read_mib = static_cast<double>(s["feedrate"]["bytes_read"].get<uint64_t>() +
                                              s["feedrate"]["prewarm"]["bytes"].get<uint64_t>()) /
                          1048576.0;
  EXPECT_NEAR(mib["all"], read_mib, 0.02 * read_mib + 0.1);
}

}  // namespace
}  // namespace feedrate::it

namespace feedrate::it {
namespace {

// datagen --content verifiable, then run --verify: clean data passes; one flipped byte fails the run naming the
// file and its offset; no marker, or a format without a verifiable payload, is refused.
TEST(Verify, CatchesAFlippedByteNamingFileAndOffset) {
  for (const std::string format : {"npz", "tfrecord"}) {
    test::TempDir dir;
    const std::string data = dir / format;
    const std::string p = "--param dataset.format=" + format + " " + SmallDatasetParams(8, 200000) +
                          " --param dataset.num_samples_per_file=2 --param reader.batch_size=2"
                          " --param train.epochs=1 --param train.computation_time=0.001" +
                          // The record CRCs would catch the flip first; the content check must catch it alone.
                          (format == "tfrecord" ? " --param feedrate.verify_crc=false" : "");
    // `feedrate <command> -w unet3d_h100 --data-dir DATA P <extra>`
    auto with = [&](const char* command, const std::string& extra) {
      std::string cmd = command;
      cmd.append(" -w unet3d_h100 --data-dir ").append(data).append(" ").append(p).append(" ").append(extra);
      return Sh(Feedrate(cmd));
    };
    auto gen = with("datagen", "--content verifiable --content-seed 5");
    ASSERT_EQ(gen.code, 0) << gen.output;
    // A bare --verify (every byte) before a positional override leaves the override one (BareOptionalNumbers).
    auto ok = with("run", "-q --results-dir " + dir / "ok" + " --verify ++workload.train.computation_time=0.001");
    ASSERT_TRUE(ok.code == 0 || ok.code == 3) << ok.output;
    auto s = ReadJson(dir / "ok/summary.json");
    const uint64_t checked = s["feedrate"]["verify"]["bytes_checked"];
    EXPECT_GT(checked, s["feedrate"]["bytes_read"].get<uint64_t>() * 9 / 10) << format;  // all but the framing
    // Flip one byte in the middle of a training file.
    std::string victim;
    for (const auto& e : std::filesystem::directory_iterator(data + "/train")) {
      if (e.path().extension() == "." + format) victim = e.path().string();
    }
    ASSERT_FALSE(victim.empty());
    const uint64_t at = std::filesystem::file_size(victim) / 4;  // inside the first sample's payload
    auto flip = Sh("printf '\\377' | dd of=" + victim + " bs=1 seek=" + std::to_string(at) + " conv=notrunc 2>/dev/null");
    ASSERT_EQ(flip.code, 0);
    auto bad = with("run", "-q --verify 1 --results-dir " + dir / "bad");
    EXPECT_EQ(bad.code, 2) << bad.output;
    EXPECT_NE(bad.output.find(victim + ": content check failed at offset " + std::to_string(at)), std::string::npos)
        << format << ": " << bad.output;
    EXPECT_EQ(ReadJson(dir / "bad/summary.json")["feedrate"]["status"], "failed");
    // Without the marker, --verify refuses.
    std::filesystem::remove(data + "/.feedrate-content");
    auto none = with("run", "-q --verify 0.5 --results-dir " + dir / "none");
    EXPECT_EQ(none.code, 2);
    EXPECT_NE(none.output.find("--content verifiable"), std::string::npos) << none.output;
  }
  test::TempDir dir;
  auto h5 = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + dir / "h5" +
                        " --param dataset.format=hdf5 --param dataset.num_files_train=2 --content verifiable"));
  EXPECT_EQ(h5.code, 2);
  EXPECT_NE(h5.output.find("not available for 'hdf5'"), std::string::npos) << h5.output;
}

}  // namespace
}  // namespace feedrate::it
