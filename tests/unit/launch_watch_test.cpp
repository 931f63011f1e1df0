// --hosts' launcher watching mpirun (emulator/host/launch_watch.h), with a shell script in mpirun's place saying
// what the ranks would: output passed on without the announcements, start-up bounded and the hosts named, a job
// whose ranks ended but whose mpirun waits on ended, signals passed on.
#include "emulator/host/launch_watch.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace feedrate {
namespace {

struct Watched {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

// Runs `script` (sh) as the launcher's mpirun, ranks placed on `hosts`.
Watched Watch(const std::string& script, const std::vector<std::string>& hosts, LaunchWatchLimits limits) {
  std::FILE* out = std::tmpfile();
  Watched w;
  testing::internal::CaptureStderr();
  const auto t0 = std::chrono::steady_clock::now();
  w.code = RunWatched({"sh", "-c", script}, hosts, limits, fileno(out));
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  w.err = testing::internal::GetCapturedStderr();
  std::rewind(out);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) w.out.append(buf, n);
  std::fclose(out);
  return w;
}

LaunchWatchLimits Limits(double start, double grace) {
  LaunchWatchLimits l;
  l.start_timeout_s = start;
  l.end_grace_s = grace;
  return l;
}

TEST(LaunchWatch, PassesTheOutputOnWithoutTheAnnouncementsAndReturnsMpirunsCode) {
  const auto w = Watch("printf 'feedrate-launch: started 0\\nfeedrate-launch: joined 0\\nepoch 1/1: AU 99%%\\n';"
                       "printf 'feedrate-launch: joined 1\\n[1,0]<stdout>:feedrate-launch: end 0 3\\n';"
                       "printf 'AU 99.9%%: PASS\\nno newline'; exit 3",
                       {"h1", "h2"}, Limits(10, 10));
  EXPECT_EQ(w.code, 3) << w.err;
  EXPECT_EQ(w.out, "epoch 1/1: AU 99%\nAU 99.9%: PASS\nno newline");
  EXPECT_EQ(w.err, "");
}

// A host whose daemon never comes up (an ssh that hangs) and a rank that started but waits in MPI_Init: ended
// after --launch-timeout, each named with its host.
TEST(LaunchWatch, AJobThatDoesNotStartIsEndedNamingTheHosts) {
  const auto w = Watch("echo 'feedrate-launch: started 0'; echo 'feedrate-launch: joined 0';"
                       "echo 'feedrate-launch: started 1'; sleep 30",
                       {"h1", "h2", "h3", "h3"}, Limits(0.5, 10));
  EXPECT_EQ(w.code, 2);
  EXPECT_LT(w.seconds, 10);
  EXPECT_NE(w.err.find("did not start within 0.5 s (--launch-timeout)"), std::string::npos) << w.err;
  EXPECT_NE(w.err.find("never started on h3 (ranks 2-3)"), std::string::npos) << w.err;
  EXPECT_NE(w.err.find("started but never joined the job on h2 (rank 1)"), std::string::npos) << w.err;
}

// What mpirun started in a group of its own (an ssh to a host that never answers) goes with it: it would hold this
// command's output open.
TEST(LaunchWatch, WhatMpirunStartedIsEndedWithIt) {
  char path[] = "/tmp/feedrate-launch-watch-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const auto w = Watch(std::string("setsid sleep 30 & echo $! > ") + path + "; sleep 30", {"h1"}, Limits(0.5, 10));
  EXPECT_EQ(w.code, 2);
  std::FILE* f = std::fopen(path, "r");
  ASSERT_NE(f, nullptr);
  int pid = 0;
  ASSERT_EQ(std::fscanf(f, "%d", &pid), 1);
  std::fclose(f);
  ::unlink(path);
  // Gone, or a zombie its new parent has not reaped yet (state Z in /proc/PID/stat).
  auto alive = [pid] {
    std::FILE* st = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (st == nullptr) return false;
    char state = '?';
    const int got = std::fscanf(st, "%*d (%*[^)]) %c", &state);
    std::fclose(st);
    return got == 1 && state != 'Z' && state != 'X';
  };
  for (int i = 0; i < 100 && alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive()) << "the process mpirun started in its own group outlived it";
}

// mpirun that gives up by itself in start-up (a rank exited before joining): its code, and who never started.
TEST(LaunchWatch, AStartUpThatMpirunEndsNamesTheHostsThatNeverStarted) {
  const auto w = Watch("echo 'feedrate-launch: started 0'; exit 1", {"h1", "h2"}, Limits(10, 10));
  EXPECT_EQ(w.code, 1);
  EXPECT_NE(w.err.find("the job ended in start-up (mpirun exit 1): never started on h2 (rank 1)"), std::string::npos)
      << w.err;
  // No rank at all: mpirun waits for every host's daemon before it starts any; the hosts are the suspects.
  const auto none = Watch("sleep 30", {"h1", "h2"}, Limits(0.3, 10));
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no rank started: mpirun did not get its daemon up on every host (one of h1 (rank 0), h2 "
                          "(rank 1) does not answer"), std::string::npos) << none.err;
}

// Rank 0 ended (its record written), but mpirun waits for a lost host's daemon: ended after the grace, with rank
// 0's code; the same after an abort, with 2.
TEST(LaunchWatch, AJobWhoseRanksEndedIsEndedWhenMpirunWaitsOn) {
  const auto ended = Watch("echo 'feedrate-launch: joined 0'; echo 'feedrate-launch: joined 1';"
                           "echo 'feedrate-launch: end 0 3'; sleep 30",
                           {"h1", "h2"}, Limits(10, 0.3));
  EXPECT_EQ(ended.code, 3);
  EXPECT_LT(ended.seconds, 10);
  EXPECT_NE(ended.err.find("mpirun had not exited 0.3 s after rank 0 ended"), std::string::npos) << ended.err;
  const auto aborted = Watch("echo 'feedrate-launch: joined 0'; echo 'feedrate-launch: joined 1';"
                             "echo 'feedrate-launch: abort 1 2'; sleep 30",
                             {"h1", "h2"}, Limits(10, 0.3));
  EXPECT_EQ(aborted.code, 2);
  EXPECT_LT(aborted.seconds, 10);
  // A rank other than 0 ending is not the job's end.
  const auto other = Watch("echo 'feedrate-launch: joined 0'; echo 'feedrate-launch: joined 1';"
                           "echo 'feedrate-launch: end 1 0'; sleep 1; exit 0",
                           {"h1", "h2"}, Limits(10, 0.1));
  EXPECT_EQ(other.code, 0) << other.err;
}

TEST(LaunchWatch, SignalsArePassedOnToMpirun) {
  std::thread sender([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(::getpid(), SIGTERM);
  });
  const auto w = Watch("trap 'exit 42' TERM; echo 'feedrate-launch: joined 0'; sleep 30 & wait", {"h1"}, Limits(10, 10));
  sender.join();
  EXPECT_EQ(w.code, 42) << w.err;
  EXPECT_LT(w.seconds, 10);
}

}  // namespace
}  // namespace feedrate
