// --hosts / --hostfile / --mpirun: a subcommand started outside MPI re-executes itself under mpirun on those hosts,
// so one command line runs a multi-host job. Also the host-list parsing the sweep shares.
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
  void Register(CLI::App* app);
  bool requested() const { return !hosts.empty() || !hostfile.empty(); }
  // The hosts named by --hosts or --hostfile (empty when neither).
  std::vector<HostSlots> Hosts() const;
};

// When --hosts/--hostfile was given: replaces this process with `<mpirun> -np <slots> --host h1:s1,... <this
// command without the launch options>` and does not return; returns an exit code only on failure (the message
// printed). Refuses inside an MPI job (the ranks are placed already).
int RelaunchUnderMpirun(const LaunchArgs& launch, int argc, char** argv);

// This binary's absolute path (/proc/self/exe), or "feedrate".
std::string SelfExe();
std::vector<std::string> SplitWords(const std::string& s, char sep);

}  // namespace feedrate::cli
