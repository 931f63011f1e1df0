// Host and process facts from /proc, sched_getaffinity, getrusage, uname and statfs.
#include "emulator/host/sysinfo.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace feedrate {

HostInfo ReadHostInfo() {
  HostInfo h;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cpu_count = n > 0 ? static_cast<unsigned>(n) : 1;
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) h.processor_name = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  std::ifstream mem("/proc/meminfo");
  for (std::string key; mem >> key;) {
    uint64_t kb = 0;
    std::string unit;
    mem >> kb >> unit;
    if (key == "MemTotal:") h.mem_total_bytes = kb * 1024;
    if (key == "MemAvailable:") h.mem_available_bytes = kb * 1024;
  }
  const CgroupMemory cg = ReadCgroupMemory();
  h.cgroup_limit_bytes = cg.limit_bytes;
  h.cgroup_usage_bytes = cg.usage_bytes;
  return h;
}

uint64_t HostInfo::usable_available_bytes() const {
  if (cgroup_limit_bytes == 0) return mem_available_bytes;
  const uint64_t left = cgroup_limit_bytes > cgroup_usage_bytes ? cgroup_limit_bytes - cgroup_usage_bytes : 0;
  return std::min(mem_available_bytes, left);
}

uint64_t CacheableMemory(uint64_t mem_total_bytes, uint64_t cgroup_limit_bytes) {
  return cgroup_limit_bytes == 0 ? mem_total_bytes : std::min(mem_total_bytes, cgroup_limit_bytes);
}

namespace {

// A number from a cgroup file; 0 for "max", v1's "no limit" (a page-rounded 2^63) or a missing file.
uint64_t CgroupValue(const std::string& file) {
  std::ifstream in(file);
  std::string v;
  if (!(in >> v) || v == "max") return 0;
  const uint64_t x = std::strtoull(v.c_str(), nullptr, 10);
  return x >= (uint64_t{1} << 62) ? 0 : x;
}

// The cgroup's path in the hierarchy `controller` names in /proc/self/cgroup ("" for v2's "0::"), or nullopt.
std::optional<std::string> CgroupPath(const std::string& proc_cgroup, const std::string& controller) {
  std::ifstream in(proc_cgroup);
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string_view list(line.data() + a + 1, b - a - 1);
    bool match = controller.empty() ? list.empty() : false;
    for (size_t at = 0; !controller.empty() && at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      match = match || list.substr(at, comma - at) == controller;
      at = comma + 1;
    }
    if (match) return line.substr(b + 1);
  }
  return std::nullopt;
}

// A key's value in a cgroup's memory.stat (0 when absent).
uint64_t StatValue(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  for (uint64_t v = 0; in >> k >> v;) {
    if (k == key) return v;
  }
  return 0;
}

// The lowest limit on the way from `dir` + `path` up to `dir`, and that cgroup's usage less its page cache (which
// the kernel reclaims before it fails an allocation, as MemAvailable counts it).
CgroupMemory LowestLimit(const std::string& dir, std::string path, const char* limit_file, const char* usage_file,
                         const char* cache_key) {
  CgroupMemory m;
  for (;;) {
    const std::string here = dir + (path == "/" ? "" : path);
    const uint64_t limit = CgroupValue(here + "/" + limit_file);
    if (limit > 0 && (m.limit_bytes == 0 || limit < m.limit_bytes)) {
      m.limit_bytes = limit;
      const uint64_t usage = CgroupValue(here + "/" + usage_file), cache = StatValue(here + "/memory.stat", cache_key);
      m.usage_bytes = usage > cache ? usage - cache : 0;
      m.path = here;
    }
    const size_t slash = path.rfind('/');
    if (path.empty() || path == "/" || slash == std::string::npos) break;
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return m;
}

bool HasMemoryController(const std::string& v2_root) {
  std::ifstream in(v2_root + "/cgroup.controllers");
  for (std::string c; in >> c;) {
    if (c == "memory") return true;
  }
  return false;
}

}  // namespace

CgroupMemory ReadCgroupMemory(const std::string& proc_cgroup, const std::string& root) {
  if (auto v2 = CgroupPath(proc_cgroup, ""); v2) {
    for (const std::string& dir : {root, root + "/unified"}) {
      if (HasMemoryController(dir)) return LowestLimit(dir, *v2, "memory.max", "memory.current", "file");
    }
  }
  if (auto v1 = CgroupPath(proc_cgroup, "memory"); v1) {
    return LowestLimit(root + "/memory", *v1, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_cache");
  }
  return {};
}

std::vector<int> CpuAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::string CpuListString(const std::vector<int>& cpus) {
  std::ostringstream out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (i > 0) out << ',';
    out << cpus[i];
    if (j > i) out << '-' << cpus[j];
    i = j + 1;
  }
  return out.str();
}

double ProcessCpuSeconds() {
  rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

std::string KernelRelease() {
  struct utsname u {};
  return ::uname(&u) == 0 ? std::string(u.release) : std::string();
}

std::string FileSystemType(const std::string& path) {
  struct statfs st {};
  if (::statfs(path.c_str(), &st) != 0) return "";
  static const std::pair<unsigned long, const char*> kTypes[] = {
      {0xEF53, "ext2/3/4"},     {0x58465342, "xfs"},     {0x01021994, "tmpfs"},   {0x9123683E, "btrfs"},
      {0x6969, "nfs"},          {0x0BD00BD0, "lustre"},  {0x65735546, "fuse"},    {0x794C7630, "overlayfs"},
      {0x00C36400, "ceph"},     {0x47504653, "gpfs"},    {0x2FC12FC1, "zfs"},     {0xFF534D42, "cifs"},
      {0x5346544E, "ntfs"},     {0x4244, "hfs"},         {0x858458F6, "ramfs"},   {0x73717368, "squashfs"},
      {0x19830326, "beegfs"},   {0x6B414653, "afs"},     {0x012FF7B7, "coh"},     {0x61756673, "aufs"}};
  const auto magic = static_cast<unsigned long>(st.f_type) & 0xFFFFFFFFul;
  for (const auto& [m, name] : kTypes) {
    if (m == magic) return name;
  }
  char b[40];
  std::snprintf(b, sizeof b, "unknown (0x%lx)", magic);
  return b;
}

bool IsMemoryFileSystem(const std::string& fs_type) { return fs_type == "tmpfs" || fs_type == "ramfs"; }

}  // namespace feedrate

namespace feedrate {

double ProcessAgeSeconds() {
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  // Field 22 (starttime, clock ticks after boot) follows the command name, which may hold spaces: count from ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  for (int i = 3; i <= 22 && fields >> f; ++i) {
  }
  if (f.empty()) return -1;
  struct timespec now {};
  if (::clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9 - std::stod(f) / ticks;
}

double PeakRssMib() {
  struct rusage u {};
  return ::getrusage(RUSAGE_SELF, &u) == 0 ? static_cast<double>(u.ru_maxrss) / 1024.0 : 0;
}

}  // namespace feedrate
