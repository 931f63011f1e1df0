// Progress figures: step, running AU, MiB/s and ETA from the per-step counters; the text line and JSON event.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "emulator/training/progress.h"

namespace feedrate {
namespace {

TEST(Progress, FiguresFromTheCounters) {
  TrainProgress p;
  p.epoch = 2;
  p.epoch_start_ns = 1'000'000'000;
  p.steps = 40;                      // 4 accelerators x 10 steps
  p.bytes = 400ull << 20;            // 400 MiB
  p.compute_ns = 36'000'000'000ull;  // 36 s of compute over 4 accelerators in 10 s: 90%
  ProgressReporter::Shape s{3, 50, 4, 0, 1};
  const int64_t now = 11'000'000'000;  // 10 s into the epoch
  EXPECT_EQ(ProgressReporter::StatusText(p, s, now), "epoch 2/3  step 10/50  40.0 MiB/s  AU 90.0%  ETA 1m30s");
  // 1 s per step; 40 steps left in this epoch and 50 in the last one.
  auto j = nlohmann::json::parse(ProgressReporter::StatusJson(p, s, now));
  EXPECT_EQ(j["event"], "progress");
  EXPECT_EQ(j["step"], 10);
  EXPECT_DOUBLE_EQ(j["au_pct"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(j["eta_s"].get<double>(), 90.0);
  s.ranks = 2;
  EXPECT_NE(ProgressReporter::StatusText(p, s, now).find("(rank 0's accelerators)"), std::string::npos);
}

TEST(Progress, BeforeTheFirstStepThereIsNoEta) {
  TrainProgress p;
  p.epoch = 1;
  p.epoch_start_ns = 5;
  ProgressReporter::Shape s{1, 10, 1, 0, 1};
  EXPECT_TRUE(nlohmann::json::parse(ProgressReporter::StatusJson(p, s, 10))["eta_s"].is_null());
  EXPECT_NE(ProgressReporter::StatusText(p, s, 10).find("ETA --"), std::string::npos);
}

TEST(Progress, QuietModeEmitsNothing) {
  TrainProgress p;
  testing::internal::CaptureStdout();
  {
    ProgressReporter r(p, {}, ProgressMode::kQuiet);
    r.Emit("epoch line");
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(ChooseProgressMode(true, true), ProgressMode::kQuiet);
  EXPECT_EQ(ChooseProgressMode(false, true), ProgressMode::kJsonEvents);
}

}  // namespace
}  // namespace feedrate
