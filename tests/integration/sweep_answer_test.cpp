// A real `feedrate sweep` whose answer does not depend on the machine: the storage's speed is set by injected
// latency (--inject delay). Its own executable, run with nothing else beside it (RUN_SERIAL).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "harness.h"

namespace feedrate::it {
namespace {

// The answer made independent of the machine: every read takes 40 ms more (--inject delay), 4 I/O threads reading
// each sample's extent as one read (coalesced, upstream's extents: v3.0's whole files take a read more, the one that
// meets EOF; tests/integration/latency_test.cpp covers DLIO's patterns), so the
// "storage" delivers 100 samples/s at most (the delay paces each I/O thread, so late wake-ups are made up); each
// accelerator needs 1/0.025 = 40 per second. 2 accelerators need 80 (supply 1.25x demand: AU ~99%), 3 need 120
// (0.83x: AU ~80%), so the answer is 2 on any machine that can copy 64 KiB in well under a millisecond, and the
// verdict is the storage (the client's CPUs stay idle). It runs alone (RUN_SERIAL): with other processes
// saturating the CPUs, late wake-ups of the accelerator threads themselves lower AU whatever the storage does.
TEST(SweepAnswer, InjectedLatencyGivesTheSameAnswerOnAnyMachine) {
  test::TempDir dir;
  const std::string data = dir / "d128", r = dir / "latency";
  const std::string shape = " --param dataset.num_files_train=128 --param dataset.record_length_bytes=65536"
                            " --param dataset.record_length_bytes_stdev=0";
  auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + shape));
  ASSERT_EQ(gen.code, 0) << gen.output;
  auto sweep = Sh(Feedrate("sweep -w unet3d_h100 --data-dir " + data + shape +
                           " --param reader.batch_size=1 --param train.epochs=1 --param train.computation_time=0.025"
                           " --io-threads 4 --inject delay:ms=40 --param feedrate.access_pattern=coalesced --max 8 --rules upstream"
                           " --results-dir " + r));
  ASSERT_EQ(sweep.code, 0) << sweep.output;
  auto j = ReadJson(r + "/sweep.json");
  EXPECT_EQ(j["accelerators_supported"], 2) << sweep.output;
  EXPECT_EQ(j["lower_bound_only"], false);
  std::vector<std::pair<int, bool>> tried;
  for (const auto& p : j["points"]) tried.emplace_back(p["accelerators"].get<int>(), p["passed"].get<bool>());
  EXPECT_EQ(tried, (std::vector<std::pair<int, bool>>{{1, true}, {2, true}, {4, false}, {3, false}})) << sweep.output;
  EXPECT_EQ(j["bottleneck"]["limit"], "storage_throughput") << j["bottleneck"].dump(2);
  EXPECT_NE(j["validity"]["reasons"].dump().find("faults were injected (--inject delay:ms=40)"), std::string::npos);
  // Each run records what was injected: one delay per sample read.
  auto s = ReadJson(j["points"][1]["runs"][0]["results_dir"].get<std::string>() + "/summary.json");
  EXPECT_EQ(s["feedrate"]["injected_faults"][0]["injected"], 128);
}

}  // namespace
}  // namespace feedrate::it
