// The run's page-cache choice (emulator/run/run_setup.h, ChooseCache): --cache when given; otherwise what the
// emulated DLIO does: v3.0's rank 0 drops its node's page cache before every epoch (so the ranks on rank 0's host
// drop) where there is a page cache to drop; upstream DLIO and v2.0 keep it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "emulator/host/sysinfo.h"
#include "emulator/run/run_setup.h"

namespace feedrate {
namespace {

// A folder on a file system with a page cache to drop: the working folder, /var/tmp or /.
std::string DiskFolder() {
  for (const std::string& p : {std::filesystem::current_path().string(), std::string("/var/tmp"), std::string("/")}) {
    if (!IsMemoryFileSystem(FileSystemType(p))) return p;
  }
  return "";
}

WorkloadConfig Config(DlioEdition rules, const std::string& folder) {
  WorkloadConfig cfg;
  cfg.rules = rules;
  cfg.data_folder = folder;
  return cfg;
}

TEST(RunSetup, V3DropsOnRankZerosHostWhereThereIsAPageCacheToDrop) {
  const std::string disk = DiskFolder();
  ASSERT_FALSE(disk.empty()) << "no folder here is on a file system with a page cache";
  const RunOptions opt;
  const CacheChoice v3 = ChooseCache(Config(DlioEdition::kV3_0, disk), opt);
  EXPECT_EQ(v3.mode, CacheMode::kDrop) << FileSystemType(disk);
  EXPECT_TRUE(v3.rank0_host_only);
  EXPECT_NE(v3.Describe().find("rank 0's host"), std::string::npos) << v3.Describe();
  // Nothing to drop: O_DIRECT reads, S3, memory-backed storage.
  WorkloadConfig direct = Config(DlioEdition::kV3_0, disk);
  direct.odirect = true;
  EXPECT_EQ(ChooseCache(direct, opt).mode, CacheMode::kKeep);
  WorkloadConfig s3 = Config(DlioEdition::kV3_0, "data");
  s3.storage_type = "s3";
  EXPECT_EQ(ChooseCache(s3, opt).mode, CacheMode::kKeep);
  if (IsMemoryFileSystem(FileSystemType("/dev/shm"))) {
    const CacheChoice shm = ChooseCache(Config(DlioEdition::kV3_0, "/dev/shm"), opt);
    EXPECT_EQ(shm.mode, CacheMode::kKeep);
    EXPECT_FALSE(shm.rank0_host_only);
  }
}

TEST(RunSetup, UpstreamAndV2KeepAndAGivenCacheModeIsTaken) {
  const std::string disk = DiskFolder();
  ASSERT_FALSE(disk.empty());
  RunOptions opt;
  EXPECT_EQ(ChooseCache(Config(DlioEdition::kUpstream, disk), opt).mode, CacheMode::kKeep);
  EXPECT_EQ(ChooseCache(Config(DlioEdition::kV2_0, disk), opt).mode, CacheMode::kKeep);
  opt.cache = CacheMode::kDropOnce;
  const CacheChoice given = ChooseCache(Config(DlioEdition::kV3_0, disk), opt);
  EXPECT_EQ(given.mode, CacheMode::kDropOnce);
  EXPECT_FALSE(given.rank0_host_only);  // every rank does what it was told
  opt.cache = CacheMode::kKeep;
  EXPECT_EQ(ChooseCache(Config(DlioEdition::kV3_0, disk), opt).mode, CacheMode::kKeep);
}

}  // namespace
}  // namespace feedrate
