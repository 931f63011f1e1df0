// mlpstorage's results tree: folders, the v3.0 metadata file, each workload's results.json, the systems draft.
#include "emulator/results/mlperf_tree.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include <yaml-cpp/yaml.h>

#include "emulator/results/mlperf_export.h"
#include "emulator/results/result_dirs.h"
#include "emulator/results/results.h"
#include "loader/io/safe_file.h"

namespace feedrate {

namespace fs = std::filesystem;
using nlohmann::json;

std::string MlperfTree::WorkloadDir(const std::string& mode, const std::string& model) const {
  return root + "/" + division + "/" + org + "/results/" + system + "/" + mode + "/" + model;
}

std::string MlperfTree::SystemsFile() const { return root + "/" + division + "/" + org + "/systems/" + system + ".yaml"; }

Result<std::string> NewTimestampDir(const std::string& parent) {
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return Status::Errno("cannot create " + parent, ec.value());
  for (int tries = 0; tries < 5; ++tries) {
    const auto now = std::chrono::system_clock::now();
    const time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    localtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S", &tm);
    if (fs::create_directory(parent + "/" + stamp, ec)) return std::string(stamp);
    if (ec) return Status::Errno("cannot create " + parent + "/" + stamp, ec.value());
    // That second's folder is an earlier run's: wait for the next second (back-to-back runs, mlpstorage's names).
    std::this_thread::sleep_until(std::chrono::system_clock::from_time_t(t + 1));
  }
  return Status::IoError("no new timestamped folder under " + parent + " after 5 s (another process keeps making them?)");
}

Status WriteMlperfMetadata(const MlperfMetadata& m) {
  const std::string name = m.mode + "_" + m.stamp + "_metadata.json";
  json j = {{"benchmark_type", m.mode},
            {"model", m.model},
            {"command", m.command},
            {"run_datetime", m.stamp},
            {"num_processes", m.num_processes},
            {"accelerator", m.accelerator.empty() ? json() : json(m.accelerator)},
            {"result_dir", m.dir},
            {"parameters", m.parameters},
            {"override_parameters", m.override_parameters},
            {"system_info", m.system_info},
            {"runtime", m.runtime_seconds},
            {"verification", m.verification},
            {"executed_command", m.executed_command},
            {"command_output_files", json::array({{{"command", m.executed_command}, {"stdout", m.stdout_log},
                                                   {"stderr", m.stderr_log}}})},
            {"args", m.args},
            {"run_result_output", m.dir},
            {"metadata_filename", name},
            {"written_by", "Feedrate (in mlpstorage's place; its metadata keys, v3.0)"}};
  return WriteFileSafely(m.dir + "/" + name, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

json OverrideParameters(const std::vector<std::string>& overrides) {
  json out = json::object();
  for (std::string o : overrides) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos) continue;
    std::string key = o.substr(0, eq);
    key.erase(0, std::min(key.find_first_not_of('+'), key.size()));
    if (key.starts_with("workload.")) key.erase(0, 9);
    out[key] = o.substr(eq + 1);
  }
  return out;
}

Status WriteWorkloadResults(const std::string& runs_dir, const std::string& dir) {
  std::vector<std::string> runs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(runs_dir, ec)) {
    if (e.is_directory() && fs::exists(e.path() / "summary.json")) runs.push_back(e.path().string());
  }
  if (ec) return Status::Errno("cannot list " + runs_dir, ec.value());
  std::sort(runs.begin(), runs.end());
  json rows = json::array();
  for (const auto& r : runs) {
    auto in = LoadResultDir(r);
    if (in.ok()) rows.push_back(MlperfRunRow(*in));  // a run still going ("running") has no metrics yet
  }
  return WriteFileSafely(dir + "/results.json", rows.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// /etc/os-release's NAME and VERSION_ID.
std::pair<std::string, std::string> OsRelease() {
  std::ifstream in("/etc/os-release");
  std::string line, name, version;
  auto value = [](const std::string& l) {
    std::string v = l.substr(l.find('=') + 1);
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    return v;
  };
  while (std::getline(in, line)) {
    if (line.starts_with("NAME=")) name = value(line);
    if (line.starts_with("VERSION_ID=")) version = value(line);
  }
  return {name, version};
}

// The client's network interfaces as v3.0's schema lists them (ethernet ones with a speed; others as found).
YAML::Node Networking() {
  YAML::Node nics(YAML::NodeType::Sequence);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/class/net", ec)) {
    const std::string name = e.path().filename().string();
    if (name == "lo") continue;
    YAML::Node n;
    n["type"] = fs::exists(e.path() / "wireless") ? "wireless" : "ethernet";
    n["state"] = ReadFirstLine(e.path() / "operstate");
    const std::string speed = ReadFirstLine(e.path() / "speed");  // Mb/s; -1 or unreadable for virtual links
    const long mbps = speed.empty() ? -1 : std::strtol(speed.c_str(), nullptr, 10);
    if (mbps > 0) n["speed"] = std::max<long>(1, std::lround(static_cast<double>(mbps) / 1000.0));  // int Gb/s; else left out
    n["traffic"].push_back("data");
    n["unit_count"] = 1;
    n["interface"] = name;
    nics.push_back(n);
  }
  return nics;
}

}  // namespace

