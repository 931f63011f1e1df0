// Integration-test harness implementation.
#include "harness.h"

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

namespace feedrate::it {
namespace {

// OpenMPI 4.1 makes its per-user session directory (/tmp/ompi.<host>.<uid>) with a check, then a mkdir, and removes
// it when the last job in it ends: two MPI singletons starting at once in parallel tests can both see it missing,
// and the second mkdir fails ("File exists": orte_init fails, the run exits 1; seen once in .ci/run's ASan stage).
// Each test process gives the processes it starts a session base of its own (one test's runs go one at a time).
struct OwnMpiSessionBase {
  std::string dir;
  OwnMpiSessionBase() {
    if (std::getenv("OMPI_MCA_orte_tmpdir_base") != nullptr) return;  // the caller chose one
    char tmpl[] = "/tmp/feedrate-it-ompi-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    dir = tmpl;
    ::setenv("OMPI_MCA_orte_tmpdir_base", tmpl, 0);
  }
  ~OwnMpiSessionBase() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};
const OwnMpiSessionBase kOwnMpiSessionBase;

}  // namespace

CmdResult Sh(const std::string& cmd, int timeout_s) {
  std::string quoted;  // cmd inside sh -c '...': each ' becomes '\'' so commands can quote their own arguments
  for (char c : cmd) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  std::string full = "timeout -k 5 " + std::to_string(timeout_s) + " sh -c '" + quoted + "' 2>&1";
  CmdResult r;
  FILE* p = ::popen(full.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string Feedrate(const std::string& args) { return std::string(FEEDRATE_BIN) + " " + args; }

std::string MpiFeedrate(int ranks, const std::string& args) {
  return std::string(FEEDRATE_MPIEXEC) + " --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) + " " +
         Feedrate(args);
}

bool LogShows(const std::string& log, const std::string& pattern, int tenths) {
  std::string grep = "grep -q ";
  grep.append(pattern).append(" ").append(log);
  for (int i = 0; i < tenths; ++i) {
    if (Sh(grep).code == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  return nlohmann::json::parse(in, nullptr, false);
}

bool HavePython(const std::string& modules) {
  return std::string(FEEDRATE_PYTHON3).size() > 0 &&
         Sh(std::string(FEEDRATE_PYTHON3) + " -c \"import " + modules + "\"").code == 0;
}

CmdResult RunPython(const test::TempDir& dir, const std::string& script, const std::string& args) {
  const std::string file = dir / "script.py";
  test::WriteFile(file, script);
  return Sh(std::string(FEEDRATE_PYTHON3) + " " + file + " " + args);
}

namespace {
std::string InSingleQuotes(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
std::string OrNothing(const std::string& shell) { return shell.empty() ? ":" : shell; }
}  // namespace

Signalled SignalOnMarker(const SignalPlan& p) {
  const std::string until =
      p.until.empty() ? "wait $pid; rc=$?; t1=$(date +%s%N)"
                      : "n=0; until " + p.until + "; do n=$((n+1)); [ $n -gt 3000 ] && break; sleep 0.02; done; "
                        "[ $n -gt 3000 ] && t1=none || t1=$(date +%s%N); " + OrNothing(p.after) + "; wait $pid; rc=$?";
  const std::string script =
      "(" + p.command + ") > " + p.log + " 2>&1 & pid=$!; n=0; until grep -qF -- " + InSingleQuotes(p.marker) + " " +
      p.log + "; do n=$((n+1)); [ $n -gt 1200 ] && break; sleep 0.05; done; " + OrNothing(p.before) +
      "; t0=$(date +%s%N); kill -" + p.signal + " $pid; " + until +
      "; [ $t1 = none ] && echo feedrate-test-elapsed-ns=-1 || echo feedrate-test-elapsed-ns=$((t1-t0)); exit $rc";
  CmdResult r = Sh(script, 180);
  Signalled s;
  s.code = r.code;
  const std::string key = "feedrate-test-elapsed-ns=";
  if (const size_t at = r.output.rfind(key); at != std::string::npos) {
    const long long ns = std::atoll(r.output.c_str() + at + key.size());
    s.seconds = ns < 0 ? -1 : static_cast<double>(ns) / 1e9;
  }
  std::ifstream in(p.log);
  s.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  s.output += r.output;
  return s;
}

std::string SmallDatasetParams(int files, int record_bytes) {
  return "--param dataset.num_files_train=" + std::to_string(files) +
         " --param dataset.record_length_bytes=" + std::to_string(record_bytes) +
         " --param dataset.record_length_bytes_stdev=" + std::to_string(record_bytes / 4);
}

}  // namespace feedrate::it
