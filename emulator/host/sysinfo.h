// Facts about the client host and this process: hostname, CPUs, memory, CPU affinity, CPU time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace feedrate {

struct HostInfo {
  std::string hostname;
  unsigned cpu_count = 0;         // online CPUs
  std::string processor_name;     // /proc/cpuinfo "model name"
  uint64_t mem_total_bytes = 0;
  uint64_t mem_available_bytes = 0;
  uint64_t cgroup_limit_bytes = 0;  // this process's cgroup memory limit (CgroupMemory), 0 when none
  uint64_t cgroup_usage_bytes = 0;  // and what the cgroup uses now, its page cache not counted
  // What this process may still take: MemAvailable, or less where its cgroup's limit leaves less (a container).
  uint64_t usable_available_bytes() const;
};
HostInfo ReadHostInfo();
// The memory a page cache can grow into: the host's, or its cgroup's limit when lower (0: no limit).
uint64_t CacheableMemory(uint64_t mem_total_bytes, uint64_t cgroup_limit_bytes);

// The memory limit of this process's cgroup: the lowest of its cgroup and the cgroups above it (v2 memory.max,
// v1 memory.limit_in_bytes), 0 when none, and that cgroup's usage less its page cache (memory.current less
// memory.stat's file; v1 memory.usage_in_bytes less total_cache: reclaimable, as MemAvailable counts). `proc_cgroup`
// and `root` are /proc/self/cgroup and the cgroup mount (tests pass a tree of their own). v2 is read where the
// memory controller is on it (root, or root/unified on hybrid hosts), else v1's memory hierarchy.
struct CgroupMemory {
  uint64_t limit_bytes = 0;
  uint64_t usage_bytes = 0;
  std::string path;  // the cgroup's file system path whose limit is the lowest ("" when none)
};
CgroupMemory ReadCgroupMemory(const std::string& proc_cgroup = "/proc/self/cgroup",
                              const std::string& root = "/sys/fs/cgroup");

// CPUs this process may run on (sched_getaffinity), e.g. {0, 1}.
std::vector<int> CpuAffinity();
// "0-3,8" style list.
std::string CpuListString(const std::vector<int>& cpus);

// User + system CPU seconds used by this process so far.
double ProcessCpuSeconds();
// Seconds since this process started (/proc/self/stat's start time against CLOCK_BOOTTIME; 10 ms resolution),
// so set-up time counts the loader, MPI_Init and everything before main's first line; -1 when unreadable.
double ProcessAgeSeconds();
// This process's peak resident set (getrusage ru_maxrss), MiB.
double PeakRssMib();

// uname's release, e.g. "6.1.0-18-amd64".
std::string KernelRelease();
// The file system type under `path` by statfs magic ("ext4", "xfs", "tmpfs", "nfs", "lustre", ...), or
// "unknown (0x...)"; "" when the path cannot be examined.
std::string FileSystemType(const std::string& path);
// Whether a FileSystemType name is memory by nature (tmpfs, ramfs): its files' bytes are always served from memory,
// so a buffered read is a copy that never waits, and no share of them is "the page cache's".
bool IsMemoryFileSystem(const std::string& fs_type);

}  // namespace feedrate
