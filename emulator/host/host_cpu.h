// The whole host's CPU use over a window, beside Feedrate's own: a client busy with other work is named as the
// limit, with what used its CPUs, rather than the storage blamed (issue 36: two busy loops on a 2-CPU client made a
// sweep answer 4-5 where it answers 8+, naming storage_throughput and "the client's CPUs 5% busy").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace feedrate {

// One reading of /proc/stat (all CPUs) and of every process's CPU time. Taken at a window's start and end by the
// host's leading rank only, outside the timed loop: a few hundred small reads, none during training.
struct HostCpuSample {
  uint64_t busy_ticks = 0, total_ticks = 0;  // user+nice+system+irq+softirq+steal; those and idle+iowait
  struct Process {
    pid_t pid = 0;
    std::string comm;
    uint64_t ticks = 0;   // utime + stime
    bool kernel = false;  // a kernel thread (kthreadd's child): softirqs, writeback, kworkers
  };
  std::vector<Process> processes;  // by pid
};

// Reads the sample from `proc` (a test's fake tree, or /proc).
HostCpuSample SampleHostCpu(const std::string& proc = "/proc");

// What the window between two samples shows (`seconds` is the fallback: the window is /proc/stat's when it has one). `self` names Feedrate's processes (their comm: every rank on the host
// and, with io_uring, its io-wq threads belong to them).
struct HostCpuUse {
  double seconds = 0;                 // the window
  unsigned cpus = 0;                  // the host's
  double busy = 0;                    // 0..1: the host's CPUs busy, whoever used them
  double self_cpu_seconds = 0;        // Feedrate's processes
  double others_cpu_seconds = 0;      // every other process and kernel thread
  struct Top {
    std::string comm;
    uint64_t processes = 0;
    double cpu_seconds = 0;
  };
  std::vector<Top> top;  // the other users, by command name, most first (at most 5)
  nlohmann::json ToJson() const;
  // "stress x2 1.9 CPU-s/s, kernel threads 0.1 CPU-s/s": for explanations.
  std::string Describe() const;
};
// The shortest window whose readings a verdict uses: /proc counts CPU time in ticks of 10 ms, so over a fraction of
// a second one kernel thread's tick reads as a tenth of a CPU.
inline constexpr double kMinHostCpuWindow = 2.0;  // seconds

// This process's command name (/proc/self/comm): how its peers on the host are told from other work.
std::string ProcessName();
HostCpuUse HostCpuBetween(const HostCpuSample& start, const HostCpuSample& end, double seconds, unsigned cpus,
                          const std::string& self);

}  // namespace feedrate
