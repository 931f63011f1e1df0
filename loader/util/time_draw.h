// A time drawn from one of DLIO's distributions (train.computation_time, reader.preprocess_time): the parsed
// distribution and a seeded draw of it (|draw|, as DLIO's utility.sleep takes abs()).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace feedrate {

// A scalar, {mean, stdev} (normal, |draw|, as DLIO v2.0) or a typed distribution
// {type: normal|uniform|gamma|exponential|poisson} with numpy's parameter names (min/max, shape/scale, scale, lam).
struct TimeDistribution {
  std::string type = "constant";  // constant | normal | uniform | gamma | exponential | poisson
  double mean = 0.0;   // seconds (the distribution's mean for the typed ones)
  double stdev = 0.0;  // normal
  double min = 0.0, max = 0.0;      // uniform
  double shape = 0.0, scale = 0.0;  // gamma (shape, scale); exponential (scale)
  double lam = 0.0;                 // poisson
};

// Seeded draws, so runs repeat; numpy's streams are not reproduced (DLIO's are unseeded anyway). No allocation per
// draw; not thread-safe (one per thread or per owner).
class TimeDraw {
 public:
  // Keeps a copy of `t`; the distribution's name is resolved once, not per draw.
  TimeDraw(const TimeDistribution& t, uint64_t seed) : t_(t), kind_(KindOf(t)), rng_(seed) {}
  // True where every draw is 0 (nothing to wait for).
  bool zero() const { return AlwaysZero(t_); }
  static bool AlwaysZero(const TimeDistribution& t) { return KindOf(t) == Kind::kConstant && t.mean <= 0; }
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
  static Kind KindOf(const TimeDistribution& t) {
    if (t.type == "normal" && t.stdev > 0) return Kind::kNormal;
    if (t.type == "uniform") return Kind::kUniform;
    if (t.type == "gamma") return Kind::kGamma;
    if (t.type == "exponential") return Kind::kExponential;
    if (t.type == "poisson" && t.lam > 0) return Kind::kPoisson;
    return Kind::kConstant;  // constant, normal without spread, poisson with lam 0 (mean 0)
  }
  TimeDistribution t_;
  Kind kind_;
  std::mt19937_64 rng_;
};

}  // namespace feedrate
