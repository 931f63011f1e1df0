// SCHED_IDLE for the I/O threads (thread_policy.h).
#include "loader/util/thread_policy.h"

#include <sched.h>

namespace feedrate {

bool RunInIdleClass() {
  sched_param p{};
  p.sched_priority = 0;
  return ::sched_setscheduler(0, SCHED_IDLE, &p) == 0;  // pid 0: the calling thread
}

}  // namespace feedrate
