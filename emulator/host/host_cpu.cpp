// /proc/stat and /proc/[pid]/stat readings, and the host's CPU use between two of them.
#include "emulator/host/host_cpu.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

namespace feedrate {
namespace {

// The aggregate "cpu" line: user nice system idle iowait irq softirq steal (guest time is inside user).
void ReadStat(const std::string& proc, HostCpuSample* s) {
  std::ifstream in(proc + "/stat");
  std::string label;
  uint64_t v[8] = {};
  if (!(in >> label) || label != "cpu") return;
  for (auto& x : v) in >> x;
  s->busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  s->total_ticks = s->busy_ticks + v[3] + v[4];
}

// One /proc/[pid]/stat: "pid (comm) state ppid ... utime stime ...". The comm may hold spaces and parentheses:
// it ends at the last ')'.
bool ReadProcess(const std::string& path, pid_t pid, HostCpuSample::Process* p) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  p->pid = pid;
  p->comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  std::string state;
  long long ppid = 0;
  rest >> state >> ppid;
  std::string skip;
  for (int i = 0; i < 9; ++i) rest >> skip;  // pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  uint64_t utime = 0, stime = 0;
  if (!(rest >> utime >> stime)) return false;
  p->ticks = utime + stime;
  p->kernel = ppid == 2 || pid == 2;
  return true;
}

}  // namespace

std::string ProcessName() {
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

HostCpuSample SampleHostCpu(const std::string& proc) {
  HostCpuSample s;
  ReadStat(proc, &s);
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(proc.c_str()), &::closedir);
  if (!d) return s;
  while (const dirent* e = ::readdir(d.get())) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    HostCpuSample::Process p;
    if (ReadProcess(proc + "/" + e->d_name + "/stat", static_cast<pid_t>(pid), &p)) s.processes.push_back(std::move(p));
  }
  std::sort(s.processes.begin(), s.processes.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  return s;
}

HostCpuUse HostCpuBetween(const HostCpuSample& start, const HostCpuSample& end, double seconds, unsigned cpus,
                          const std::string& self) {
  HostCpuUse u;
  u.seconds = seconds;
  u.cpus = cpus;
  const uint64_t total = end.total_ticks - std::min(end.total_ticks, start.total_ticks);
  const uint64_t busy = end.busy_ticks - std::min(end.busy_ticks, start.busy_ticks);
  u.busy = total > 0 ? static_cast<double>(busy) / static_cast<double>(total) : 0;
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  // The window as the kernel's ticks count it: reading every process takes a while on a busy host, and a window
  // timed outside the readings would give the other work more CPU than the host has.
  if (total > 0 && cpus > 0) u.seconds = static_cast<double>(total) / hz / cpus;
  std::map<std::string, HostCpuUse::Top> by_comm;
  size_t i = 0;
  for (const auto& p : end.processes) {  // a process that started within the window counts from zero
    while (i < start.processes.size() && start.processes[i].pid < p.pid) ++i;
    const bool known = i < start.processes.size() && start.processes[i].pid == p.pid && start.processes[i].comm == p.comm;
    const uint64_t before = known ? std::min(start.processes[i].ticks, p.ticks) : 0;
    const double secs = static_cast<double>(p.ticks - before) / hz;
    if (secs <= 0) continue;
    if (!p.kernel && p.comm == self) {
      u.self_cpu_seconds += secs;
      continue;
    }
    u.others_cpu_seconds += secs;
    HostCpuUse::Top& t = by_comm[p.kernel ? std::string("kernel threads") : p.comm];
    t.comm = p.kernel ? "kernel threads" : p.comm;
    ++t.processes;
    t.cpu_seconds += secs;
  }
  for (auto& [comm, t] : by_comm) u.top.push_back(t);
  std::sort(u.top.begin(), u.top.end(), [](const auto& a, const auto& b) { return a.cpu_seconds > b.cpu_seconds; });
  if (u.top.size() > 5) u.top.resize(5);
  return u;
}

nlohmann::json HostCpuUse::ToJson() const {
  nlohmann::json top_json = nlohmann::json::array();
  for (const auto& t : top) {
    top_json.push_back({{"command", t.comm}, {"processes", t.processes}, {"cpu_seconds", t.cpu_seconds}});
  }
  return {{"seconds", seconds},
          {"cpus", cpus},
          {"busy", busy},
          {"feedrate_cpu_seconds", self_cpu_seconds},
          {"others_cpu_seconds", others_cpu_seconds},
          {"others", top_json},
          {"others_described", Describe()}};
}

std::string HostCpuUse::Describe() const {
  std::string s;
  for (const auto& t : top) {
    if (seconds <= 0 || t.cpu_seconds / seconds < 0.05) continue;  // under 5% of one CPU: not worth a word
    char b[160];
    std::snprintf(b, sizeof b, "%s%s%s %.1f CPU-s/s", s.empty() ? "" : ", ", t.comm.c_str(),
                  t.processes > 1 ? (" x" + std::to_string(t.processes)).c_str() : "", t.cpu_seconds / seconds);
    s += b;
  }
  return s.empty() ? "nothing that used 5% of a CPU" : s;
}

}  // namespace feedrate
