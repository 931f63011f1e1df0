// LatencyHistogram: bucket bounds, percentiles within the bucket resolution, merging.
#include <gtest/gtest.h>

#include <random>

#include "loader/util/latency_histogram.h"

namespace feedrate {
namespace {

TEST(LatencyHistogram, BucketsCoverEveryValueWithinSixPercent) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = rng() >> (rng() % 60);
    size_t idx = LatencyHistogram::Index(v);
    ASSERT_LT(idx, LatencyHistogram::kBuckets);
    uint64_t ub = LatencyHistogram::UpperBound(idx);
    ASSERT_GE(ub, v);
    if (v >= 16) {
      ASSERT_LE(static_cast<double>(ub - v), 0.0625 * static_cast<double>(v)) << v;
    }
  }
}

TEST(LatencyHistogram, PercentilesAndMerge) {
  LatencyHistogram a, b;
  for (uint64_t v = 1; v <= 1000; ++v) (v <= 500 ? a : b).Add(v * 1000);  // 1..1000 us
  a.Merge(b);
  EXPECT_EQ(a.total(), 1000u);
  EXPECT_EQ(a.max(), 1000000u);
  EXPECT_NEAR(static_cast<double>(a.Percentile(50)), 500000, 500000 * 0.07);
  EXPECT_NEAR(static_cast<double>(a.Percentile(99)), 990000, 990000 * 0.07);
  EXPECT_EQ(a.Percentile(100), 1000000u);
  EXPECT_EQ(LatencyHistogram().Percentile(50), 0u);
}

}  // namespace
}  // namespace feedrate
