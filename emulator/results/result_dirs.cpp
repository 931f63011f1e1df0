// Result directory readers shared by `feedrate report` and the MLPerf-style export.
#include "emulator/results/result_dirs.h"

#include "loader/io/safe_file.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "emulator/results/results.h"

namespace feedrate {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Python's json module writes NaN, Infinity and -Infinity (DLIO's numpy statistics can be NaN); JSON has no such
// tokens, so outside strings they become null.
std::string PythonJsonToJson(std::string text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* token : {"-Infinity", "Infinity", "NaN"}) {
      const size_t n = std::char_traits<char>::length(token);
      if (!replaced && text.compare(i, n, token) == 0) {
        out += "null";
        i += n - 1;
        replaced = true;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

// (A FIFO, socket or symlink at a result's name is refused at once, never waited on: ReadSmallRegularFile.)
Result<json> ReadJsonFile(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(const std::string text, ReadSmallRegularFile(path));
  json j = json::parse(PythonJsonToJson(text), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption(path + ": not a JSON object");
  return j;
}

// A result's CSV, as a stream: empty when it is missing or not a regular file (ReadSmallRegularFile).
std::istringstream CsvStream(const std::string& path) {
  Result<std::string> text = ReadSmallRegularFile(path, uint64_t{1} << 30);
  return std::istringstream(text.ok() ? std::move(*text) : std::string());
}

std::vector<EpochRow> ReadEpochCsv(const std::string& path) {
  std::vector<EpochRow> rows;
  std::istringstream in = CsvStream(path);
  std::string line;
  if (!std::getline(in, line)) return rows;  // header
  while (std::getline(in, line)) {
    std::vector<double> v;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) v.push_back(std::strtod(cell.c_str(), nullptr));
    if (v.size() < 9) continue;
    rows.push_back({v[0], v[1], v[2], v[3], v[4], v[8]});
  }
  return rows;
}

std::vector<StepRow> ReadStepCsv(const std::string& path) {
  std::vector<StepRow> rows;
  std::istringstream in = CsvStream(path);
  std::string line;
  if (!std::getline(in, line)) return rows;  // header
  while (std::getline(in, line)) {
    StepRow r;
    if (std::sscanf(line.c_str(), "%d,%d,%d,%lf", &r.accelerator, &r.epoch, &r.step, &r.stall_seconds) == 4) rows.push_back(r);
  }
  return rows;
}

// timeseries.csv's total rows: time_s (3rd column), read_mib_per_s (5th), stall_pct (12th).
std::vector<TimeSeriesPoint> ReadTimeSeriesTotals(const std::string& path) {
  std::vector<TimeSeriesPoint> rows;
  std::istringstream in = CsvStream(path);
  std::string line;
  if (!std::getline(in, line)) return rows;  // header
  while (std::getline(in, line)) {
    if (line.rfind("all,", 0) != 0) continue;
    std::vector<double> v;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) v.push_back(std::strtod(x.c_str(), nullptr));
    if (v.size() >= 12) rows.push_back({v[2], v[4], v[11]});
  }
  return rows;
}

double NumberOr(const json& j, double fallback) { return j.is_number() ? j.get<double>() : fallback; }

// DLIO's record size is not in summary.json, but its MB/s is mean throughput x record size.
double DlioBytesPerSample(const json& summary) {
  const json m = summary.value("metric", json::object());
  const double mb = NumberOr(m.value("train_io_mean_MB_per_second", json()), 0);
  const double sps = NumberOr(m.value("train_throughput_mean_samples_per_second", json()), 0);
  return sps > 0 ? mb * 1024 * 1024 / sps : 0;
}

// Hydra writes the resolved config and the command-line overrides under the run dir: dlio_config/ when
// mlpstorage ran DLIO, .hydra/ otherwise (configs/ in DLIO 1.0).
void ReadDlioHydra(ReportInput& in) {
  in.dlio_workload = nlohmann::json::object();
  in.dlio_overrides = nlohmann::json::array();
  for (const char* sub : {"/dlio_config/", "/.hydra/", "/configs/"}) {
    const std::string base = in.dir + sub;
    if (!fs::exists(base + "config.yaml")) continue;
    try {
      const Result<std::string> config = ReadSmallRegularFile(base + "config.yaml");
      if (!config.ok()) return;
      YAML::Node root = YAML::Load(*config);
      in.dlio_workload = YamlToJson(root["workload"] ? root["workload"] : root);
      if (const Result<std::string> o = ReadSmallRegularFile(base + "overrides.yaml"); o.ok()) in.dlio_overrides = YamlToJson(YAML::Load(*o));
    } catch (const YAML::Exception&) {
      // An unreadable Hydra config: the report and export still use summary.json.
    }
    return;
  }
}

void LoadDlioRanks(ReportInput& in) {
  std::map<int, std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(in.dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto us = name.find("_output.json");
    if (us == std::string::npos || us == 0 || us + 12 != name.size()) continue;
    char* end = nullptr;
    const long rank = std::strtol(name.c_str(), &end, 10);
    if (end != name.c_str() + us || rank < 0) continue;
    files[static_cast<int>(rank)] = e.path().string();
  }
  std::vector<DlioRankEpoch> rank_epochs;
  for (const auto& [rank, path] : files) {
    auto j = ReadJsonFile(path);
    if (!j.ok()) continue;  // a rank file DLIO did not finish: the summary still stands
    ReadDlioRankOutput(rank, *j, rank_epochs, in.steps);
    ++in.dlio_rank_files;
  }
  in.epochs = DlioEpochRows(rank_epochs, DlioBytesPerSample(in.summary));
}

}  // namespace

