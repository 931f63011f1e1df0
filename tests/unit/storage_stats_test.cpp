// Mount lookup, /proc/diskstats and NFS mountstats parsing, and a real O_DIRECT read seen by the device counter.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "emulator/host/storage_stats.h"
#include "emulator/host/sysinfo.h"
#include "loader/io/aligned_buffer.h"
#include "loader/io/unique_fd.h"
#include "test_util.h"

namespace feedrate {
namespace {

const char* kMountinfo =
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n"
    "30 22 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size=24G\n"
    "41 22 0:45 / /mnt/with\\040space rw,noatime - xfs /dev/nvme0n1p1 rw,attr2\n"
    "50 22 0:52 / /mnt/nfs rw,relatime shared:30 - nfs4 srv:/export rw,vers=4.2,rsize=1048576\n"
    "51 22 0:53 / /mnt/nfs rw,relatime shared:31 - nfs4 srv2:/other rw,vers=4.2\n"
    "60 22 0:60 / /data rw master:7 - fuse.sshfs user@host:/d rw,user_id=0\n";

TEST(StorageStats, FindsTheLongestContainingMount) {
  auto m = FindMount("/var/tmp/x", kMountinfo);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount_point, "/");
  EXPECT_EQ(m->fs_type, "ext4");
  EXPECT_EQ(m->source, "/dev/vda");
  EXPECT_EQ(m->options, "rw,relatime");
  EXPECT_EQ(m->super_options, "rw,discard");
  EXPECT_EQ(m->major, 254u);
  EXPECT_EQ(m->minor, 0u);
  EXPECT_EQ(FindMount("/dev/shm/unet3d/train", kMountinfo)->fs_type, "tmpfs");
  EXPECT_EQ(FindMount("/dev/shmx", kMountinfo)->mount_point, "/");  // a prefix is not a parent
  EXPECT_EQ(FindMount("/mnt/with space/a", kMountinfo)->source, "/dev/nvme0n1p1");  // \040 unescaped
  EXPECT_EQ(FindMount("/mnt/nfs/train", kMountinfo)->source, "srv2:/other");  // the mount on top
  EXPECT_EQ(FindMount("/data", kMountinfo)->fs_type, "fuse.sshfs");
  EXPECT_FALSE(FindMount("relative/path", kMountinfo));
}

TEST(StorageStats, ParsesDiskStats) {
  const char* text =
      "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
      " 259       0 nvme0n1 1200 30 204800 500 10 0 80 3 0 400 503 0 0 0 0 0 0\n"
      " 259       1 nvme0n1p1 1000 20 102400 400 10 0 80 3 0 300 403 0 0 0 0 0 0\n";
  auto d = ParseDiskStats(text, 259, 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->requests, 1000u);
  EXPECT_EQ(d->bytes, 102400u * 512);
  EXPECT_FALSE(ParseDiskStats(text, 8, 0));
}

TEST(StorageStats, ParsesNfsMountStats) {
  const char* text =
      "device tmpfs mounted on /dev/shm with fstype tmpfs\n"
      "device srv:/export mounted on /mnt/nfs with fstype nfs4 statvers=1.1\n"
      "\topts:\trw,vers=4.2,rsize=1048576\n"
      "\tbytes:\t9000 100 0 0 8388608 100 2048 1\n"
      "\tper-op statistics\n"
      "\t        NULL: 0 0 0 0 0 0 0 0\n"
      "\t        READ: 8 8 0 1152 8389632 0 40 41 0\n"
      "device srv:/other mounted on /mnt/other with fstype nfs statvers=1.1\n"
      "\tbytes:\t1 2 3 4 5 6 7 8\n";
  auto n = ParseNfsMountStats(text, "/mnt/nfs");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->bytes, 8388608u);  // serverreadbytes, not what the page cache served (9000)
  EXPECT_EQ(n->requests, 8u);
  EXPECT_EQ(ParseNfsMountStats(text, "/mnt/other")->bytes, 5u);
  EXPECT_FALSE(ParseNfsMountStats(text, "/dev/shm"));
}

