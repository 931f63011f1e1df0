// The sweep's child processes: each point's `feedrate run`, and the ceiling's `feedrate iobench` (sweep_launch.h).
#include "emulator/sweep/sweep_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "loader/util/exit_codes.h"

namespace feedrate {
namespace {

namespace fs = std::filesystem;

volatile sig_atomic_t g_child = 0;  // the run in progress, for forwarding SIGTERM

void ForwardTerm(int sig) {
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

}  // namespace

int SpawnLogged(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  struct sigaction ignore {}, forward {}, old_int {}, old_term {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = ForwardTerm;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGTERM, &forward, &old_term);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    return -err;
  }
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);  // ignored dispositions survive exec
    ::signal(SIGTERM, SIG_DFL);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);  // never through a planted symlink
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "feedrate sweep: cannot start %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  g_child = pid;
  int status = 0;
  int rc = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      rc = -errno;
      break;
    }
  }
  g_child = 0;
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (rc != 0) return rc;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string LastErrorLine(const std::string& log) {
  std::ifstream in(log);
  std::string line, last_error, first_words;
  while (std::getline(in, line)) {
    if (line.find("error") != std::string::npos) last_error = line;
    if (first_words.empty() && std::any_of(line.begin(), line.end(), [](unsigned char c) { return std::isalpha(c); })) {
      first_words = line;
    }
  }
  return !last_error.empty() ? last_error : !first_words.empty() ? first_words : "no output";
}

Result<double> MeasureStorageCeiling(const std::string& exe, const WorkloadConfig& cfg, bool odirect,
                                     const std::string& results_dir) {
  std::error_code ec;
  std::string largest;
  uintmax_t size = 0;
  for (fs::recursive_directory_iterator it(cfg.data_folder + "/train", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && it->file_size(ec) > size) {
      size = it->file_size(ec);
      largest = it->path().string();
    }
  }
  const uint64_t bs = std::max<uint64_t>(4096, cfg.transfer_size);
  if (largest.empty() || size < bs) {
    return Status::NotFound("no training file of at least " + std::to_string(bs) + " bytes under " + cfg.data_folder + "/train");
  }
  const std::string dir = results_dir + "/ceiling";
  fs::create_directories(dir, ec);
  // Threads as the loader runs them: one per CPU for buffered copies; for O_DIRECT as many as its I/O-thread cap
  // (4 per CPU, at most 16), since devices and network storage often scale with concurrent streams.
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t threads = std::min<uint64_t>(size / bs, odirect ? std::min(16u, 4 * cpus) : std::min(8u, cpus));
  // Buffered reads are CPU copies (one in flight per thread is best); O_DIRECT needs depth: the deepest of two
  // depths is kept, so the ceiling is what the storage gives, not what one queue depth gives.
  std::vector<std::string> argv = {exe, "iobench", "--path", largest, "--rw", "read", "--bs", std::to_string(bs),
                                   "--qd", odirect ? "16,64" : "1", "--threads", std::to_string(threads),
                                   "--size", std::to_string(size / bs * bs), "--runtime", "3", "--results-dir", dir};
  if (odirect) argv.push_back("--direct");
  const int code = SpawnLogged(argv, dir + "/iobench.log");
  std::ifstream in(dir + "/iobench.json");
  if (code == 0 && in) {
    auto j = nlohmann::json::parse(in, nullptr, false);
    double best = 0;
    if (!j.is_discarded()) {
      for (const auto& cell : j.value("cells", nlohmann::json::array())) best = std::max(best, cell.value("mib_per_s", 0.0));
    }
    if (best > 0) return best;
  }
  return Status::IoError(largest + ": " + LastErrorLine(dir + "/iobench.log"));
}

std::vector<std::string> SweepPointLauncher::Argv(uint64_t total, const std::string& run_dir) const {
  std::vector<std::string> argv;
  const uint64_t per_host = total / hosts;
  const uint64_t ranks_per_host = mode == "ranks" ? per_host : 1;
  if (!host_names.empty()) {  // run's own --hosts: its launcher watches mpirun (start-up bounded, lost hosts ended)
    std::string list, launcher;
    for (const auto& h : host_names) list += (list.empty() ? "" : ",") + h + ":" + std::to_string(ranks_per_host);
    for (const auto& w : mpirun) launcher += (launcher.empty() ? "" : " ") + w;
    argv = {exe, "run", "--hosts", list, "--mpirun", launcher};
  } else if (mode == "ranks") {
    argv = mpirun;
    argv.insert(argv.end(), {"-np", std::to_string(ranks_per_host), exe, "run"});
  } else {
    argv = {exe, "run"};
  }
  const uint64_t per_rank = mode == "ranks" ? 1 : per_host;
  argv.insert(argv.end(),
              {"-w", workload, "--data-dir", data_dir, "-n", std::to_string(per_rank), "--results-dir", run_dir});
  argv.insert(argv.end(), forwarded.begin(), forwarded.end());
  return argv;
}

SweepRun SweepPointLauncher::Run(uint64_t total, int repeat) const {
  SweepRun run;
  run.results_dir = results_dir + "/n" + std::to_string(total) + "_r" + std::to_string(repeat);
  std::error_code ec;
  fs::remove_all(run.results_dir, ec);
  fs::create_directories(run.results_dir, ec);
  const std::string log = run.results_dir + ".log";  // beside its folder: the run claims an empty one
  run.exit_code = SpawnLogged(Argv(total, run.results_dir), log);
  std::ifstream in(run.results_dir + "/summary.json");
  if (in) {
    try {
      FillSweepRun(nlohmann::json::parse(in), &run);
    } catch (const std::exception& e) {
      if (run.exit_code == kExitPass || run.exit_code == kExitMissedAu) run.exit_code = kExitError;
      run.error = run.results_dir + "/summary.json: " + e.what();
    }
  }
  if (run.exit_code < 0) {
    run.error = std::string("cannot start the run: ") + std::strerror(-run.exit_code);
  } else if (run.exit_code != kExitPass && run.exit_code != kExitMissedAu && run.error.empty()) {
    run.error = LastErrorLine(log) + " (" + log + ")";
  }
  return run;
}

}  // namespace feedrate
