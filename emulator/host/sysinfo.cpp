// Host and process facts from /proc, sched_getaffinity, getrusage, uname and statfs.
#include "emulator/host/sysinfo.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

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
  return h;
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
