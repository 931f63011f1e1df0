// Multi-host launch: --hosts/--hostfile parsing and the re-exec under mpirun.
#include "cli/launch.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "emulator/host/launch_watch.h"
#include "loader/util/exit_codes.h"

namespace feedrate::cli {

namespace {

constexpr uint64_t kMaxRanksPerHost = 4096;

uint64_t ParseSlots(const std::string& text, const std::string& where) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v == 0) {
    throw std::invalid_argument(where + ": slot count '" + text + "' is not a positive integer");
  }
  if (v > kMaxRanksPerHost) {  // (mpirun would start them all: 100,000 processes on one host)
    throw std::invalid_argument(where + ": slot count '" + text + "' is more than the " + std::to_string(kMaxRanksPerHost) +
                                " ranks a host runs (each rank emulates up to 4096 accelerators with -n)");
  }
  return v;
}

bool InsideMpiJob() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_RANK") != nullptr;
}

}  // namespace

std::vector<std::string> SplitWords(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

std::string SelfExe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("feedrate") : p.string();
}

std::vector<HostSlots> ParseHostList(const std::string& list) {
  std::vector<HostSlots> out;
  for (const auto& item : SplitWords(list, ',')) {
    HostSlots h;
    const size_t colon = item.find(':');
    h.name = item.substr(0, colon);
    if (h.name.empty()) throw std::invalid_argument("--hosts: empty host name in '" + list + "'");
    if (colon != std::string::npos) h.slots = ParseSlots(item.substr(colon + 1), "--hosts " + item);
    out.push_back(h);
  }
  if (out.empty()) throw std::invalid_argument("--hosts: no host in '" + list + "'");
  return out;
}

std::vector<HostSlots> ReadHostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--hostfile " + path + ": " + std::strerror(errno));
  std::vector<HostSlots> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string word;
    if (!(words >> word)) continue;
    HostSlots h;
    h.name = word;
    const std::string where = path + ":" + std::to_string(n);
    while (words >> word) {
      if (word.starts_with("slots=")) {
        h.slots = ParseSlots(word.substr(6), where);
      } else if (!word.starts_with("max_slots=") && !word.starts_with("max-slots=")) {
        std::string why = where;
        why.append(": unknown hostfile field '").append(word).append("' (expected slots=N or max_slots=N)");
        throw std::invalid_argument(why);
      }
    }
    out.push_back(h);
  }
  if (out.empty()) throw std::invalid_argument("--hostfile " + path + ": no hosts in the file");
  return out;
}

void LaunchArgs::Register(CLI::App* app) {
  app->add_option("--hosts", hosts, "h1:ranks,h2:ranks: start this command under mpirun on these hosts (one command "
                                    "line for a multi-host job; give the same accelerators on every host)");
  app->add_option("--hostfile", hostfile, "an OpenMPI hostfile (name slots=N per line): as --hosts")
      ->excludes(app->get_option("--hosts"));
  app->add_option("--mpirun", mpirun, "the launcher --hosts/--hostfile use (default \"mpirun --bind-to none\"; add "
                                      "--mca settings here)");
  app->add_option("--launch-timeout", launch_timeout,
                  "with --hosts/--hostfile: seconds every rank has to start and join the job before it is ended, "
                  "naming the hosts whose ranks never started or never joined (default 120; 0: wait forever)")
      ->check(CLI::Range(0.0, 1e6));
}

std::vector<HostSlots> LaunchArgs::Hosts() const {
  if (!hosts.empty()) return ParseHostList(hosts);
  if (!hostfile.empty()) return ReadHostfile(hostfile);
  return {};
}

int RelaunchUnderMpirun(const LaunchArgs& launch, int argc, char** argv) {
  if (InsideMpiJob()) {
    std::fprintf(stderr, "feedrate: error: --hosts/--hostfile start mpirun themselves; this process is already an MPI "
                         "rank (drop them, or run without mpirun)\n");
    return kExitError;
  }
  std::vector<HostSlots> hosts;
  try {
    hosts = launch.Hosts();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "feedrate: error: %s\n", e.what());
    return kExitError;
  }
  uint64_t ranks = 0;
  std::string host_arg;
  for (const auto& h : hosts) {
    ranks += h.slots;
    host_arg += (host_arg.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  }
  std::vector<std::string> cmd = SplitWords(launch.mpirun, ' ');
  if (cmd.empty()) {
    std::fprintf(stderr, "feedrate: error: --mpirun is empty\n");
    return kExitError;
  }
  // The ranks announce their start, join and end to this process (launch_watch.h), which watches mpirun.
  cmd.insert(cmd.end(), {"-x", std::string(kLaunchWatchEnv) + "=1", "-np", std::to_string(ranks), "--host", host_arg,
                         SelfExe()});
  for (int i = 1; i < argc; ++i) {  // this command line without the launch options
    const std::string a = argv[i];
    bool dropped = false;
    for (const char* opt : {"--hosts", "--hostfile", "--mpirun", "--launch-timeout"}) {
      if (a == opt) {
        ++i;  // and its value
        dropped = true;
      } else if (a.starts_with(std::string(opt) + "=")) {
        dropped = true;
      }
    }
    if (!dropped) cmd.push_back(a);
  }
  std::vector<std::string> rank_hosts;  // mpirun's slot order: each host's slots in turn
  for (const auto& h : hosts) rank_hosts.insert(rank_hosts.end(), h.slots, h.name);
  LaunchWatchLimits limits;
  limits.start_timeout_s = launch.launch_timeout;
  return RunWatched(cmd, rank_hosts, limits);
}

}  // namespace feedrate::cli