void ReadDlioRankOutput(int rank, const json& output, std::vector<DlioRankEpoch>& epochs, std::vector<StepRow>& steps) {
  for (auto it = output.begin(); it != output.end(); ++it) {
    char* end = nullptr;
    const long epoch = std::strtol(it.key().c_str(), &end, 10);
    if (it.key().empty() || *end != '\0' || !it.value().is_object()) continue;  // "hostname" and the like
    const json& e = it.value();
    const json au = e.value("au", json::object()), tp = e.value("throughput", json::object());
    const json load = e.value("load", json::object()), proc = e.value("proc", json::object());
    double au_sum = 0, tp_sum = 0, weight = 0;
    int step = 0;
    // Blocks in training order (JSON objects here iterate in key order: block10 before block2).
    std::map<long, std::string> blocks;
    for (auto b = au.begin(); b != au.end(); ++b) {
      if (b.key().rfind("block", 0) == 0 && b.value().is_number()) blocks[std::strtol(b.key().c_str() + 5, nullptr, 10)] = b.key();
    }
    for (const auto& [k, key] : blocks) {
      const json p = proc.value(key, json::array());
      const double n = p.is_array() && !p.empty() ? static_cast<double>(p.size()) : 1.0;
      au_sum += n * au[key].get<double>();
      tp_sum += n * NumberOr(tp.value(key, json()), 0);
      weight += n;
      for (const auto& s : load.value(key, json::array())) {
        if (s.is_number()) steps.push_back({rank, static_cast<int>(epoch), ++step, s.get<double>()});
      }
    }
    if (weight > 0) epochs.push_back({rank, static_cast<int>(epoch), au_sum / weight, tp_sum / weight});
  }
}

std::vector<EpochRow> DlioEpochRows(const std::vector<DlioRankEpoch>& ranks, double bytes_per_sample) {
  std::map<int, std::vector<const DlioRankEpoch*>> by_epoch;
  for (const auto& r : ranks) by_epoch[r.epoch].push_back(&r);
  std::vector<EpochRow> rows;
  for (const auto& [epoch, rs] : by_epoch) {
    EpochRow row{static_cast<double>(epoch), 0, rs.front()->au_pct, rs.front()->au_pct, 0, 0};
    for (const auto* r : rs) {
      row.au_pct += r->au_pct / static_cast<double>(rs.size());
      row.au_min_pct = std::min(row.au_min_pct, r->au_pct);
      row.au_max_pct = std::max(row.au_max_pct, r->au_pct);
      row.samples_per_s += r->samples_per_s;
    }
    row.read_mib_per_s = row.samples_per_s * bytes_per_sample / (1024.0 * 1024.0);
    rows.push_back(row);
  }
  return rows;
}

