// numpy's legacy RandomState (np.random.seed / normal / shuffle) reproduced bit for bit, so that Feedrate
// draws the same file shapes and shuffles as DLIO for the same seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace feedrate {

class NumpyRandomState {
 public:
  // np.random.seed(seed) for an integer seed in [0, 2^32): MT19937 init_genrand, no cached Gaussian.
  explicit NumpyRandomState(uint32_t seed) : mt_(seed) {}

  uint32_t NextUint32() { return static_cast<uint32_t>(mt_()); }
  // random_sample(): 53-bit double in [0, 1) from two 32-bit draws (genrand_res53).
  double NextDouble() {
    uint32_t a = NextUint32() >> 5, b = NextUint32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }
  // legacy_gauss: Marsaglia polar method, caching the second value as numpy does.
  double NextGauss();
  // np.random.normal(loc, scale) (one draw).
  double Normal(double loc, double scale) { return loc + scale * NextGauss(); }
  // A draw in [0, max] by masked rejection (legacy random_interval), as used by shuffle.
  uint64_t Interval(uint64_t max);
  // np.random.shuffle on a 1-d array: Fisher-Yates from the end.
  template <typename T>
  void Shuffle(std::vector<T>* v) {
    for (size_t i = v->size(); i > 1; --i) {
      size_t j = static_cast<size_t>(Interval(i - 1));
      std::swap((*v)[i - 1], (*v)[j]);
    }
  }

 private:
  std::mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

}  // namespace feedrate
