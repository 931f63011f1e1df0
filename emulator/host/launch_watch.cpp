// --hosts' launcher watching mpirun, and the ranks' announcements it watches for (launch_watch.h).
#include "emulator/host/launch_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace feedrate {

namespace {

constexpr std::string_view kPrefix = "feedrate-launch: ";

bool Watched() {
  const char* v = std::getenv(kLaunchWatchEnv);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// "feedrate-launch: <what> <a> [<b>]\n" in one write.
void Announce(const char* what, long a, long b, bool with_b) {
  char line[96];
  const int n = with_b ? std::snprintf(line, sizeof line, "%.*s%s %ld %ld\n", static_cast<int>(kPrefix.size()),
                                       kPrefix.data(), what, a, b)
                       : std::snprintf(line, sizeof line, "%.*s%s %ld\n", static_cast<int>(kPrefix.size()),
                                       kPrefix.data(), what, a);
  if (n <= 0) return;
  std::fflush(stdout);  // (what the command printed before comes first)
  for (ssize_t off = 0; off < n;) {
    const ssize_t w = ::write(1, line + off, static_cast<size_t>(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    off += w;
  }
}

long RankFromEnvironment() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    const char* v = std::getenv(name);
    long r = -1;
    if (v != nullptr && std::from_chars(v, v + std::strlen(v), r).ec == std::errc()) return r;
  }
  return -1;
}

double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

volatile sig_atomic_t g_signal = 0;  // the last signal this process got, to pass on to mpirun
void OnSignal(int sig) { g_signal = sig; }

// The handlers for SIGINT, SIGTERM and SIGHUP while mpirun runs; the previous ones back at the end.
class ForwardedSignals {
 public:
  ForwardedSignals() {
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < kSignals.size(); ++k) sigaction(kSignals[k], &sa, &old_[k]);
  }
  ~ForwardedSignals() {
    for (size_t k = 0; k < kSignals.size(); ++k) sigaction(kSignals[k], &old_[k], nullptr);
  }
  ForwardedSignals(const ForwardedSignals&) = delete;
  ForwardedSignals& operator=(const ForwardedSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

// What the ranks said so far.
struct JobState {
  explicit JobState(size_t ranks) : started(ranks, 0), joined(ranks, 0) {}
  std::vector<char> started, joined;
  size_t joined_count = 0;
  bool ended = false;  // rank 0 ended, or a rank aborted: mpirun should exit now
  int code = 0;        // rank 0's exit code (2 after an abort)
  bool all_joined() const { return joined_count == joined.size(); }
};

// Applies one announcement ("started R", "joined R", "end R CODE", "abort R CODE").
void Take(std::string_view body, JobState* s) {
  const size_t space = body.find(' ');
  const std::string_view what = body.substr(0, space);
  long r = -1, code = 0;
  const char* p = body.data() + (space == std::string_view::npos ? body.size() : space + 1);
  const char* end = body.data() + body.size();
  auto [q, ec] = std::from_chars(p, end, r);
  if (ec != std::errc() || r < 0 || static_cast<size_t>(r) >= s->started.size()) return;
  if (q < end && *q == ' ') std::from_chars(q + 1, end, code);
  const auto k = static_cast<size_t>(r);
  if (what == "started") {
    s->started[k] = 1;
  } else if (what == "joined" && !s->joined[k]) {
    s->started[k] = s->joined[k] = 1;
    ++s->joined_count;
  } else if ((what == "end" && r == 0) || what == "abort") {
    if (!s->ended) s->code = what == "abort" ? 2 : static_cast<int>(code);
    s->ended = true;
  }
}

// mpirun's stdout, passed on to `out_fd` without the announcements (which may sit anywhere in a line: a tag
// mpirun puts before it goes with it).
class OutputFilter {
 public:
  explicit OutputFilter(int out_fd) : out_(out_fd) {}
  void Feed(const char* data, size_t n, JobState* s) {
    pending_.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string_view line(pending_.data() + start, nl - start);
      const size_t at = line.find(kPrefix);
      if (at == std::string_view::npos) {
        Write(pending_.data() + start, nl + 1 - start);
      } else {
        Take(line.substr(at + kPrefix.size()), s);
      }
    }
    pending_.erase(0, start);
    // The part of a partial line that cannot become an announcement goes now (a line without its end yet).
    const size_t keep = MarkerStart(pending_);
    Write(pending_.data(), keep);
    pending_.erase(0, keep);
  }
  void Flush() {
    Write(pending_.data(), pending_.size());
    pending_.clear();
  }

 private:
  // Where an announcement may begin in a line without its end: at kPrefix, or at a tail that kPrefix begins with.
  static size_t MarkerStart(const std::string& text) {
    const size_t at = text.find(kPrefix);
    if (at != std::string::npos) return at;
    for (size_t k = std::min(text.size(), kPrefix.size() - 1); k > 0; --k) {
      if (std::string_view(text).substr(text.size() - k) == kPrefix.substr(0, k)) return text.size() - k;
    }
    return text.size();
  }
  void Write(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(out_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;  // (nobody reads: the bytes are dropped, the job goes on)
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  int out_;
  std::string pending_;
};

// SIGTERM to mpirun's process group, then SIGKILL after 5 s. Returns mpirun's wait status.
int EndGroup(pid_t pid) {
  ::kill(-pid, SIGTERM);
  int status = 0;
  for (const double until = SteadyNow() + 5; SteadyNow() < until;) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Every process below `pid` (/proc/<p>/task/<t>/children, recursively).
std::vector<pid_t> Descendants(pid_t pid) {
  std::vector<pid_t> out;
  std::vector<pid_t> todo{pid};
  while (!todo.empty() && out.size() < 100000) {
    const pid_t p = todo.back();
    todo.pop_back();
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(p) + "/task", ec)) {
      std::ifstream in(task.path() / "children");
      for (pid_t c; in >> c;) {
        out.push_back(c);
        todo.push_back(c);
      }
    }
  }
  return out;
}

// Ends mpirun's process group: SIGTERM, then SIGKILL after 5 s; then whatever it started that outlived it in
// groups of their own (an ssh to a host that never answered holds this command's stderr open). Returns its wait
// status.
int EndProcessGroup(pid_t pid) {
  const std::vector<pid_t> below = Descendants(pid);
  const int status = EndGroup(pid);
  for (const pid_t p : below) ::kill(p, SIGKILL);
  return status;
}

// "frh3 (rank 2), frh4 (ranks 3-4)" for the ranks whose flag in `which` is `value`.
std::string RanksByHost(const std::vector<std::string>& rank_hosts, const std::vector<char>& which, char value) {
  std::string out;
  for (size_t r = 0; r < which.size();) {
    if (which[r] != value) {
      ++r;
      continue;
    }
    size_t last = r;
    while (last + 1 < which.size() && which[last + 1] == value && rank_hosts[last + 1] == rank_hosts[r]) ++last;
    out += (out.empty() ? "" : ", ") + rank_hosts[r] + (last == r ? " (rank " + std::to_string(r) + ")"
                                                                  : " (ranks " + std::to_string(r) + "-" + std::to_string(last) + ")");
    r = last + 1;
  }
  return out;
}

// Why the job is not (yet) in training: the hosts whose ranks never started, and those that started but never
// joined the MPI job.
std::string StartupVerdict(const std::vector<std::string>& rank_hosts, const JobState& s) {
  std::vector<char> waiting(s.started.size(), 0);
  for (size_t r = 0; r < waiting.size(); ++r) waiting[r] = s.started[r] && !s.joined[r];
  std::string out;
  const std::string never = RanksByHost(rank_hosts, s.started, 0);
  if (std::find(s.started.begin(), s.started.end(), 1) == s.started.end()) {  // (mpirun starts ranks once every daemon is up)
    return "no rank started: mpirun did not get its daemon up on every host (one of " + never +
           " does not answer, or an ssh there waits for a password or a host key: `ssh -o BatchMode=yes HOST true` "
           "tells which)";
  }
  if (!never.empty()) {
    out += "never started on " + never + " (mpirun could not start them there: a host that does not answer, an ssh "
           "waiting for a password or a host key, or a feedrate there that is not this one)";
  }
  const std::string stuck = RanksByHost(rank_hosts, waiting, 1);
  if (!stuck.empty()) out += (out.empty() ? "" : "; ") + std::string("started but never joined the job on ") + stuck;
  return out;
}

int ExitCodeOf(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// The child: its own process group (so a terminal's Ctrl-C reaches this process, which passes it on once), stdin
// from /dev/null (mpirun would read the terminal from a background group and be stopped), ended with its parent.
[[noreturn]] void ExecChild(const std::vector<std::string>& argv, int out_write, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(127);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) ::dup2(null, 0);
  ::dup2(out_write, 1);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "feedrate: error: cannot start %s: %s\n", args[0], std::strerror(errno));
  ::_exit(127);
}

}  // namespace

void AnnounceStarted() {
  if (Watched()) Announce("started", RankFromEnvironment(), 0, false);
}

void AnnounceJoined(int rank) {
  if (Watched()) Announce("joined", rank, 0, false);
}

void AnnounceEnd(int code) {
  if (Watched()) Announce("end", RankFromEnvironment(), code, true);
}

void AnnounceAbort(int rank) {
  if (!Watched()) return;
  Announce("abort", rank, 2, true);
  // MPI_Abort comes next and kills this process: the line gets time to leave through mpirun's daemon first.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

int RunWatched(const std::vector<std::string>& argv, const std::vector<std::string>& rank_hosts,
               const LaunchWatchLimits& limits, int out_fd) {
  int fds[2];
  if (argv.empty() || ::pipe2(fds, O_CLOEXEC) != 0) return 127;
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    std::fprintf(stderr, "feedrate: error: cannot start %s: %s\n", argv[0].c_str(), std::strerror(errno));
    return 127;
  }
  if (pid == 0) ExecChild(argv, fds[1], parent);
  ::setpgid(pid, pid);  // (both sides set it: whichever runs first)
  ::close(fds[1]);
  ForwardedSignals forwarding;
  JobState s(rank_hosts.size());
  OutputFilter filter(out_fd);
  const double start_deadline = limits.start_timeout_s > 0 ? SteadyNow() + limits.start_timeout_s : 0;
  double grace_until = 0;
  int fd = fds[0];
  char buf[65536];
  for (;;) {
    if (g_signal != 0) {
      ::kill(-pid, g_signal);
      g_signal = 0;
    }
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) filter.Feed(buf, static_cast<size_t>(n), &s);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
          ::close(fd);
          fd = -1;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (fd >= 0) {  // what is left in the pipe (a child of mpirun may hold it open: no blocking read)
        ::fcntl(fd, F_SETFL, O_NONBLOCK);
        for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) filter.Feed(buf, static_cast<size_t>(n), &s);
        ::close(fd);
      }
      filter.Flush();
      const int code = ExitCodeOf(status);
      if (!s.all_joined() && !s.ended && code != 0) {
        std::fprintf(stderr, "feedrate: error: the job ended in start-up (mpirun exit %d): %s\n", code,
                     StartupVerdict(rank_hosts, s).c_str());
      }
      return code;
    }
    const double now = SteadyNow();
    if (s.ended && grace_until == 0) grace_until = now + limits.end_grace_s;
    if (!s.all_joined() && !s.ended && start_deadline > 0 && now > start_deadline) {
      filter.Flush();
      std::fprintf(stderr, "feedrate: error: the job did not start within %g s (--launch-timeout): %s; ending mpirun\n",
                   limits.start_timeout_s, StartupVerdict(rank_hosts, s).c_str());
      std::fflush(stderr);
      if (fd >= 0) ::close(fd);
      EndProcessGroup(pid);
      return 2;
    }
    if (grace_until > 0 && now > grace_until) {
      filter.Flush();
      std::fprintf(stderr, "feedrate: warning: mpirun had not exited %g s after rank 0 ended (it waits for every "
                           "host's daemon, and a host lost mid-run never answers); ending it\n", limits.end_grace_s);
      std::fflush(stderr);
      if (fd >= 0) ::close(fd);
      EndProcessGroup(pid);
      return s.code;
    }
  }
}

}  // namespace feedrate
