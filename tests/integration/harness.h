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
// Debian's /usr/bin/python3 has these modules (e.g. "numpy", "h5py", "PIL.Image, numpy", "google.protobuf").
bool HavePython(const std::string& modules);
inline bool HaveNumpy() { return HavePython("numpy"); }
// Writes `script` to <dir>/script.py and runs it with `args`.
CmdResult RunPython(const test::TempDir& dir, const std::string& script, const std::string& args);

// A small unet3d-shaped dataset: `files` files of about `record_bytes` (stdev 25%).
std::string SmallDatasetParams(int files, int record_bytes);

}  // namespace feedrate::it
