// DLIO's output files for a run started as DLIO: the Hydra folder, dlio.log and the per-rank JSON files.
#include "emulator/results/dlio_output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <tuple>

#include "emulator/host/sysinfo.h"
#include "emulator/results/results.h"
#include "loader/util/units.h"
#include "loader/io/safe_file.h"

namespace feedrate {

std::string DlioTime(double unix_seconds) {
  const auto whole = static_cast<time_t>(std::floor(unix_seconds));
  const auto micros = static_cast<long>(std::lround((unix_seconds - static_cast<double>(whole)) * 1e6));
  std::tm tm{};
  const time_t t = whole + (micros >= 1000000 ? 1 : 0);
  localtime_r(&t, &tm);
  char date[32], out[48];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(out, sizeof out, "%s.%06ld", date, micros % 1000000);
  return out;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "key<sep>value" lines of a /proc file as a JSON object of strings; `skip` names a key left out.
nlohmann::json ProcFields(const char* path, const std::string& skip) {
  nlohmann::json out = nlohmann::json::object();
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = Trim(line.substr(0, colon));
    if (key.empty() || key == skip) continue;
    std::string value = Trim(line.substr(colon + 1));
    // meminfo pads its numbers ("MemTotal:       24683784 kB"); DLIO keeps "24683784 kB".
    std::string squeezed;
    for (char c : value) {
      if (c == ' ' && !squeezed.empty() && squeezed.back() == ' ') continue;
      squeezed += c;
    }
    out[key] = squeezed;
  }
  return out;
}

std::string Fixed2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

std::string Fixed4(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", v);
  return b;
}

std::string Output(double unix_seconds, const std::string& text) { return "[OUTPUT] " + DlioTime(unix_seconds) + " " + text; }

Status MakeDirIfMissing(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return Status::Errno("cannot create " + dir, errno);
}

std::string Yaml(const YAML::Node& n) {
  YAML::Emitter e;
  e << n;
  return std::string(e.c_str()) + "\n";
}

// Hydra's override_dirname: the task overrides sorted, joined by ','.
std::string OverrideDirname(std::vector<std::string> task) {
  std::sort(task.begin(), task.end());
  std::string out;
  for (const auto& t : task) out += (out.empty() ? "" : ",") + t;
  return out;
}

YAML::Node HydraYaml(const DlioInvocation& inv) {
  YAML::Node h;
  h["run"]["dir"] = inv.run_dir;
  h["output_subdir"] = inv.output_subdir;
  h["mode"] = "RUN";
  YAML::Node hydra_ov(YAML::NodeType::Sequence), task(YAML::NodeType::Sequence);
  for (const auto& o : inv.hydra_overrides) hydra_ov.push_back(o);
  hydra_ov.push_back("hydra.mode=RUN");
  for (const auto& o : inv.task_overrides) task.push_back(o);
  h["overrides"]["hydra"] = hydra_ov;
  h["overrides"]["task"] = task;
  h["job"]["name"] = "main";
  h["job"]["chdir"] = YAML::Null;
  h["job"]["override_dirname"] = OverrideDirname(inv.task_overrides);
  h["job"]["config_name"] = "config";
  char cwd[4096];
  h["runtime"]["cwd"] = ::getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) : std::string();
  h["runtime"]["output_dir"] = inv.run_dir;
  YAML::Node sources(YAML::NodeType::Sequence);
  for (const auto& d : inv.config_dirs) {
    YAML::Node s;
    s["path"] = d;
    s["schema"] = "file";
    s["provider"] = "command-line";
    sources.push_back(s);
  }
  h["runtime"]["config_sources"] = sources;
  h["runtime"]["choices"]["workload"] = inv.workload;
  h["runtime"]["workload_source"] = inv.workload_source;
  YAML::Node root;
  root["hydra"] = h;
  return root;
}

}  // namespace

