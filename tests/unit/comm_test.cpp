// Comm under mpirun (ctest runs this binary, with trainer_test.cpp, as -np 3): every collective the run relies on, checked on every
// rank: first-error agreement (LowestTrue + Broadcast from that rank), gathers of different sizes per rank, sums,
// and the step barrier's stop flag both flat and hierarchical. Any rank's failure fails the job.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/host/comm.h"

namespace feedrate {
const Comm* g_comm = nullptr;  // the job's Comm (main), also used by trainer_test.cpp

namespace {

TEST(Comm, RunsWithThreeRanks) {
  ASSERT_EQ(g_comm->size(), 3) << "run me with mpirun -np 3";
  EXPECT_EQ(g_comm->root(), g_comm->rank() == 0);
  EXPECT_EQ(g_comm->num_hosts(), 1);
  EXPECT_EQ(g_comm->host_leader(), g_comm->rank() == 0);
}

// What the run does to agree on the first error: the lowest failing rank's message, on every rank.
TEST(Comm, LowestFailingRankAndItsMessageReachEveryRank) {
  const Comm& c = *g_comm;
  EXPECT_EQ(c.LowestTrue(false), -1);
  const int bad = c.LowestTrue(c.rank() >= 1);
  EXPECT_EQ(bad, 1);
  const std::string mine = "rank " + std::to_string(c.rank()) + std::string(static_cast<size_t>(c.rank()) * 100, 'x');
  const std::string got = c.Broadcast(mine, bad);
  EXPECT_EQ(got, "rank 1" + std::string(100, 'x'));
  EXPECT_EQ(c.Broadcast(mine, 2).size(), 6u + 200);
  // The same, as the run, checkpoint, datagen and iobench use it.
  EXPECT_EQ(c.AgreeFirstError(Status::Ok()), "");
  const Status local = c.rank() >= 1 ? Status::IoError("disk " + std::to_string(c.rank()) + " failed") : Status::Ok();
  const std::string agreed = c.AgreeFirstError(local);
  EXPECT_EQ(agreed.rfind("rank 1 (" + c.hostname(1) + "): ", 0), 0u) << agreed;
  EXPECT_NE(agreed.find("disk 1 failed"), std::string::npos) << agreed;
}

TEST(Comm, GathersKeepEachRanksSizeAndOrder) {
  const Comm& c = *g_comm;
  std::vector<double> mine(static_cast<size_t>(c.rank()) + 1, 10.0 * c.rank());
  auto all = c.GatherDoubles(mine);
  auto strings = c.GatherStrings(std::string(static_cast<size_t>(c.rank()) * 3, 'a' + static_cast<char>(c.rank())));
  if (!c.root()) {
    EXPECT_TRUE(all.empty());
    return;
  }
  ASSERT_EQ(all.size(), 3u);
  ASSERT_EQ(strings.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(all[static_cast<size_t>(r)], std::vector<double>(static_cast<size_t>(r) + 1, 10.0 * r));
    EXPECT_EQ(strings[static_cast<size_t>(r)], std::string(static_cast<size_t>(r) * 3, 'a' + static_cast<char>(r)));
  }
}

TEST(Comm, SumsAndMaximaOverRanks) {
  const Comm& c = *g_comm;
  EXPECT_DOUBLE_EQ(c.SumDouble(c.rank() + 1.0), 6.0);
  EXPECT_DOUBLE_EQ(c.MaxDouble(c.rank() * 2.5), 5.0);
  std::vector<double> v = {1.0, static_cast<double>(c.rank())};
  c.SumInPlace(&v);
  EXPECT_EQ(v, (std::vector<double>{3.0, 3.0}));
}

// The step barrier carries the stop decision: one rank's flag stops all, flat or hierarchical, step after step.
TEST(Comm, StepBarrierFlagReachesEveryRankFlatAndHierarchical) {
  Comm& c = const_cast<Comm&>(*g_comm);
  for (StepBarrierMode mode : {StepBarrierMode::kFlat, StepBarrierMode::kHierarchical}) {
    c.SetStepBarrier(mode);
    for (int step = 0; step < 50; ++step) {
      const bool stop_here = step % 7 == 3 && c.rank() == step % 3;
      EXPECT_EQ(c.AnyTrue(stop_here), step % 7 == 3) << "step " << step;
    }
    EXPECT_EQ(c.TimeStepBarriers(mode, 5).size(), 5u);
  }
  c.SetStepBarrier(StepBarrierMode::kFlat);
}

}  // namespace
}  // namespace feedrate

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  feedrate::Comm comm(&argc, &argv);  // MPI_Init; MPI_Finalize when main returns
  comm.SetCollectiveTimeout(60);     // a rank that fails to arrive ends the job, naming it, instead of hanging
  feedrate::g_comm = &comm;
  const int failed = RUN_ALL_TESTS();
  // Every rank's verdict: the job fails when any rank failed (mpirun reports the first non-zero exit).
  return comm.AnyTrue(failed != 0) ? 1 : 0;
}
