// Host and process facts from /proc, sched_getaffinity and getrusage.
#include "emulator/sysinfo.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

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

}  // namespace feedrate
