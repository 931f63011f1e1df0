// The emulator's view of MPI: rank, size, barrier-with-agreement and the few collectives results need.
// Built without MPI (FEEDRATE_WITH_MPI=OFF) it is a single process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loader/status.h"

namespace feedrate {

// How the per-step agreement travels: flat (one MPI_Allreduce over every rank) or hierarchical (a reduce within
// each host, one allreduce among the hosts' lowest ranks, a broadcast within each host).
enum class StepBarrierMode { kFlat, kHierarchical };

class Comm {
 public:
  // Initialises MPI (thread level SERIALIZED: the step barrier runs MPI from whichever accelerator thread
  // arrives last). Safe without mpirun (singleton).
  Comm(int* argc, char*** argv);
  ~Comm();  // MPI_Finalize
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // Every collective below gives up after `seconds` (0: waits forever): rank 0 calls the roll, and unless the
  // collective completes within that roll call (a late rank arrived: a warning), the job ends (MPI_Abort, exit
  // code 2) with a message naming the rank(s) and host(s) that did not arrive.
  void SetCollectiveTimeout(double seconds) { timeout_s_ = seconds; }
  double collective_timeout() const { return timeout_s_; }
  // Rank 0 calls `hook` with the watchdog's message just before it ends the job (from the thread that waited), so
  // the run can leave a failed-run record; empty: none.
  void SetAbortHook(std::function<void(const std::string& message)> hook) { abort_hook_ = std::move(hook); }
  // Ends this process with `code` without unwinding (after MPI_Finalize, which the other ranks reach through ~Comm):
  // for a run whose I/O threads may still write into its memory (a read that never completed), so that nothing
  // of it is freed under them. Flushes stdio first.
  [[noreturn]] void FinalizeAndExit(int code) const;
  const std::string& hostname(int rank) const { return hosts_[static_cast<size_t>(rank)]; }
  // The lowest rank on this rank's host: the one that does host-wide work (device counters, system cache drop).
  bool host_leader() const {
    for (int r = 0; r < rank_; ++r) {
      if (hostname(r) == hostname(rank_)) return false;
    }
    return true;
  }

  // The ranks on this rank's host, itself included.
  int ranks_on_host() const {
    int n = 0;
    for (int r = 0; r < size_; ++r) n += hostname(r) == hostname(rank_) ? 1 : 0;
    return n;
  }

  int num_hosts() const { return num_hosts_; }
  // The mode AnyTrue uses (default flat). Hierarchical pays off with several hosts and several ranks per host.
  void SetStepBarrier(StepBarrierMode mode) { step_mode_ = mode; }
  StepBarrierMode step_barrier() const { return step_mode_; }
  // Every rank calls this together: `rounds` step agreements in `mode`, each timed on this rank (seconds), after a
  // barrier that lines the ranks up. The measured cost of one step's agreement when nobody is late.
  std::vector<double> TimeStepBarriers(StepBarrierMode mode, int rounds) const;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  void Barrier() const;
  // Barrier that also agrees on a flag: true on every rank if it was true on any. The step barrier.
  bool AnyTrue(bool local) const;
  // Lowest rank whose flag is true, or -1.
  int LowestTrue(bool local) const;
  double SumDouble(double v) const;
  // Element-wise sum over ranks, in place, on every rank.
  void SumInPlace(std::vector<double>* v) const;
  double MaxDouble(double v) const;
  // Rank 0 receives every rank's vector (others get an empty result).
  std::vector<std::vector<double>> GatherDoubles(const std::vector<double>& local) const;
  std::vector<std::string> GatherStrings(const std::string& local) const;
  // `root`'s string on every rank.
  std::string Broadcast(const std::string& value, int root) const;
  // Every rank calls this together with its own status: the first (lowest-ranked) failure's message on every rank,
  // "rank N (host): message" with several ranks, or "" when no rank failed.
  std::string AgreeFirstError(const Status& local) const;

 private:
  // Waits for a non-blocking collective, answering roll calls, within the timeout (see SetCollectiveTimeout).
  void Wait(void* request, const char* what) const;
  // Counts the collective, starts it (start(MPI_Request*)) and waits for it (defined and used in comm.cpp).
  template <typename Start>
  void Collective(const char* what, Start&& start) const;
  // The timeout ran out: call the roll (rank 0) or answer it (others). Returns if the collective completes
  // meanwhile (a late rank arrived; rank 0 warns naming it), otherwise ends the job naming who did not arrive.
  void Overdue(void* request, const char* what, double started) const;
  // Overdue's phases: a rank other than 0 answers roll calls until the collective completes or 10 s pass; rank 0
  // calls the roll (RollCall: each rank's answer and when) and words the verdict.
  struct RollCall {
    bool completed = false;  // the collective completed while the roll was called
    double called = 0;       // when
    std::vector<uint64_t> reply;        // per rank: the collective it waits in (UINT64_MAX: no answer)
    std::vector<double> answered_after;  // per rank: seconds after the call (-1: no answer)
  };
  static bool Completed(void* request);  // MPI_Test on an MPI_Request*
  void OverdueAwayFromRoot(void* request, const char* what, double started, const std::string& head) const;
  RollCall CallTheRoll(void* request) const;
  std::string RollCallVerdict(const RollCall& roll) const;
  void WarnLateArrival(const char* what, double started, double called, const std::vector<double>& answered_after) const;
  void AnswerRollCall() const;  // answers any roll calls rank 0 sent
  std::string Who(int rank) const;  // "rank 3 (node7)"
  std::vector<int> GatherCounts(int n) const;  // every rank's count at rank 0

  bool AnyTrueFlat(bool local) const;
  bool AnyTrueHierarchical(bool local) const;

  int rank_ = 0;
  int size_ = 1;
  int num_hosts_ = 1;
  StepBarrierMode step_mode_ = StepBarrierMode::kFlat;
  int host_comm_ = 0;    // Fortran handles (MPI_Comm_c2f) of the ranks on this host and of the hosts' lowest
  int leader_comm_ = 0;  // ranks (the latter: MPI_COMM_NULL's handle on other ranks); kept MPI-free here
  bool owns_mpi_ = false;
  double timeout_s_ = 0;
  std::function<void(const std::string&)> abort_hook_;
  mutable uint64_t seq_ = 0;         // collectives entered so far (the same sequence on every rank)
  mutable uint64_t roll_calls_ = 0;  // rank 0: roll calls made so far (each call's id)
  mutable uint64_t roll_called_in_ = 0;  // others: the last collective rank 0 called the roll from, as answered
  mutable uint64_t roll_call_[2] = {0, 0};  // rank 0: the last call's message, alive while its sends are
  std::vector<std::string> hosts_;  // every rank's hostname
};

}  // namespace feedrate
