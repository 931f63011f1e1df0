// Per-step computation times drawn from train.computation_time's distribution (|draw|, as DLIO takes abs()).
// Seeded per accelerator, so runs repeat; numpy's streams are not reproduced (DLIO's are unseeded anyway).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include "loader/config/workload_config.h"

namespace feedrate {

class ComputeTimeDraw {
 public:
  ComputeTimeDraw(const ComputeTime& t, uint64_t seed) : t_(t), rng_(seed) {}
  double Next() {
    if (t_.type == "normal" && t_.stdev > 0) return std::fabs(std::normal_distribution<double>(t_.mean, t_.stdev)(rng_));
    if (t_.type == "uniform") return std::uniform_real_distribution<double>(t_.min, t_.max)(rng_);
    if (t_.type == "gamma") return std::gamma_distribution<double>(t_.shape, t_.scale)(rng_);
    if (t_.type == "exponential") return std::exponential_distribution<double>(1.0 / t_.scale)(rng_);
    if (t_.type == "poisson") return t_.lam > 0 ? static_cast<double>(std::poisson_distribution<int64_t>(t_.lam)(rng_)) : 0.0;
    return t_.mean;
  }

 private:
  const ComputeTime& t_;
  std::mt19937_64 rng_;
};

}  // namespace feedrate