nlohmann::json DlioHostFacts() {
  return {{"host_cpuinfo", ProcFields("/proc/cpuinfo", "processor")}, {"host_meminfo", ProcFields("/proc/meminfo", "")}};
}

Status WriteDlioHydraFolder(const DlioInvocation& inv, const YAML::Node& workload_tree) {
  if (inv.output_subdir.empty()) return Status::Ok();
  const std::string dir = inv.run_dir + "/" + inv.output_subdir;
  FEEDRATE_RETURN_IF_ERROR(MakeDirIfMissing(dir));
  YAML::Node config;
  config["workload"] = YAML::Clone(workload_tree);
  YAML::Node overrides(YAML::NodeType::Sequence);
  for (const auto& o : inv.task_overrides) overrides.push_back(o);
  const std::string written_by = "# written by Feedrate in DLIO's place (Hydra did not run); DLIO's layout\n";
  FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(dir + "/config.yaml", Yaml(config)));
  FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(dir + "/overrides.yaml", Yaml(overrides)));
  return WriteFileSafely(dir + "/hydra.yaml", written_by + Yaml(HydraYaml(inv)));
}

Status WriteDlioLog(const std::string& run_dir, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return WriteFileSafely(run_dir + "/dlio.log", text);
}

std::vector<std::string> DlioDatagenLogLines(int ranks, double start_unix, double generation_unix, double end_unix) {
  return {Output(start_unix, "Running DLIO [Generating data] with " + std::to_string(ranks) + " process(es)"),
          Output(generation_unix, "Starting data generation"), Output(end_unix, "Generation done")};
}

