// MPI wrapper (OpenMPI) with a single-process fallback.
#include "emulator/host/comm.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "emulator/host/launch_watch.h"

#ifdef FEEDRATE_HAVE_MPI
#include <mpi.h>
#endif

namespace feedrate {

#ifdef FEEDRATE_HAVE_MPI

namespace {

constexpr int kRollCallTag = 0x5fee;   // rank 0 -> r: "which collective are you in?" {call id, the one rank 0 waits in}
constexpr int kRollReplyTag = 0x5fef;  // r -> rank 0: {call id, the collective number r waits in}

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

Comm::Comm(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    owns_mpi_ = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      // The step barrier calls MPI from whichever accelerator thread arrives last.
      MPI_Finalize();
      owns_mpi_ = false;
      throw std::runtime_error("the MPI library provides thread level " + std::to_string(provided) +
                               "; Feedrate needs MPI_THREAD_SERIALIZED or higher");
    }
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Every rank's hostname, for messages that name a rank.
  char name[64] = {};
  ::gethostname(name, sizeof name - 1);
  std::vector<char> all(64 * static_cast<size_t>(size_));
  MPI_Allgather(name, 64, MPI_CHAR, all.data(), 64, MPI_CHAR, MPI_COMM_WORLD);
  for (size_t r = 0; r < static_cast<size_t>(size_); ++r) {
    hosts_.emplace_back(all.data() + 64 * r, strnlen(all.data() + 64 * r, 63));
  }
  AnnounceJoined(rank_);  // (every rank is in the job: --hosts' launcher stops counting start-up)
  // Communicators for the hierarchical step barrier: one per host (by hostname, which is what Feedrate calls a
  // host everywhere), and one of the hosts' lowest ranks.
  std::vector<std::string> names = hosts_;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  num_hosts_ = static_cast<int>(names.size());
  const int color = static_cast<int>(std::lower_bound(names.begin(), names.end(), hosts_[static_cast<size_t>(rank_)]) - names.begin());
  MPI_Comm host = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank_, &host);
  MPI_Comm_split(MPI_COMM_WORLD, host_leader() ? 0 : MPI_UNDEFINED, rank_, &leaders);
  host_comm_ = MPI_Comm_c2f(host);
  leader_comm_ = MPI_Comm_c2f(leaders);
}

Comm::~Comm() {
  MPI_Comm host = MPI_Comm_f2c(host_comm_), leaders = MPI_Comm_f2c(leader_comm_);
  if (host != MPI_COMM_NULL) MPI_Comm_free(&host);
  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  if (owns_mpi_) MPI_Finalize();
}

