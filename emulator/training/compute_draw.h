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
  // Keeps a copy of `t`; the distribution's name is resolved once, not per step.
  ComputeTimeDraw(const ComputeTime& t, uint64_t seed) : t_(t), kind_(KindOf(t)), rng_(seed) {}
  double Next() {
    switch (kind_) {
      case Kind::kNormal: return std::fabs(std::normal_distribution<double>(t_.mean, t_.stdev)(rng_));
      case Kind::kUniform: return std::uniform_real_distribution<double>(t_.min, t_.max)(rng_);
      case Kind::kGamma: return std::gamma_distribution<double>(t_.shape, t_.scale)(rng_);
      case Kind::kExponential: return std::exponential_distribution<double>(1.0 / t_.scale)(rng_);
      case Kind::kPoisson: return static_cast<double>(std::poisson_distribution<int64_t>(t_.lam)(rng_));
      case Kind::kConstant: break;
    }
    return t_.mean;
  }

 private:
  enum class Kind { kConstant, kNormal, kUniform, kGamma, kExponential, kPoisson };
  static Kind KindOf(const ComputeTime& t) {
    if (t.type == "normal" && t.stdev > 0) return Kind::kNormal;
    if (t.type == "uniform") return Kind::kUniform;
    if (t.type == "gamma") return Kind::kGamma;
    if (t.type == "exponential") return Kind::kExponential;
    if (t.type == "poisson" && t.lam > 0) return Kind::kPoisson;
    return Kind::kConstant;  // constant, normal without spread, poisson with lam 0 (mean 0)
  }
  ComputeTime t_;
  Kind kind_;
  std::mt19937_64 rng_;
};

}  // namespace feedrate
