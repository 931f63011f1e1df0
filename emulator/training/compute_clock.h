// The emulated accelerator's "compute": sleep to an absolute deadline, then spin the tail.
#pragma once

#include <time.h>

#include <cerrno>
#include <cstdint>

#include "loader/util/clock.h"

namespace feedrate {

// Sleeps until `deadline_ns` (steady clock): clock_nanosleep(TIMER_ABSTIME) to within `spin_ns`, then spins,
// so oversleep does not inflate the measured compute (DLIO's time.sleep overshoot counts as compute).
inline void SleepUntil(int64_t deadline_ns, int64_t spin_ns = 50'000) {
  int64_t wake = deadline_ns - spin_ns;
  if (wake > NowNs()) {
    timespec ts{static_cast<time_t>(wake / 1'000'000'000), static_cast<long>(wake % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  while (NowNs() < deadline_ns) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

}  // namespace feedrate
