// I/O-thread scheduling (thread_policy.h).
#include "loader/util/thread_policy.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

namespace feedrate {

const char* Name(IoThreadPolicy policy) {
  switch (policy) {
    case IoThreadPolicy::kNormal: return "normal";
    case IoThreadPolicy::kNice: return "nice";
    case IoThreadPolicy::kIdle: return "idle";
  }
  return "normal";
}

bool ApplyIoThreadPolicy(IoThreadPolicy policy) {
  switch (policy) {
    case IoThreadPolicy::kNormal:
      return true;
    case IoThreadPolicy::kNice:  // setpriority on a thread id sets that thread's nice value alone (Linux)
      return ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10) == 0;
    case IoThreadPolicy::kIdle: {
      sched_param p{};
      return ::sched_setscheduler(0, SCHED_IDLE, &p) == 0;  // pid 0: the calling thread
    }
  }
  return false;
}

}  // namespace feedrate
