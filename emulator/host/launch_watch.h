// --hosts' launcher and its ranks. The launcher runs mpirun as its child (not in its place) and watches the job: the
// ranks say on stdout when they start, join the job and end (only when the launcher asked: FEEDRATE_LAUNCH_WATCH in
// their environment), and the launcher ends a job that does not start, or does not end after rank 0 did, within
// stated bounds, naming the ranks and hosts. Those lines never reach the user; every other byte passes on.
#pragma once

#include <string>
#include <vector>

namespace feedrate {

// The environment variable the launcher gives the ranks (mpirun -x NAME=1).
inline constexpr const char* kLaunchWatchEnv = "FEEDRATE_LAUNCH_WATCH";

// The ranks' side: each writes one line to stdout in one write(2), only when the launcher asked; allocation-free
// (AnnounceAbort runs on the abort path). AnnounceStarted takes the rank from the launcher's environment
// (OMPI_COMM_WORLD_RANK, else PMIX_RANK): it runs before MPI_Init.
void AnnounceStarted();                // at process start, before MPI_Init
void AnnounceJoined(int rank);         // after MPI_Init and the first collective (every rank is in the job)
void AnnounceEnd(int code);            // the command's exit code, after MPI_Finalize (rank as AnnounceStarted)
void AnnounceAbort(int rank);          // just before MPI_Abort: the job is ending with exit code 2

struct LaunchWatchLimits {
  // Every rank joined by then, or the job is ended naming the ranks and hosts that never started or never joined
  // (--launch-timeout); 0: wait forever.
  double start_timeout_s = 120;
  // After rank 0 ended, or any rank aborted: mpirun's time to exit by itself (it waits for every daemon, a lost
  // host's too) before it is ended; then SIGTERM, and SIGKILL 5 s later.
  double end_grace_s = 10;
};

// Runs `argv` (mpirun and its arguments, which must give the ranks kLaunchWatchEnv) as a child in its own process
// group with stdin from /dev/null; its stdout goes to `out_fd` without the ranks' announcements, its stderr as is;
// SIGINT, SIGTERM and SIGHUP sent to this process are passed on to it. `rank_hosts[r]`: the host rank r is placed on
// (mpirun's slot order), to name it. Returns the job's exit code: mpirun's when it exits by itself; rank 0's (2 after
// an abort) when it had to be ended after the ranks ended; 2 when start-up timed out (said on stderr); 127 when
// mpirun cannot be started. Call from the one thread of a process that has started no other.
int RunWatched(const std::vector<std::string>& argv, const std::vector<std::string>& rank_hosts,
               const LaunchWatchLimits& limits, int out_fd = 1);

}  // namespace feedrate