void Comm::AnswerRollCall() const {
  if (rank_ == 0) return;
  for (;;) {  // a roll call rank 0 gave up on may still be queued ahead of the current one: answer both
    int flag = 0;
    MPI_Iprobe(0, kRollCallTag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (!flag) return;
    uint64_t call[2] = {0, 0};  // {roll call id, the collective rank 0 waits in}
    MPI_Recv(call, 2, MPI_UINT64_T, 0, kRollCallTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const uint64_t reply[2] = {call[0], seq_};
    MPI_Send(reply, 2, MPI_UINT64_T, 0, kRollReplyTag, MPI_COMM_WORLD);
    if (call[1] == seq_) roll_called_in_ = seq_;
  }
}

void Comm::Wait(void* request, const char* what) const {
  auto* req = static_cast<MPI_Request*>(request);
  if (timeout_s_ <= 0 || size_ == 1) {
    MPI_Wait(req, MPI_STATUS_IGNORE);
    return;
  }
  const double start = Now();
  const double deadline = start + timeout_s_;
  for (uint64_t spins = 0;; ++spins) {
    int done = 0;
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    AnswerRollCall();
    // Spin briefly (the step barrier usually completes within microseconds of the last arrival), then poll.
    if (spins > 2000) {
      if (Now() > deadline) {
        Overdue(req, what, start);
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

std::string Comm::Who(int rank) const {
  return "rank " + std::to_string(rank) + " (" + hosts_[static_cast<size_t>(rank)] + ")";
}

// Rank 0, the collective completed while it called the roll: name the rank that came late. A rank that had not
// answered when the collective completed was stuck outside MPI until then (its answer and its arrival race, so it
// may arrive first); if every rank answered, the last to answer is the one that arrived last.
void Comm::WarnLateArrival(const char* what, double started, double called,
                           const std::vector<double>& answered_after) const {
  std::string unanswered;
  int last = -1;
  for (int r = 1; r < size_; ++r) {
    const double after = answered_after[static_cast<size_t>(r)];
    if (after < 0) unanswered += (unanswered.empty() ? "" : ", ") + Who(r);
    if (after >= 0 && (last < 0 || after > answered_after[static_cast<size_t>(last)])) last = r;
  }
  char why[512];
  if (!unanswered.empty()) {
    std::snprintf(why, sizeof why, "%s came late (no answer to the roll call before the collective completed, "
                  "%.2f s after the call)", unanswered.c_str(), Now() - called);
  } else {
    std::snprintf(why, sizeof why, "%s came late (the last to answer the roll call, %.2f s after it)",
                  Who(last).c_str(), answered_after[static_cast<size_t>(last)]);
  }
  std::fprintf(stderr, "feedrate: warning: collective #%llu (%s) completed after %.1f s, beyond --collective-timeout "
               "(%d s), and the run goes on: %s\n",
               static_cast<unsigned long long>(seq_), what, Now() - started, static_cast<int>(timeout_s_), why);
}

void Comm::Overdue(void* request, const char* what, double started) const {
  auto* req = static_cast<MPI_Request*>(request);
  const std::string head = "collective #" + std::to_string(seq_) + " (" + what + ") did not complete within " +
                           std::to_string(static_cast<int>(timeout_s_)) + " s (--collective-timeout)";
  if (rank_ != 0) return OverdueAwayFromRoot(request, what, started, head);
  // Rank 0. When it was itself frozen past the deadline, the others have waited all along and the collective
  // completes at once: nothing to call (a waiting rank says that rank 0 came late).
  for (const double grace = Now() + 0.05; Now() < grace;) {
    if (Completed(req)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::fprintf(stderr, "feedrate: warning: %s; calling the roll (every rank says where it waits, 5 s)\n", head.c_str());
  std::fflush(stderr);
  RollCall roll = CallTheRoll(request);
  if (roll.completed) {
    WarnLateArrival(what, started, roll.called, roll.answered_after);
    return;
  }
  const std::string msg = head + ": " + RollCallVerdict(roll);
  std::fprintf(stderr, "feedrate: error: %s\n", msg.c_str());
  std::fflush(stderr);
  if (abort_hook_) abort_hook_(msg);
  AnnounceAbort(rank_);  // (--hosts' launcher ends mpirun if it waits for a lost host's daemon)
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::abort();
}

bool Comm::Completed(void* request) {
  int done = 0;
  MPI_Test(static_cast<MPI_Request*>(request), &done, MPI_STATUS_IGNORE);
  return done != 0;
}

// Not rank 0: rank 0 calls the roll and decides; keep answering it. The collective may still complete (a late rank
// arrives), and then the run goes on. Otherwise end the job from here: rank 0 is stuck outside MPI or dead.
void Comm::OverdueAwayFromRoot(void* request, const char* what, double started, const std::string& head) const {
  std::fprintf(stderr, "feedrate: warning: %s: %s; answering rank 0's roll call (10 s)\n", Who(rank_).c_str(), head.c_str());
  std::fflush(stderr);
  const double until = Now() + 10;
  while (Now() < until) {
    if (Completed(request)) {
      if (roll_called_in_ != seq_) {  // rank 0 never called the roll: it was the late one, only this rank saw it
        std::fprintf(stderr, "feedrate: warning: %s: collective #%llu (%s) completed after %.1f s, beyond "
                     "--collective-timeout (%d s), and rank 0 never called the roll: %s arrived that late\n",
                     Who(rank_).c_str(), static_cast<unsigned long long>(seq_), what, Now() - started,
                     static_cast<int>(timeout_s_), Who(0).c_str());
      }
      return;
    }
    AnswerRollCall();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::fprintf(stderr, "feedrate: error: %s: %s, and rank 0 (%s) did not call the roll: rank 0 is stuck outside MPI or dead\n",
               Who(rank_).c_str(), head.c_str(), hosts_[0].c_str());
  std::fflush(stderr);
  AnnounceAbort(rank_);  // (--hosts' launcher ends mpirun if it waits for a lost host's daemon)
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::abort();
}

// Rank 0 asks every other rank which collective it waits in and listens 5 s; silence means stuck outside MPI (or
// dead). Each call has its own id so that a late answer to an earlier roll call is not taken for this one.
Comm::RollCall Comm::CallTheRoll(void* request) const {
  roll_call_[0] = ++roll_calls_;
  roll_call_[1] = seq_;
  for (int r = 1; r < size_; ++r) {
    MPI_Request send;
    MPI_Isend(roll_call_, 2, MPI_UINT64_T, r, kRollCallTag, MPI_COMM_WORLD, &send);
    MPI_Request_free(&send);  // 16 bytes from a member buffer: completes on its own, nobody needs to wait for it
  }
  RollCall roll;
  roll.reply.assign(static_cast<size_t>(size_), UINT64_MAX);
  roll.answered_after.assign(static_cast<size_t>(size_), -1);
  roll.called = Now();
  while (!roll.completed && Now() < roll.called + 5) {
    roll.completed = Completed(request);  // a rank that arrives late, while the roll is called, lets it through
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kRollReplyTag, MPI_COMM_WORLD, &flag, &st);
    if (flag) {
      uint64_t answer[2] = {0, 0};
      MPI_Recv(answer, 2, MPI_UINT64_T, st.MPI_SOURCE, kRollReplyTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (answer[0] == roll_calls_) {
        roll.reply[static_cast<size_t>(st.MPI_SOURCE)] = answer[1];
        roll.answered_after[static_cast<size_t>(st.MPI_SOURCE)] = Now() - roll.called;
      }
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return roll;
}

// Who did not answer, and who answered from another collective.
std::string Comm::RollCallVerdict(const RollCall& roll) const {
  std::string missing, elsewhere;
  for (int r = 1; r < size_; ++r) {
    const uint64_t theirs = roll.reply[static_cast<size_t>(r)];
    if (roll.answered_after[static_cast<size_t>(r)] < 0) {
      missing += (missing.empty() ? "" : ", ") + Who(r);
    } else if (theirs != seq_) {
      elsewhere += (elsewhere.empty() ? "" : ", ") + Who(r) + " waits in collective #" + std::to_string(theirs);
    }
  }
  std::string msg;
  if (!missing.empty()) msg += missing + " did not answer (stuck outside MPI, e.g. in I/O, or dead)";
  if (!elsewhere.empty()) msg += (missing.empty() ? "" : "; ") + elsewhere + " (the ranks disagree on the work: a bug)";
  if (missing.empty() && elsewhere.empty()) msg += "every rank answered from this collective (the MPI transport is stuck)";
  return msg;
}

template <typename Start>
void Comm::Collective(const char* what, Start&& start) const {
  ++seq_;
  MPI_Request r;
  start(&r);
  Wait(&r, what);
}

void Comm::Barrier() const {
  Collective("barrier", [&](MPI_Request* r) { MPI_Ibarrier(MPI_COMM_WORLD, r); });
}

bool Comm::AnyTrue(bool local) const {
  return step_mode_ == StepBarrierMode::kHierarchical && size_ > 1 ? AnyTrueHierarchical(local) : AnyTrueFlat(local);
}

bool Comm::AnyTrueFlat(bool local) const {
  int in = local ? 1 : 0, out = 0;
  Collective("step barrier", [&](MPI_Request* r) { MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, r); });
  return out != 0;
}

bool Comm::AnyTrueHierarchical(bool local) const {
  // One collective in the sequence every rank counts (roll calls compare it), in three stages.
  ++seq_;
  const MPI_Comm host = MPI_Comm_f2c(host_comm_), leaders = MPI_Comm_f2c(leader_comm_);
  int in = local ? 1 : 0, on_host = 0, out = 0;
  MPI_Request r;
  MPI_Ireduce(&in, &on_host, 1, MPI_INT, MPI_MAX, 0, host, &r);
  Wait(&r, "step barrier (within the host)");
  if (leaders != MPI_COMM_NULL) {
    MPI_Iallreduce(&on_host, &out, 1, MPI_INT, MPI_MAX, leaders, &r);
    Wait(&r, "step barrier (across hosts)");
  }
  MPI_Ibcast(&out, 1, MPI_INT, 0, host, &r);
  Wait(&r, "step barrier (within the host)");
  return out != 0;
}

std::vector<double> Comm::TimeStepBarriers(StepBarrierMode mode, int rounds) const {
  std::vector<double> t;
  if (size_ == 1) return t;
  Barrier();
  t.reserve(static_cast<size_t>(rounds));
  for (int i = 0; i < rounds; ++i) {
    const double start = Now();
    if (mode == StepBarrierMode::kHierarchical) {
      AnyTrueHierarchical(false);
    } else {
      AnyTrueFlat(false);
    }
    t.push_back(Now() - start);
  }
  return t;
}

int Comm::LowestTrue(bool local) const {
  int in = local ? rank_ : size_, out = size_;
  Collective("error agreement", [&](MPI_Request* r) { MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, r); });
  return out == size_ ? -1 : out;
}

double Comm::SumDouble(double v) const {
  double out = 0;
  Collective("sum", [&](MPI_Request* r) { MPI_Iallreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, r); });
  return out;
}

void Comm::SumInPlace(std::vector<double>* v) const {
  Collective("epoch reduction", [&](MPI_Request* r) {
    MPI_Iallreduce(MPI_IN_PLACE, v->data(), static_cast<int>(v->size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, r);
  });
}

double Comm::MaxDouble(double v) const {
  double out = 0;
  Collective("max", [&](MPI_Request* r) { MPI_Iallreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, r); });
  return out;
}

std::vector<int> Comm::GatherCounts(int n) const {
  std::vector<int> counts(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  Collective("gather", [&](MPI_Request* r) { MPI_Igather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, r); });
  return counts;
}

namespace {
std::vector<int> Displacements(const std::vector<int>& counts, int* total) {
  std::vector<int> d(counts.size());
  *total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    d[r] = *total;
    *total += counts[r];
  }
  return d;
}
}  // namespace

std::vector<std::vector<double>> Comm::GatherDoubles(const std::vector<double>& local) const {
  const std::vector<int> counts = GatherCounts(static_cast<int>(local.size()));
  int total = 0;
  const std::vector<int> displs = Displacements(counts, &total);
  std::vector<double> all(static_cast<size_t>(total));
  Collective("gather", [&](MPI_Request* r) {
    MPI_Igatherv(local.data(), static_cast<int>(local.size()), MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, 0, MPI_COMM_WORLD, r);
  });
  std::vector<std::vector<double>> out;
  for (size_t k = 0; rank_ == 0 && k < counts.size(); ++k) {
    out.emplace_back(all.begin() + displs[k], all.begin() + displs[k] + counts[k]);
  }
  return out;
}

std::vector<std::string> Comm::GatherStrings(const std::string& local) const {
  const std::vector<int> counts = GatherCounts(static_cast<int>(local.size()));
  int total = 0;
  const std::vector<int> displs = Displacements(counts, &total);
  std::string all(static_cast<size_t>(total), '\0');
  Collective("gather", [&](MPI_Request* r) {
    MPI_Igatherv(local.data(), static_cast<int>(local.size()), MPI_CHAR, all.data(), counts.data(), displs.data(),
                 MPI_CHAR, 0, MPI_COMM_WORLD, r);
  });
  std::vector<std::string> out;
  for (size_t k = 0; rank_ == 0 && k < counts.size(); ++k) {
    out.push_back(all.substr(static_cast<size_t>(displs[k]), static_cast<size_t>(counts[k])));
  }
  return out;
}

std::string Comm::Broadcast(const std::string& value, int root) const {
  int n = static_cast<int>(value.size());
  Collective("broadcast", [&](MPI_Request* r) { MPI_Ibcast(&n, 1, MPI_INT, root, MPI_COMM_WORLD, r); });
  std::string out = rank_ == root ? value : std::string(static_cast<size_t>(n), '\0');
  Collective("broadcast", [&](MPI_Request* r) { MPI_Ibcast(out.data(), n, MPI_CHAR, root, MPI_COMM_WORLD, r); });
  return out;
}

std::string Comm::AgreeFirstError(const Status& local) const {
  const int bad = LowestTrue(!local.ok());
  if (bad < 0) return "";
  const std::string msg = Broadcast(rank_ == bad ? local.ToString() : "", bad);
  return size_ > 1 ? Who(bad) + ": " + msg : msg;
}

void Comm::FinalizeAndExit(int code) const {
  std::fflush(nullptr);
  if (owns_mpi_) MPI_Finalize();
  std::_Exit(code);
}

#else  // single process

std::string Comm::AgreeFirstError(const Status& local) const { return local.ok() ? "" : local.ToString(); }

void Comm::FinalizeAndExit(int code) const {
  std::fflush(nullptr);
  std::_Exit(code);
}

Comm::Comm(int*, char***) {
  char name[64] = {};
  ::gethostname(name, sizeof name - 1);
  hosts_.emplace_back(name);
}
Comm::~Comm() = default;
std::vector<double> Comm::TimeStepBarriers(StepBarrierMode, int) const { return {}; }
bool Comm::AnyTrueHierarchical(bool local) const { return local; }
bool Comm::AnyTrueFlat(bool local) const { return local; }
void Comm::Barrier() const {}
bool Comm::AnyTrue(bool local) const { return local; }
int Comm::LowestTrue(bool local) const { return local ? 0 : -1; }
double Comm::SumDouble(double v) const { return v; }
double Comm::MaxDouble(double v) const { return v; }
void Comm::SumInPlace(std::vector<double>*) const {}
std::vector<std::vector<double>> Comm::GatherDoubles(const std::vector<double>& local) const { return {local}; }
std::vector<std::string> Comm::GatherStrings(const std::string& local) const { return {local}; }
std::string Comm::Broadcast(const std::string& value, int) const { return value; }

#endif

}  // namespace feedrate