TEST(StorageStats, ParsesNetDevReceivedBytesWithoutLoopback) {
  const char* text =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
      "    lo: 5000000     100    0    0    0     0          0         0  5000000     100    0    0    0     0       0          0\n"
      "  eth0: 1234567    2000    0    0    0     0          0         0    99999     300    0    0    0     0       0          0\n"
      "eth1:100 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n";
  EXPECT_EQ(ParseNetDevRxBytes(text), 1234567u + 100u);
  EXPECT_EQ(ParseNetDevRxBytes(""), 0u);
  // The live counter is /proc/net/dev's sum without loopback, and a counter: read between two calls, it lies between.
  const uint64_t before = NetworkRxBytes();
  std::ifstream in("/proc/net/dev");
  const std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint64_t parsed = ParseNetDevRxBytes(now.c_str());
  EXPECT_LE(before, parsed);
  EXPECT_LE(parsed, NetworkRxBytes());
}

TEST(StorageStats, TmpfsHasNoDeviceCounter) {
  auto c = StorageCounter::For("/dev/shm");
  if (!c.mount() || c.mount()->fs_type != "tmpfs") GTEST_SKIP() << "/dev/shm is not tmpfs here";
  EXPECT_EQ(c.kind(), "none");
  EXPECT_NE(c.device().find("tmpfs"), std::string::npos);
  EXPECT_FALSE(c.Read());
}

// The one rule for "memory by nature" that run setup (I/O threads) and sweep (cache state) share, on the names
// FileSystemType gives.
TEST(StorageStats, MemoryFileSystemsAreTmpfsAndRamfsOnly) {
  EXPECT_TRUE(IsMemoryFileSystem("tmpfs"));
  EXPECT_TRUE(IsMemoryFileSystem("ramfs"));
  for (const char* fs : {"ext2/3/4", "xfs", "nfs", "fuse", "", "unknown (0x1234)"}) {
    EXPECT_FALSE(IsMemoryFileSystem(fs)) << fs;
  }
  if (FileSystemType("/dev/shm") == "tmpfs") {
    EXPECT_TRUE(IsMemoryFileSystem(FileSystemType("/dev/shm")));
  }
}

// An O_DIRECT read of a file on the disk shows up in the device's counters: at least the file's bytes, and not
// much more (other processes may read from the same disk meanwhile).
TEST(StorageStats, DeviceCounterSeesAnODirectRead) {
  test::TempDir dir("/var/tmp");
  auto c = StorageCounter::For(dir.path());
  if (c.kind() != "block") GTEST_SKIP() << "no block-device counter for /var/tmp: " << c.device();
  const std::string path = dir / "direct.bin";
  const size_t size = 32u << 20;
  test::WriteFile(path, std::string(size, 'd'));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECT));
  if (!fd.valid()) GTEST_SKIP() << "O_DIRECT refused on /var/tmp";
  ::fdatasync(fd.get());  // the data must be on the device for the read to reach it
  AlignedBuffer buf(1 << 20, 4096);
  auto before = c.Read();
  ASSERT_TRUE(before);
  for (size_t off = 0; off < size; off += 1 << 20) {
    ASSERT_EQ(::pread(fd.get(), buf.data(), 1 << 20, static_cast<off_t>(off)), 1 << 20);
  }
  auto after = c.Read();
  ASSERT_TRUE(after);
  const uint64_t delta = after->bytes - before->bytes;
  EXPECT_GE(delta, size);
  EXPECT_LE(delta, size + size / 2 + (8u << 20));
  EXPECT_GE(after->requests - before->requests, 32u / 4);  // 1 MiB reads, maybe split by the device's limits
}

}  // namespace
}  // namespace feedrate

