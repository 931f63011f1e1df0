// --hosts / --hostfile / --mpirun / --launch-timeout: a subcommand started outside MPI runs itself under mpirun on
// those hosts and watches the job, so one command line runs a multi-host job. Also the host-list parsing the sweep shares.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace feedrate::cli {

struct HostSlots {
  std::string name;
  uint64_t slots = 1;
};

// "h1:2,h2:2" (slots default 1). Throws std::invalid_argument on an empty name or a bad slot count.
std::vector<HostSlots> ParseHostList(const std::string& list);
// An OpenMPI hostfile: "name [slots=N] [max_slots=M]" per line, '#' comments. Throws std::invalid_argument naming
// the file and line.
std::vector<HostSlots> ReadHostfile(const std::string& path);

struct LaunchArgs {
  std::string hosts;
  std::string hostfile;
  std::string mpirun = "mpirun --bind-to none";
  double launch_timeout = 120;  // --launch-timeout: seconds every rank has to join the job (0: forever)
  void Register(CLI::App* app);
  bool requested() const { return !hosts.empty() || !hostfile.empty(); }
  // The hosts named by --hosts or --hostfile (empty when neither).
  std::vector<HostSlots> Hosts() const;
};

// When --hosts/--hostfile was given: runs `<mpirun> -x FEEDRATE_LAUNCH_WATCH=1 -np <slots> --host h1:s1,... <this
// command without the launch options>` and watches it (emulator/host/launch_watch.h: start-up bounded by
// --launch-timeout, mpirun ended once the ranks ended); returns the job's exit code. Refuses inside an MPI job (the
// ranks are placed already).
int RelaunchUnderMpirun(const LaunchArgs& launch, int argc, char** argv);

// This binary's absolute path (/proc/self/exe), or "feedrate".
std::string SelfExe();
std::vector<std::string> SplitWords(const std::string& s, char sep);

}  // namespace feedrate::cli