namespace {

// Where accelerator a's figures are in the record: its rank's facts and its steps' offset in the step vectors.
struct AcceleratorView {
  const RankInfo* rank = nullptr;
  size_t first_step = 0;  // index of epoch 1 step 1 in stall_seconds/compute_seconds/barrier_seconds
};

AcceleratorView ViewOf(const RunRecord& r, size_t a, size_t steps, size_t epochs) {
  AcceleratorView v;
  const int rank = static_cast<int>(a / std::max<uint64_t>(1, r.accelerators_per_rank));
  for (const auto& ri : r.rank_info) {
    if (ri.rank == rank) v.rank = &ri;
  }
  v.first_step = a * steps * epochs;
  return v;
}

double PerHostDatasetGb(const RunRecord& r) {
  std::map<std::string, int> hosts;
  for (const auto& ri : r.rank_info) hosts[ri.hostname] = 1;
  return hosts.empty() ? 0 : r.dataset_bytes / static_cast<double>(hosts.size()) / kGiB;
}

// One DLIO rank's {a}_output.json: the host facts, then per epoch its steps' load/proc/compute lists and the
// block's throughput and AU (DLIO's statscounter.finalize layout).
nlohmann::json OutputJson(const RunRecord& r, size_t a, size_t steps, size_t epochs) {
  const AcceleratorView v = ViewOf(r, a, steps, epochs);
  nlohmann::json out;
  const double mem_gb = v.rank != nullptr ? static_cast<double>(v.rank->host_mem_bytes) / kGiB : 0;
  out["host_memory_GB"] = mem_gb;
  out["host_cpu_count"] = v.rank != nullptr ? v.rank->host_cpu_count : 0u;
  out["host_processor_name"] = v.rank != nullptr ? v.rank->processor : "";
  out["potential_caching"] = mem_gb > PerHostDatasetGb(r) ? 1 : 0;
  out["hostname"] = v.rank != nullptr ? v.rank->hostname : "";
  for (const auto& ri : r.rank_info) {  // the host leader of the accelerator's host read it
    if (v.rank == nullptr || ri.hostname != v.rank->hostname || !ri.dlio_host.is_object()) continue;
    for (const auto& k : {"host_cpuinfo", "host_meminfo"}) out[k] = ri.dlio_host.value(k, nlohmann::json::object());
    break;
  }
  for (size_t e = 0; e < epochs; ++e) {
    const AcceleratorEpoch& ep = r.per_accelerator[a][e];
    nlohmann::json load = nlohmann::json::array(), proc = nlohmann::json::array(), compute = nlohmann::json::array();
    for (size_t s = 0; s < steps; ++s) {
      const size_t i = v.first_step + e * steps + s;
      load.push_back(r.stall_seconds[i]);
      compute.push_back(r.compute_seconds[i]);
      proc.push_back(r.stall_seconds[i] + r.compute_seconds[i] + r.barrier_seconds[i]);
    }
    const double start = (v.rank != nullptr ? v.rank->train_start_unix : 0) + ep.start_offset_s;
    out[std::to_string(e + 1)] = {{"load", {{"block1", load}}},
                                  {"proc", {{"block1", proc}}},
                                  {"compute", {{"block1", compute}}},
                                  {"throughput", {{"block1", ep.block.throughput}}},
                                  {"au", {{"block1", 100 * ep.block.au}}},
                                  {"end", DlioTime(start + ep.seconds)}};
  }
  return out;
}

// {a}_per_epoch_stats.json: each epoch's and block's start, end and duration (seconds as "%.2f" text, as DLIO).
nlohmann::json PerEpochStats(const RunRecord& r, size_t a, size_t steps, size_t epochs) {
  const AcceleratorView v = ViewOf(r, a, steps, epochs);
  nlohmann::json out = nlohmann::json::object();
  for (size_t e = 0; e < epochs; ++e) {
    const AcceleratorEpoch& ep = r.per_accelerator[a][e];
    const double start = (v.rank != nullptr ? v.rank->train_start_unix : 0) + ep.start_offset_s, end = start + ep.seconds;
    out[std::to_string(e + 1)] = {
        {"start", DlioTime(start)},
        {"block1", {{"start", DlioTime(start)}, {"end", DlioTime(end)}, {"duration", Fixed2(ep.seconds)}}},
        {"end", DlioTime(end)},
        {"duration", Fixed2(ep.seconds)}};
  }
  return out;
}

// dlio.log as DLIO's rank 0 writes it: the job, each epoch of its first accelerator, the averaged metrics.
std::vector<std::string> RunLogLines(const RunRecord& r, size_t steps, size_t epochs) {
  const WorkloadConfig& c = *r.cfg;
  const uint64_t n = static_cast<uint64_t>(r.ranks) * r.accelerators_per_rank;
  std::vector<std::string> lines = {
      Output(r.start_unix, "Running DLIO [Training] with " + std::to_string(n) + " process(es)"),
      Output(r.start_unix, "Feedrate " + r.version + " in DLIO's place: " + std::to_string(r.ranks) + " rank(s) x " +
                               std::to_string(r.accelerators_per_rank) + " emulated accelerator(s), engine " + r.engine +
                               ", access pattern " + r.access_pattern)};
  if (PerHostDatasetGb(r) < (r.rank_info.empty() ? 0 : static_cast<double>(r.rank_info.front().host_mem_bytes) / kGiB)) {
    lines.push_back("[WARNING] The amount of dataset is smaller than the host memory; data might be cached after the "
                    "first epoch. Increase the size of dataset to eliminate the caching effect!!!");
  }
  lines.push_back(Output(r.start_unix, "Max steps per epoch: " + std::to_string(steps) + " = " +
                                           std::to_string(c.num_samples_per_file) + " * " + std::to_string(c.num_files_train) +
                                           " / " + std::to_string(c.batch_size) + " / " + std::to_string(n) +
                                           " (samples per file * num files / batch size / comm size)"));
  const AcceleratorView v = ViewOf(r, 0, steps, epochs);
  for (size_t e = 0; e < epochs && !r.per_accelerator.empty(); ++e) {
    const AcceleratorEpoch& ep = r.per_accelerator[0][e];
    const double start = (v.rank != nullptr ? v.rank->train_start_unix : 0) + ep.start_offset_s, end = start + ep.seconds;
    std::vector<double> compute(r.compute_seconds.begin() + static_cast<std::ptrdiff_t>(e * steps),
                                r.compute_seconds.begin() + static_cast<std::ptrdiff_t>((e + 1) * steps));
    const std::string epoch = "Epoch " + std::to_string(e + 1) + " - Block 1 [Training] ";
    lines.push_back(Output(start, "Starting epoch " + std::to_string(e + 1) + ": " + std::to_string(steps) + " steps expected"));
    lines.push_back(Output(start, "Starting block 1"));
    lines.push_back(Output(end, "Ending block 1 - " + std::to_string(steps) + " steps completed in " + Fixed2(ep.seconds) + " s"));
    lines.push_back(Output(end, epoch + "Accelerator Utilization [AU] (%): " + Fixed4(100 * ep.block.au)));
    lines.push_back(Output(end, epoch + "Throughput (samples/second): " + Fixed4(ep.block.throughput)));
    lines.push_back(Output(end, epoch + "Computation time per step (second): " + Fixed4(Mean(compute)) + "+/-" +
                                    Fixed4(PopulationStdev(compute))));
    lines.push_back(Output(end, "Ending epoch " + std::to_string(e + 1) + " - " + std::to_string(steps) +
                                    " steps completed in " + Fixed2(ep.seconds) + " s"));
  }
  const RunMetrics& m = r.metrics;
  const std::string bar = "[METRIC] ==========================================================";
  lines.insert(lines.end(), {Output(r.end_unix, "Saved outputs in " + r.results_dir), "[OUTPUT] Averaged metric over all steps/epochs", bar,
                             "[METRIC] Number of Simulated Accelerators: " + std::to_string(n) + " ",
                             "[METRIC] Training Accelerator Utilization [AU] (%): " + Fixed4(m.au_mean_pct) + " (" + Fixed4(m.au_stdev_pct) + ")",
                             "[METRIC] Training Throughput (samples/second): " + Fixed4(m.throughput_mean) + " (" + Fixed4(m.throughput_stdev) + ")",
                             "[METRIC] Training I/O Throughput (MB/second): " + Fixed4(m.io_mean_mib) + " (" + Fixed4(m.io_stdev_mib) + ")",
                             std::string("[METRIC] train_au_meet_expectation: ") + (m.meets_au ? "success" : "fail"), bar, "",
                             Output(r.end_unix, "outputs saved in RANKID_output.json")});
  return lines;
}

}  // namespace

