// The end-of-run gather (emulator/run/run_gather.h): what PackRank sends of a rank's training reaches rank 0 through
// UnpackRanks intact, per accelerator in rank order: each epoch's DLIO block metrics, bytes, time, evaluation,
// residency and start, and every step's stall, barrier and compute time.
#include <gtest/gtest.h>

#include <vector>

#include "emulator/run/run_gather.h"

namespace feedrate {
namespace {

constexpr uint64_t kSteps = 4, kEpochs = 2;

// A rank's training with `accelerators` accelerators; every figure derives from (rank, accelerator, epoch, step).
TrainingResult Training(int rank, size_t accelerators, int64_t train_start_ns) {
  TrainingResult t;
  t.steps_per_epoch = kSteps;
  t.epochs_completed = kEpochs;
  for (size_t a = 0; a < accelerators; ++a) {
    AcceleratorLog log;
    const int64_t id = int64_t{rank} * 100 + static_cast<int64_t>(a) * 10;
    for (uint64_t i = 0; i < kEpochs * kSteps; ++i) {
      const auto k = static_cast<int64_t>(i);
      log.steps.push_back({(id + k + 1) * 1000000, (id + k + 2) * 2000000, (id + k + 3) * 500000,
                           static_cast<uint64_t>((id + k + 1) * 4096)});
    }
    for (uint64_t e = 0; e < kEpochs; ++e) {
      const auto k = static_cast<int64_t>(e);
      log.block_ns.push_back((id + k + 50) * 10000000);
      log.block_start_ns.push_back(train_start_ns + (id + k) * 1000000000);
      log.eval.push_back({e == 1, static_cast<uint64_t>(id + 7), static_cast<uint64_t>(id + 9) * 1024, 0.25, 0.125});
      log.residency.push_back({static_cast<uint64_t>(id + 1) * 8192, static_cast<uint64_t>(id) * 4096});
    }
    t.logs.push_back(std::move(log));
  }
  return t;
}

TEST(RunGather, WhatEachRankPacksReachesRankZeroPerAcceleratorInRankOrder) {
  WorkloadConfig cfg;
  cfg.batch_size = 3;
  cfg.metric_exclude_start_steps = 1;
  cfg.metric_exclude_end_steps = 1;
  const int64_t start0 = 5'000'000'000, start1 = 7'000'000'000;  // each rank's own clock
  const std::vector<TrainingResult> ranks = {Training(0, 2, start0), Training(1, 1, start1)};
  const std::vector<std::vector<double>> all = {PackRank(cfg, ranks[0], start0), PackRank(cfg, ranks[1], start1)};
  RunRecord r;
  std::vector<std::vector<AcceleratorEpoch>> per_acc;
  UnpackRanks(all, &r, &per_acc);

  ASSERT_EQ(per_acc.size(), 3u);  // rank 0's two accelerators, then rank 1's one
  size_t step = 0;
  const std::vector<std::pair<int, size_t>> order = {{0, 0}, {0, 1}, {1, 0}};
  for (size_t n = 0; n < order.size(); ++n) {
    const auto [rank, a] = order[n];
    const AcceleratorLog& log = ranks[static_cast<size_t>(rank)].logs[a];
    ASSERT_EQ(per_acc[n].size(), kEpochs);
    for (uint64_t e = 0; e < kEpochs; ++e) {
      const AcceleratorEpoch& got = per_acc[n][e];
      std::span<const StepRecord> steps(log.steps.data() + e * kSteps, kSteps);
      const BlockMetrics want = ComputeBlockMetrics(steps, log.block_ns[e], 3, 1, 1);
      EXPECT_DOUBLE_EQ(got.block.au, want.au);
      EXPECT_DOUBLE_EQ(got.block.throughput, want.throughput);
      EXPECT_DOUBLE_EQ(got.block.throughput_corrected, want.throughput_corrected);
      EXPECT_EQ(got.block.counted_steps, want.counted_steps);
      uint64_t bytes = 0;
      for (const auto& s : steps) bytes += s.bytes;
      EXPECT_EQ(got.bytes, bytes);
      EXPECT_DOUBLE_EQ(got.seconds, static_cast<double>(log.block_ns[e]) / 1e9);
      EXPECT_EQ(got.eval.ran, log.eval[e].ran);
      EXPECT_EQ(got.eval.samples, log.eval[e].samples);
      EXPECT_EQ(got.eval.bytes, log.eval[e].bytes);
      EXPECT_DOUBLE_EQ(got.eval.seconds, 0.25);
      EXPECT_DOUBLE_EQ(got.eval.compute_seconds, 0.125);
      EXPECT_EQ(got.probed_bytes, log.residency[e].bytes);
      EXPECT_EQ(got.resident_bytes, log.residency[e].resident_bytes);
      // Relative to its own rank's training start, whatever that rank's clock reads.
      const int64_t start = rank == 0 ? start0 : start1;
      EXPECT_DOUBLE_EQ(got.start_offset_s, static_cast<double>(log.block_start_ns[e] - start) / 1e9);
    }
    for (const auto& s : log.steps) {
      ASSERT_LT(step, r.stall_seconds.size());
      EXPECT_DOUBLE_EQ(r.stall_seconds[step], static_cast<double>(s.load_ns) / 1e9) << "step " << step;
      EXPECT_DOUBLE_EQ(r.barrier_seconds[step], static_cast<double>(s.barrier_ns) / 1e9) << "step " << step;
      EXPECT_DOUBLE_EQ(r.compute_seconds[step], static_cast<double>(s.compute_ns) / 1e9) << "step " << step;
      ++step;
    }
  }
  EXPECT_EQ(r.stall_seconds.size(), 3 * kEpochs * kSteps);
  EXPECT_EQ(r.barrier_seconds.size(), r.stall_seconds.size());
  EXPECT_EQ(r.compute_seconds.size(), r.stall_seconds.size());
}

TEST(RunGather, ARankThatCompletedNoEpochSendsItsAcceleratorsWithoutFigures) {
  WorkloadConfig cfg;
  TrainingResult t = Training(0, 2, 0);
  t.epochs_completed = 0;  // stopped in the first epoch
  RunRecord r;
  std::vector<std::vector<AcceleratorEpoch>> per_acc;
  UnpackRanks({PackRank(cfg, t, 0)}, &r, &per_acc);
  ASSERT_EQ(per_acc.size(), 2u);
  EXPECT_TRUE(per_acc[0].empty());
  EXPECT_TRUE(per_acc[1].empty());
  EXPECT_TRUE(r.stall_seconds.empty());
}

}  // namespace
}  // namespace feedrate
