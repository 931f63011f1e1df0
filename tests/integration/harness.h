// Integration-test harness: run commands (the feedrate binary, mpirun, python), capture output and exit code,
// read result files.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "../unit/test_util.h"

namespace feedrate::it {

struct CmdResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `cmd` with /bin/sh, bounded by `timeout_s` (coreutils timeout; a hang shows as exit 124).
CmdResult Sh(const std::string& cmd, int timeout_s = 120);
// "<feedrate> <args>"
std::string Feedrate(const std::string& args);
// "mpirun --allow-run-as-root --oversubscribe -np N <feedrate> <args>"
std::string MpiFeedrate(int ranks, const std::string& args);
nlohmann::json ReadJson(const std::string& path);
// Whether file `log` gets a line matching `pattern` (grep's, quoted for the shell) within `tenths` tenths of a second.
bool LogShows(const std::string& log, const std::string& pattern, int tenths);
// Debian's /usr/bin/python3 has these modules (e.g. "numpy", "h5py", "PIL.Image, numpy", "google.protobuf").
bool HavePython(const std::string& modules);
inline bool HaveNumpy() { return HavePython("numpy"); }
// Writes `script` to <dir>/script.py and runs it with `args`.
CmdResult RunPython(const test::TempDir& dir, const std::string& script, const std::string& args);

// Signals a command at a point it reports, and times what follows (the test synchronises on the command's own
// output, never on a sleep).
struct Signalled {
  int code = -1;            // the command's exit code
  std::string output;       // its output (from `log`)
  double seconds = -1;      // from the signal to `until` holding (empty `until`: to the command's exit); -1: never
};
// Runs `command` in the background with its output in `log`; once `marker` (a fixed string) appears there, runs
// `before`, sends `signal`, waits until the shell condition `until` holds (at most 60 s), runs `after` (e.g. what
// lets a held storage go), and waits for the command to exit. Shell snippets may use $pid (the command's).
struct SignalPlan {
  std::string command, log, marker;
  std::string before;          // e.g. arming a storage hold; empty: nothing
  std::string signal = "TERM";
  std::string until;           // empty: the command's exit
  std::string after;
};
Signalled SignalOnMarker(const SignalPlan& plan);

// A small unet3d-shaped dataset: `files` files of about `record_bytes` (stdev 25%).
std::string SmallDatasetParams(int files, int record_bytes);

// Its parts (strings, string views, literals) joined into one string, a command line, without the temporaries a
// chain of operator+ makes.
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string s;
  (s.append(parts), ...);
  return s;
}

}  // namespace feedrate::it