Status WriteDlioRunFiles(const RunRecord& r) {
  const size_t steps = r.steps_per_epoch, epochs = r.metrics.au_pct.size(), n = r.per_accelerator.size();
  if (r.stall_seconds.size() != n * steps * epochs || r.compute_seconds.size() != r.stall_seconds.size()) {
    return Status::IoError("the gathered step figures do not cover every accelerator's steps");
  }
  for (size_t a = 0; a < n; ++a) {
    const std::string base = r.results_dir + "/" + std::to_string(a);
    FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(base + "_output.json", OutputJson(r, a, steps, epochs).dump(4, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
    FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(base + "_per_epoch_stats.json", PerEpochStats(r, a, steps, epochs).dump(4, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  }
  std::vector<std::string> lines = r.dlio->earlier_log;
  for (auto& l : RunLogLines(r, steps, epochs)) lines.push_back(std::move(l));
  return WriteDlioLog(r.results_dir, lines);
}

void AddDlioSummaryFields(const RunRecord& r, nlohmann::json* summary) {
  (*summary)["start"] = DlioTime(r.start_unix);
  (*summary)["end"] = DlioTime(r.end_unix);
  const RankInfo* first = r.rank_info.empty() ? nullptr : &r.rank_info.front();
  if (first != nullptr && first->dlio_host.is_object()) {
    for (const auto& k : {"host_cpuinfo", "host_meminfo"}) (*summary)[k] = first->dlio_host.value(k, nlohmann::json::object());
  }
}

nlohmann::json CheckpointHost(bool dlio) {
  const HostInfo h = ReadHostInfo();
  nlohmann::json j = {{"hostname", h.hostname}, {"host_memory_GB", static_cast<double>(h.mem_total_bytes) / kGiB},
                      {"host_cpu_count", h.cpu_count}, {"host_processor_name", h.processor_name}};
  if (dlio) j.update(DlioHostFacts());
  return j;
}

void AddDlioHostKeys(const std::vector<DlioCheckpointRank>& ranks, nlohmann::json* summary) {
  nlohmann::json cpus = nlohmann::json::array(), mem = nlohmann::json::array(), proc = nlohmann::json::array();
  std::vector<std::string> seen;
  for (const auto& r : ranks) {
    const std::string name = r.host.value("hostname", std::string());
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    cpus.push_back(r.host.value("host_cpu_count", 0u));
    mem.push_back(r.host.value("host_memory_GB", 0.0));
    proc.push_back(r.host.value("host_processor_name", std::string()));
  }
  (*summary)["num_hosts"] = seen.size();
  (*summary)["host_cpu_count"] = cpus;
  (*summary)["host_memory_GB"] = mem;
  (*summary)["host_processor_name"] = proc;
  (*summary)["hostname"] = seen.empty() ? "" : seen.front();
}

namespace {

// One DLIO rank's checkpoint phases in its per_epoch_stats: save_ckptK then load_ckptK, each with its throughput
// (the whole checkpoint's GiB over this rank's seconds, as DLIO's rank computes it).
nlohmann::json CheckpointStats(const DlioCheckpointRank& rank, double size_gb, double start, double end) {
  nlohmann::json epoch = {{"start", DlioTime(start)}};
  auto add = [&](const char* what, const std::vector<double>& at, const std::vector<double>& secs) {
    for (size_t k = 0; k < at.size() && k < secs.size(); ++k) {
      epoch[std::string(what) + std::to_string(k + 1)] = {{"start", DlioTime(at[k])}, {"end", DlioTime(at[k] + secs[k])},
                                                          {"duration", secs[k]},
                                                          {"throughput", secs[k] > 0 ? size_gb / secs[k] : 0.0}};
    }
  };
  add("save_ckpt", rank.save_start_unix, rank.save_seconds);
  add("load_ckpt", rank.load_start_unix, rank.load_seconds);
  epoch["end"] = DlioTime(end);
  return {{"1", epoch}};
}

nlohmann::json CheckpointOutput(const DlioCheckpointRank& rank, double start, double end) {
  nlohmann::json o = nlohmann::json::object();
  for (const char* k : {"host_memory_GB", "host_cpu_count", "host_processor_name", "host_cpuinfo", "host_meminfo", "hostname"}) {
    if (rank.host.contains(k)) o[k] = rank.host[k];
  }
  o["potential_caching"] = 1;  // DLIO's flag compares a training dataset with memory; a checkpoint run has none
  const nlohmann::json none = nlohmann::json::object();
  o["1"] = {{"start", DlioTime(start)}, {"load", none}, {"proc", none}, {"throughput", none}, {"au", none},
            {"compute", none}, {"end", DlioTime(end)}};
  return o;
}

std::vector<std::string> CheckpointLogLines(const DlioCheckpointRecord& r) {
  std::vector<std::string> lines = r.inv != nullptr ? r.inv->earlier_log : std::vector<std::string>{};
  lines.push_back(Output(r.start_unix, "Running DLIO [Checkpointing] with " + std::to_string(r.ranks.size()) + " process(es)"));
  lines.push_back(Output(r.start_unix, "Feedrate " + r.version + " in DLIO's place: " + std::to_string(r.ranks.size()) +
                                           " rank(s) writing and reading the checkpoint layout of `feedrate checkpoint`"));
  lines.push_back(Output(r.start_unix, "Total checkpoint size: " + Fixed4(r.size_gb) + " GB "));
  if (r.ranks.empty()) return lines;
  const DlioCheckpointRank& r0 = r.ranks.front();  // DLIO's rank 0 logs its own times
  for (const auto& [what, at, secs] : {std::tuple{"saving", &r0.save_start_unix, &r0.save_seconds},
                                       std::tuple{"loading", &r0.load_start_unix, &r0.load_seconds}}) {
    const std::string phase = std::string(what) == "saving" ? "write" : "read";
    lines.push_back(Output(at->empty() ? r.start_unix : at->front(), "Checkpointing " + phase + " started"));
    for (size_t k = 0; k < at->size() && k < secs->size(); ++k) {
      const std::string n = std::to_string(k + 1);
      lines.push_back(Output((*at)[k], "Starting " + std::string(what) + " checkpoint " + n + " after total step " + n + " for epoch 1"));
      lines.push_back(Output((*at)[k] + (*secs)[k], "Finished " + std::string(what) + " checkpoint " + n + " for epoch 1 in " +
                                                        Fixed4((*secs)[k]) + " s; Throughput: " +
                                                        Fixed4((*secs)[k] > 0 ? r.size_gb / (*secs)[k] : 0) + " GB/s"));
    }
    if (!at->empty()) lines.push_back(Output(at->back() + secs->back(), "Checkpointing " + phase + " finished"));
  }
  const std::string bar = "[METRIC] ==========================================================";
  lines.insert(lines.end(), {Output(r.end_unix, "Saved outputs in " + r.run_dir), "[OUTPUT] Averaged metric over all steps/epochs", bar,
                             "[METRIC] Number of Simulated Accelerators: " + std::to_string(r.ranks.size()) + " "});
  for (const auto& [name, key] : {std::pair{"Checkpoint save duration (seconds)", "save_checkpoint_duration"},
                                  std::pair{"Checkpoint save I/O Throughput (GB/second)", "save_checkpoint_io"},
                                  std::pair{"Checkpoint load duration (seconds)", "load_checkpoint_duration"},
                                  std::pair{"Checkpoint load I/O Throughput (GB/second)", "load_checkpoint_io"}}) {
    const std::string unit = std::string(key).ends_with("_io") ? "_GB_per_second" : "_seconds";
    const std::string mean = std::string(key) + "_mean" + unit, stdev = std::string(key) + "_stdev" + unit;
    if (!r.metric.contains(mean)) continue;
    lines.push_back("[METRIC] " + std::string(name) + ": " + Fixed4(r.metric[mean].get<double>()) + " (" +
                    Fixed4(r.metric.value(stdev, 0.0)) + ")");
  }
  lines.insert(lines.end(), {bar, "", Output(r.end_unix, "outputs saved in RANKID_output.json")});
  return lines;
}

}  // namespace

Status WriteDlioCheckpointFiles(const DlioCheckpointRecord& r) {
  for (size_t k = 0; k < r.ranks.size(); ++k) {
    const std::string base = r.run_dir + "/" + std::to_string(k);
    const DlioCheckpointRank& rank = r.ranks[k];
    const double first = !rank.save_start_unix.empty() ? rank.save_start_unix.front()
                         : !rank.load_start_unix.empty() ? rank.load_start_unix.front() : r.start_unix;
    const double last = !rank.load_start_unix.empty() ? rank.load_start_unix.back() + rank.load_seconds.back()
                        : !rank.save_start_unix.empty() ? rank.save_start_unix.back() + rank.save_seconds.back() : r.end_unix;
    FEEDRATE_RETURN_IF_ERROR(WriteFileSafely(base + "_output.json", CheckpointOutput(rank, first, last).dump(4, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
    FEEDRATE_RETURN_IF_ERROR(
        WriteFileSafely(base + "_per_epoch_stats.json", CheckpointStats(rank, r.size_gb, first, last).dump(4, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  }
  return WriteDlioLog(r.run_dir, CheckpointLogLines(r));
}

}  // namespace feedrate
