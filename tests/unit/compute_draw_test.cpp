// train.computation_time distributions: parsed with validation, drawn with the configured mean (and never
// negative), scalar and {mean, stdev} forms as DLIO v2.0.
#include <gtest/gtest.h>

#include "loader/util/time_draw.h"
#include "loader/config/workload_config.h"

namespace feedrate {
namespace {

double MeanOf(const TimeDistribution& t, int n = 20000) {
  TimeDraw d(t, 7);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    double x = d.Next();
    EXPECT_GE(x, 0.0);
    sum += x;
  }
  return sum / n;
}

WorkloadConfig With(const std::string& ct) {
  return LoadWorkload("unet3d_h100", {"++train.computation_time=" + ct});
}

TEST(ComputeTime, DistributionsHaveTheirMeans) {
  auto u = With("{type: uniform, min: 0.1, max: 0.3}").computation_time;
  EXPECT_EQ(u.type, "uniform");
  EXPECT_DOUBLE_EQ(u.mean, 0.2);
  EXPECT_NEAR(MeanOf(u), 0.2, 0.005);
  auto g = With("{type: gamma, shape: 2.0, scale: 0.05}").computation_time;
  EXPECT_DOUBLE_EQ(g.mean, 0.1);
  EXPECT_NEAR(MeanOf(g), 0.1, 0.005);
  auto e = With("{type: exponential, scale: 0.02}").computation_time;
  EXPECT_NEAR(MeanOf(e), 0.02, 0.001);
  auto p = With("{type: poisson, lam: 3}").computation_time;
  EXPECT_NEAR(MeanOf(p), 3.0, 0.1);
  auto n = With("{mean: 0.5, stdev: 0.1}").computation_time;  // DLIO v2.0's form: normal
  EXPECT_EQ(n.type, "normal");
  EXPECT_NEAR(MeanOf(n), 0.5, 0.005);
  auto c = With("0.323").computation_time;
  EXPECT_EQ(c.type, "constant");
  EXPECT_DOUBLE_EQ(MeanOf(c, 10), 0.323);
}

TEST(ComputeTime, BadDistributionsAreConfigErrors) {
  EXPECT_THROW(With("{type: uniform, min: 0.3, max: 0.1}"), ConfigError);
  EXPECT_THROW(With("{type: gamma, shape: 0, scale: 1}"), ConfigError);
  EXPECT_THROW(With("{type: exponential}"), ConfigError);
  EXPECT_THROW(With("{type: lognormal, mean: 1}"), ConfigError);
}

}  // namespace
}  // namespace feedrate
