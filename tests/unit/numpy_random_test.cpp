// numpy legacy RandomState reproduction; expected values computed once with numpy 1.24.2 and pasted here.
#include <gtest/gtest.h>

#include <numeric>

#include "datagen/generator.h"
#include "loader/util/numpy_random.h"

namespace feedrate {
namespace {

TEST(NumpyRandom, NormalMatchesNumpySeed10) {
  // np.random.seed(10); np.random.normal(0, 1, 6)
  const double expected[] = {1.331586504129518, 0.7152789743984055, -1.5454002921112682,
                             -0.008383849928522256, 0.6213359738904805, -0.7200855607188968};
  NumpyRandomState rng(10);
  for (double e : expected) EXPECT_DOUBLE_EQ(rng.Normal(0, 1), e);
}

TEST(NumpyRandom, ShuffleMatchesNumpy) {
  // np.random.seed(124); a = np.arange(10); np.random.shuffle(a)
  std::vector<int> a(10);
  std::iota(a.begin(), a.end(), 0);
  NumpyRandomState(124).Shuffle(&a);
  EXPECT_EQ(a, (std::vector<int>{6, 8, 3, 5, 4, 0, 9, 2, 7, 1}));
  // np.random.seed(5); a = np.arange(100000); np.random.shuffle(a); a[:8]
  std::vector<int> b(100000);
  std::iota(b.begin(), b.end(), 0);
  NumpyRandomState(5).Shuffle(&b);
  EXPECT_EQ(std::vector<int>(b.begin(), b.begin() + 8),
            (std::vector<int>{60743, 33949, 52805, 11804, 9229, 49950, 24988, 90271}));
}

TEST(DlioShapes, Unet3dMatchesDlioGenerator) {
  // DLIO: np.random.seed(10); [max(int(d), 1) for d in np.random.normal(12107, 2822.20..., 8)]
  auto d = DlioDimensions(146600628, 68341808, 4);
  std::vector<uint64_t> flat;
  for (auto [a, b] : d) {
    flat.push_back(a);
    flat.push_back(b);
  }
  EXPECT_EQ(flat, (std::vector<uint64_t>{15865, 14125, 7745, 12083, 13860, 10074, 12856, 12413}));
}

TEST(DlioShapes, SmallRecordsAndNoStdev) {
  auto d = DlioDimensions(1048576, 262144, 3);  // dim 1024, dim_stdev 128
  EXPECT_EQ(d[0], (std::pair<uint64_t, uint64_t>{1194, 1115}));
  EXPECT_EQ(d[1], (std::pair<uint64_t, uint64_t>{826, 1022}));
  EXPECT_EQ(d[2], (std::pair<uint64_t, uint64_t>{1103, 931}));
  auto flat = DlioDimensions(65536, 0, 2);
  EXPECT_EQ(flat[1], (std::pair<uint64_t, uint64_t>{256, 256}));
  // Draws below 1 are clamped to 1, as DLIO's max(int(d), 1).
  for (auto [a, b] : DlioDimensions(4, 400, 50)) {
    EXPECT_GE(a, 1u);
    EXPECT_GE(b, 1u);
  }
}

}  // namespace
}  // namespace feedrate
