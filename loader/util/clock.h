// The one monotonic clock every part of Feedrate reads (steady_clock, in nanoseconds): engines, prefetcher, trainer,
// time series and progress all stamp with it, so their figures can be subtracted from each other.
#pragma once

#include <chrono>
#include <cstdint>

namespace feedrate {

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace feedrate