namespace {

// The JSON at a dotted path ("metric.train_au_mean_percentage"), or nullptr.
const json* At(const json& j, const std::string& dotted) {
  const json* cur = &j;
  size_t from = 0;
  while (cur != nullptr) {
    const size_t dot = dotted.find('.', from);
    const std::string part = dotted.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    cur = cur->is_object() && cur->contains(part) ? &(*cur)[part] : nullptr;
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  return cur;
}

// What a report reads from a record, by kind: a summary without it ({}, a truncated or foreign file) is refused
// naming the file and the first key missing, not shown as "0 accelerators, AU 0.00%".
Status CheckRecordKeys(const json& j, const std::string& file, const std::string& kind) {
  std::vector<std::string> numbers, strings;
  if (kind == "feedrate sweep") {
    strings = {"workload"};
    if (At(j, "points") == nullptr || !At(j, "points")->is_array()) return Status::Corruption(file + ": no 'points' list: not a sweep record");
  } else if (kind == "dlio run") {
    numbers = {"num_accelerators", "metric.train_au_mean_percentage", "metric.train_throughput_mean_samples_per_second"};
  } else {
    strings = {"feedrate.status", "feedrate.workload"};
    numbers = {"num_accelerators"};
    const json* status = At(j, "feedrate.status");
    const bool measured = status != nullptr && status->is_string() && CompletedStatus(status->get<std::string>());
    if (measured && kind == "feedrate run") {
      numbers.insert(numbers.end(), {"metric.train_au_mean_percentage", "metric.train_throughput_mean_samples_per_second"});
    }
  }
  for (const auto& k : strings) {
    const json* v = At(j, k);
    if (v == nullptr || !v->is_string()) return Status::Corruption(file + ": key " + k + " is missing or not a string: not a complete " + kind + " record");
  }
  for (const auto& k : numbers) {
    const json* v = At(j, k);
    if (v == nullptr || !v->is_number()) return Status::Corruption(file + ": key " + k + " is missing or not a number: not a complete " + kind + " record");
  }
  return Status::Ok();
}

}  // namespace

Result<ReportInput> LoadResultDir(const std::string& dir) {
  ReportInput in;
  in.dir = dir;
  auto sweep = ReadJsonFile(dir + "/sweep.json");
  if (sweep.ok()) {
    in.kind = "feedrate sweep";
    in.sweep = std::move(*sweep);
    FEEDRATE_RETURN_IF_ERROR(CheckRecordKeys(in.sweep, dir + "/sweep.json", in.kind));
    return in;
  }
  auto summary = ReadJsonFile(dir + "/summary.json");
  if (!summary.ok()) {
    return Status::NotFound(dir + ": no sweep.json or summary.json (" + summary.status().message() + ")");
  }
  in.summary = std::move(*summary);
  in.kind = !in.summary.contains("feedrate")                                        ? "dlio run"
            : in.summary.value("metric", nlohmann::json::object()).contains("checkpoint_size_GB") ||
                      in.summary["feedrate"].contains("save")
                ? "feedrate checkpoint"
                : "feedrate run";
  FEEDRATE_RETURN_IF_ERROR(CheckRecordKeys(in.summary, dir + "/summary.json", in.kind));
  if (in.kind == "feedrate run") {
    in.epochs = ReadEpochCsv(dir + "/per_epoch.csv");
    in.steps = ReadStepCsv(dir + "/steps.csv");
    in.timeseries = ReadTimeSeriesTotals(dir + "/timeseries.csv");
    return in;
  }
  ReadDlioHydra(in);
  LoadDlioRanks(in);
  return in;
}

std::vector<std::string> RunDirsOf(const ReportInput& in) {
  if (in.kind != "feedrate sweep") return {in.dir};
  std::vector<std::string> dirs;
  for (const auto& p : in.sweep.value("points", json::array())) {
    for (const auto& r : p.value("runs", json::array())) {
      const std::string d = r.value("results_dir", std::string());
      if (d.empty()) continue;
      dirs.push_back(fs::path(d).is_absolute() || fs::exists(d) ? d : (fs::path(in.dir) / d).string());
    }
  }
  return dirs;
}

std::vector<std::string> FindResultDirs(const std::string& root) {
  std::error_code ec;
  if (fs::exists(fs::path(root) / "summary.json", ec) || fs::exists(fs::path(root) / "sweep.json", ec)) return {root};
  std::vector<std::string> children;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory(ec) && !e.is_symlink(ec)) children.push_back(e.path().string());
  }
  std::sort(children.begin(), children.end());
  std::vector<std::string> out;
  for (const auto& c : children) {
    for (auto& d : FindResultDirs(c)) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace feedrate
