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
};
HostInfo ReadHostInfo();

// CPUs this process may run on (sched_getaffinity), e.g. {0, 1}.
std::vector<int> CpuAffinity();
// "0-3,8" style list.
std::string CpuListString(const std::vector<int>& cpus);

// User + system CPU seconds used by this process so far.
double ProcessCpuSeconds();

}  // namespace feedrate
