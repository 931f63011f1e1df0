// A client busy with other work (run alone: its busy loops would slow the tests beside it): the run names it.
#include <gtest/gtest.h>

#include <string>

#include "harness.h"

namespace feedrate::it {
namespace {

// The client's CPUs are the host's: with two busy loops on it, a run says the client was busy with other work and
// names it (summary feedrate.hosts[].host_cpu, the line under the table), where it counted only its own CPU time.
TEST(BusyClient, IsNamedWithWhatKeptItBusy) {
  test::TempDir dir;
  const std::string data = dir / "data", results = dir / "results";
  const std::string small = SmallDatasetParams(4, 20000) + " --param reader.batch_size=1";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + " " + small)).code, 0);
  const std::string loops = "pids=; for i in 1 2; do timeout 60 sh -c 'while :; do :; done' & pids=\"$pids $!\"; done; ";
  const auto r = Sh(loops + Feedrate("run -w unet3d_h100 --data-dir " + data + " " + small +
                                     " --param train.computation_time=0.2 --results-dir " + results) +
                    "; rc=$?; kill $pids; exit $rc");
  EXPECT_TRUE(r.code == 0 || r.code == 3) << r.output;
  const auto s = ReadJson(results + "/summary.json");
  ASSERT_TRUE(s.is_object()) << r.output;
  const auto cpu = s["feedrate"]["hosts"][0]["host_cpu"];
  EXPECT_GT(cpu.value("busy", 0.0), 0.5) << cpu.dump();
  EXPECT_GT(cpu.value("others_cpu_seconds", 0.0), cpu.value("feedrate_cpu_seconds", 0.0)) << cpu.dump();
  EXPECT_NE(cpu.value("others_described", std::string()).find("sh x2"), std::string::npos) << cpu.dump();
  // The line under the table names the loops among the other work (listed by CPU: under a sanitizer the kernel's own
  // threads can come first).
  const size_t line = r.output.find("% of them by other work (");
  ASSERT_NE(line, std::string::npos) << r.output;
  EXPECT_NE(r.output.substr(line, r.output.find('\n', line) - line).find("sh x2"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace feedrate::it
