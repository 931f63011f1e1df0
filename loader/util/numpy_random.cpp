// numpy legacy distributions (numpy/random/src/legacy/legacy-distributions.c, mt19937 random_interval).
#include "loader/util/numpy_random.h"

#include <cmath>

namespace feedrate {

double NumpyRandomState::NextGauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * NextDouble() - 1.0;
    x2 = 2.0 * NextDouble() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

uint64_t NumpyRandomState::Interval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  uint64_t value;
  if (max <= 0xffffffffULL) {
    while ((value = (NextUint32() & mask)) > max) {
    }
  } else {
    while ((value = (((static_cast<uint64_t>(NextUint32()) << 32) | NextUint32()) & mask)) > max) {
    }
  }
  return value;
}

}  // namespace feedrate
