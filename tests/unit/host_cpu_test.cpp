// The host's CPU use from two /proc readings: busy share, Feedrate's processes told from other work, kernel threads
// grouped, processes that started or ended within the window.
#include "emulator/host/host_cpu.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "test_util.h"

namespace feedrate {
namespace {

namespace fs = std::filesystem;

void WriteProc(const std::string& root, uint64_t busy, uint64_t idle,
               const std::vector<std::tuple<int, std::string, int, uint64_t>>& procs) {
  fs::create_directories(root);
  test::WriteFile(root + "/stat", "cpu  " + std::to_string(busy) + " 0 0 " + std::to_string(idle) + " 0 0 0 0 0 0\ncpu0 1 2 3\n");
  for (const auto& [pid, comm, ppid, ticks] : procs) {
    fs::create_directories(root + "/" + std::to_string(pid));
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    test::WriteFile(root + "/" + std::to_string(pid) + "/stat", std::to_string(pid) + " (" + comm + ") R " + std::to_string(ppid) +
                                                               " 1 1 0 -1 0 0 0 0 0 " + std::to_string(ticks) + " 0 0 0 20 0");
  }
}

TEST(HostCpu, OtherWorkIsToldFromFeedrateAndNamed) {
  test::TempDir dir;
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  WriteProc(dir / "a", 1000, 1000, {{10, "feedrate", 1, 50}, {11, "stress", 1, 100}, {12, "stress", 1, 100},
                                    {13, "kworker/0:1", 2, 5}, {14, "gone", 1, 7}, {15, "a (b) c", 1, 0}});
  // 10 s on 2 CPUs at USER_HZ: 2*10*hz ticks more, 90% of them busy.
  const auto dt = static_cast<uint64_t>(20 * hz);
  WriteProc(dir / "b", 1000 + dt * 9 / 10, 1000 + dt / 10,
            {{10, "feedrate", 1, 50 + static_cast<uint64_t>(hz)}, {11, "stress", 1, 100 + static_cast<uint64_t>(8 * hz)},
             {12, "stress", 1, 100 + static_cast<uint64_t>(8 * hz)}, {13, "kworker/0:1", 2, 5 + static_cast<uint64_t>(hz / 10)},
             {15, "a (b) c", 1, static_cast<uint64_t>(hz)}, {16, "late", 1, static_cast<uint64_t>(hz)}});
  const HostCpuUse u = HostCpuBetween(SampleHostCpu(dir / "a"), SampleHostCpu(dir / "b"), 99, 2, "feedrate");
  EXPECT_NEAR(u.seconds, 10, 0.05);  // the window as /proc/stat counts it, not the fallback given
  EXPECT_NEAR(u.busy, 0.9, 1e-9);
  EXPECT_NEAR(u.self_cpu_seconds, 1, 1e-9);
  EXPECT_NEAR(u.others_cpu_seconds, 16 + 0.1 + 1 + 1, 0.02);
  ASSERT_GE(u.top.size(), 3u);
  EXPECT_EQ(u.top[0].comm, "stress");
  EXPECT_EQ(u.top[0].processes, 2u);
  EXPECT_NEAR(u.top[0].cpu_seconds, 16, 1e-9);
  EXPECT_NEAR(u.top[1].cpu_seconds, 1, 1e-9);  // "late" started within the window: counted from zero
  const std::string said = u.Describe();
  EXPECT_NE(said.find("stress x2 1.6 CPU-s/s"), std::string::npos) << said;
  EXPECT_NE(said.find("a (b) c"), std::string::npos) << said;  // a comm with parentheses read whole
  EXPECT_EQ(said.find("kernel threads"), std::string::npos) << said;  // 0.01 CPU-s/s: under 5% of a CPU, not named
  EXPECT_EQ(u.ToJson()["others_described"], said);
}

// The real /proc: this process is found and named by its comm, and the host's busy share is a fraction.
TEST(HostCpu, ReadsTheRealProc) {
  const HostCpuSample a = SampleHostCpu();
  EXPECT_GT(a.total_ticks, 0u);
  bool self = false;
  for (const auto& p : a.processes) self = self || p.pid == ::getpid();
  EXPECT_TRUE(self);
  EXPECT_FALSE(ProcessName().empty());
  const HostCpuUse u = HostCpuBetween(a, SampleHostCpu(), 1, 1, ProcessName());
  EXPECT_GE(u.busy, 0.0);
  EXPECT_LE(u.busy, 1.0);
}

}  // namespace
}  // namespace feedrate
