// DLIO v2.0 metric formulas on synthetic step timings, with the numbers worked out by hand.
#include <gtest/gtest.h>

#include "emulator/training/metrics.h"

namespace feedrate {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(Metrics, BlockAuAndThroughputByHand) {
  // 4 steps, batch 7: loads 500, 10, 20, 30 ms; compute 300 ms each; block 1.5 s.
  std::vector<StepRecord> s = {{500 * kMs, 300 * kMs, 0, 0}, {10 * kMs, 300 * kMs, 0, 0},
                               {20 * kMs, 300 * kMs, 0, 0}, {30 * kMs, 300 * kMs, 0, 0}};
  BlockMetrics m = ComputeBlockMetrics(s, 1500 * kMs, 7, 1, 0);
  // window = 1.5 - (0.5 + 0.3) = 0.7 s; AU = 0.9 / 0.7; throughput = (4 - 2) * 7 / 0.7 = 20.
  EXPECT_NEAR(m.au, 0.9 / 0.7, 1e-12);
  EXPECT_NEAR(m.throughput, 20.0, 1e-9);
  EXPECT_NEAR(m.throughput_corrected, 30.0, 1e-9);  // 3 counted steps
  EXPECT_EQ(m.counted_steps, 3u);
}

TEST(Metrics, ExcludeEndSteps) {
  std::vector<StepRecord> s(5, StepRecord{100 * kMs, 100 * kMs, 0, 0});
  // exclude 1 start and 1 end: window = 1.0 - 0.2 - 0.2 = 0.6, compute over steps 1..3 = 0.3.
  BlockMetrics m = ComputeBlockMetrics(s, 1000 * kMs, 1, 1, 1);
  EXPECT_NEAR(m.au, 0.5, 1e-12);
  EXPECT_NEAR(m.throughput, 3 / 0.6, 1e-9);
  EXPECT_EQ(ComputeBlockMetrics(s, 1000 * kMs, 1, 3, 2).counted_steps, 0u);
}

TEST(Metrics, AggregateMeanAuSumThroughput) {
  AcceleratorEpoch a{{0.95, 10, 12, 3}, 100, 2.0, {}}, b{{0.85, 20, 24, 3}, 300, 2.5, {}};
  AcceleratorEpoch c{{0.99, 11, 13, 3}, 100, 1.0, {}}, d{{0.91, 21, 25, 3}, 100, 1.5, {}};
  RunMetrics r = AggregateRun({{a, c}, {b, d}}, 1048576, 0.90);
  ASSERT_EQ(r.au_pct.size(), 2u);
  EXPECT_NEAR(r.au_pct[0], 90.0, 1e-9);
  EXPECT_NEAR(r.au_pct[1], 95.0, 1e-9);
  EXPECT_NEAR(r.throughput[0], 30, 1e-9);
  EXPECT_NEAR(r.throughput[1], 32, 1e-9);
  EXPECT_NEAR(r.au_mean_pct, 92.5, 1e-9);
  EXPECT_NEAR(r.au_stdev_pct, 2.5, 1e-9);  // population stdev, as np.std
  EXPECT_NEAR(r.io_mean_mib, 31.0, 1e-9);  // mean throughput x 1 MiB records
  EXPECT_EQ(r.bytes[0], 400u);
  EXPECT_DOUBLE_EQ(r.epoch_seconds[0], 2.5);
  EXPECT_NEAR(r.au_min_pct_overall, 85, 1e-9);
  EXPECT_TRUE(r.meets_au);
}

// Evaluation passes aggregate per evaluated epoch only: AU = compute / wall of the pass (mean over accelerators),
// throughput = sum over accelerators of samples per second.
TEST(Metrics, EvaluationAggregatesOnlyEvaluatedEpochs) {
  AcceleratorEpoch a1{{0.9, 1, 1, 1}, 0, 1, {}}, a2{{0.9, 1, 1, 1}, 0, 1, {true, 40, 4000, 2.0, 1.5}};
  AcceleratorEpoch b1{{0.9, 1, 1, 1}, 0, 1, {}}, b2{{0.9, 1, 1, 1}, 0, 1, {true, 40, 4000, 4.0, 2.0}};
  RunMetrics r = AggregateRun({{a1, a2}, {b1, b2}}, 1048576, 0.90);
  ASSERT_EQ(r.eval.epochs, std::vector<uint64_t>{2});
  EXPECT_NEAR(r.eval.au_pct[0], 100.0 * (0.75 + 0.5) / 2, 1e-9);
  EXPECT_NEAR(r.eval.throughput[0], 20 + 10, 1e-9);
  EXPECT_EQ(r.eval.bytes[0], 8000u);
  EXPECT_NEAR(r.eval.io_mean_mib, 30, 1e-9);
  EXPECT_TRUE(AggregateRun({{a1}, {b1}}, 1, 0.9).eval.epochs.empty());
}

TEST(Metrics, PassUsesDlioComparison) {
  // DLIO: 'success' if train_au_mean_percentage >= au * 100, so exactly the bar passes.
  AcceleratorEpoch exact{{0.90, 1, 1, 1}, 0, 1, {}};
  EXPECT_TRUE(AggregateRun({{exact}}, 1, 0.90).meets_au);
  AcceleratorEpoch below{{0.8999, 1, 1, 1}, 0, 1, {}};
  EXPECT_FALSE(AggregateRun({{below}}, 1, 0.90).meets_au);
}

TEST(Metrics, PercentileLikeNumpy) {
  std::vector<double> v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
}

}  // namespace
}  // namespace feedrate