namespace feedrate {
namespace {

// A cgroup tree of the test's own: /proc/self/cgroup's lines and the files under the mount.
void Put(const test::TempDir& dir, const std::string& rel, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(dir / rel).parent_path());
  test::WriteFile(dir / rel, text);
}

// v2: the lowest limit on the way up wins ("max" is none); usage comes from the cgroup whose limit it is.
TEST(CgroupMemory, V2TakesTheLowestLimitUpTheTree) {
  test::TempDir dir;
  Put(dir, "proc", "0::/pods/job/rank\n");
  Put(dir, "fs/cgroup.controllers", "cpuset cpu io memory pids\n");
  Put(dir, "fs/pods/memory.max", "max\n");
  Put(dir, "fs/pods/job/memory.max", "8589934592\n");
  Put(dir, "fs/pods/job/memory.current", "3221225472\n");
  Put(dir, "fs/pods/job/memory.stat", "anon 1073741824\nfile 2147483648\nkernel 0\n");  // the cache is reclaimable
  Put(dir, "fs/pods/job/rank/memory.max", "max\n");
  const CgroupMemory m = ReadCgroupMemory(dir / "proc", dir / "fs");
  EXPECT_EQ(m.limit_bytes, 8589934592u);
  EXPECT_EQ(m.usage_bytes, 1073741824u);
  EXPECT_EQ(m.path, dir / "fs/pods/job");
  Put(dir, "fs/pods/job/memory.max", "max\n");
  EXPECT_EQ(ReadCgroupMemory(dir / "proc", dir / "fs").limit_bytes, 0u);  // no limit anywhere
}

// A hybrid host: v2 mounted at unified without the memory controller, v1's memory hierarchy holds the limit;
// v1's "no limit" (2^63 rounded to a page) is none.
TEST(CgroupMemory, V1OnAHybridHost) {
  test::TempDir dir;
  Put(dir, "proc", "9:memory:/process_api/abc\n0::/\n4:cpu,cpuacct:/\n");
  Put(dir, "fs/unified/cgroup.controllers", "\n");
  Put(dir, "fs/memory/memory.limit_in_bytes", "9223372036854771712\n");
  Put(dir, "fs/memory/process_api/abc/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(ReadCgroupMemory(dir / "proc", dir / "fs").limit_bytes, 0u);
  Put(dir, "fs/memory/process_api/abc/memory.limit_in_bytes", "4294967296\n");
  Put(dir, "fs/memory/process_api/abc/memory.usage_in_bytes", "4026531840\n");
  Put(dir, "fs/memory/process_api/abc/memory.stat", "cache 1\nrss 2\ntotal_cache 805306368\ntotal_rss 3221225472\n");
  const CgroupMemory m = ReadCgroupMemory(dir / "proc", dir / "fs");
  EXPECT_EQ(m.limit_bytes, 4294967296u);
  EXPECT_EQ(m.usage_bytes, 3221225472u);
  EXPECT_EQ(ReadCgroupMemory(dir / "none", dir / "fs").limit_bytes, 0u);  // no /proc/self/cgroup: none

  HostInfo h;
  h.mem_total_bytes = 16ull << 30;
  h.mem_available_bytes = 12ull << 30;
  EXPECT_EQ(h.usable_available_bytes(), 12ull << 30);
  EXPECT_EQ(CacheableMemory(h.mem_total_bytes, h.cgroup_limit_bytes), 16ull << 30);
  h.cgroup_limit_bytes = m.limit_bytes;
  h.cgroup_usage_bytes = m.usage_bytes;
  EXPECT_EQ(h.usable_available_bytes(), 1ull << 30);  // 4 GiB limit, 3 GiB used
  EXPECT_EQ(CacheableMemory(h.mem_total_bytes, h.cgroup_limit_bytes), 4ull << 30);
  h.cgroup_usage_bytes = 5ull << 30;  // (over its limit: reclaim pending)
  EXPECT_EQ(h.usable_available_bytes(), 0u);
}

}  // namespace
}  // namespace feedrate
