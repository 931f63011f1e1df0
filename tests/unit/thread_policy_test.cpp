// ApplyIoThreadPolicy: each policy really changes (only) the calling thread's scheduling.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <thread>

#include "loader/util/thread_policy.h"

namespace feedrate {
namespace {

struct Seen {
  int nice = 0;
  int policy = -1;
  bool applied = false;
};

Seen OnANewThread(IoThreadPolicy p) {
  Seen s;
  std::thread([&] {
    s.applied = ApplyIoThreadPolicy(p);
    s.nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    s.policy = ::sched_getscheduler(0);
  }).join();
  return s;
}

TEST(IoThreadPolicy, NiceIdleAndNormalApplyToTheCallingThreadOnly) {
  const int own_nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  const int own_policy = ::sched_getscheduler(0);
  Seen normal = OnANewThread(IoThreadPolicy::kNormal);
  EXPECT_TRUE(normal.applied);
  EXPECT_EQ(normal.nice, own_nice);
  EXPECT_EQ(normal.policy, own_policy);
  if (own_nice < 10) {  // lowering a thread's priority needs no privilege
    Seen nice = OnANewThread(IoThreadPolicy::kNice);
    EXPECT_TRUE(nice.applied);
    EXPECT_EQ(nice.nice, 10);
  }
  Seen idle = OnANewThread(IoThreadPolicy::kIdle);
  EXPECT_TRUE(idle.applied);
  EXPECT_EQ(idle.policy, SCHED_IDLE);
  // The calling (test) thread is untouched by what the other threads did.
  EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())), own_nice);
  EXPECT_EQ(::sched_getscheduler(0), own_policy);
}

}  // namespace
}  // namespace feedrate