Result<bool> WriteSystemsDraft(const MlperfTree& tree, const std::vector<json>& hosts) {
  const std::string path = tree.SystemsFile();
  std::error_code ec;
  if (fs::exists(path, ec)) return false;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return Status::Errno("cannot create " + fs::path(path).parent_path().string(), ec.value());
  const json h = hosts.empty() ? json::object() : hosts.front();
  // Only free-text fields hold a TODO; a field whose type is an enum, a bool or a number is left out (named in the
  // header) rather than given a string the checker would read as a value (remap_time_in_seconds: "TODO" crashed
  // mlpstorage v3.0's CheckpointingCheck).
  const std::string todo = "TODO: only you know";
  YAML::Node sut;
  YAML::Node sol = sut["system_under_test"]["solution"];
  sol["submission_name"] = tree.system;
  sol["friendly_description"] = todo;
  YAML::Node client;
  client["friendly_description"] = "Benchmark clients (drafted by Feedrate from the host it ran on)";
  client["quantity"] = hosts.size();
  client["chassis"]["model_name"] = todo;
  client["chassis"]["cpu_model"] = h.value("host_processor_name", std::string());
  client["chassis"]["cpu_cores"] = h.value("host_cpu_count", 0u);
  client["chassis"]["memory_capacity"] = std::lround(h.value("host_memory_GB", 0.0));
  client["networking"] = Networking();
  const auto [os_name, os_version] = OsRelease();
  client["operating_system"]["name"] = os_name;
  client["operating_system"]["version"] = os_version;
  sut["system_under_test"]["clients"].push_back(client);
  YAML::Emitter e;
  e << sut;
  const std::string header =
      "# Draft written by Feedrate: the client facts it could read (" + std::to_string(hosts.size()) +
      " host(s): CPUs, memory, network interfaces, OS); every TODO is yours to fill before a submission (mlpstorage "
      "v3.0 system_description/schema.yaml), and so are the fields it left out because only you know their values:\n"
      "#   solution.architecture: storage_location, benchmark_API, product_API, client_footprint, client_installation\n"
      "#   solution.capabilities: multi_host, simultaneous_write, simultaneous_read (bools), remap_time_in_seconds (int)\n"
      "#   deployment (onprem or cloud), product_nodes, total_rack_units, clients' chassis cpu_qty and rack_units, and a\n"
      "#   networking speed (int Gb/s) for each interface that reports none. Never overwritten.\n";
  FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(path, header + e.c_str() + "\n"));
  return true;
}

}  // namespace feedrate
