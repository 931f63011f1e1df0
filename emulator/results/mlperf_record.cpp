// A command's record in an mlpstorage results tree: folder, output copies, Hydra folder, metadata, results.json.
#include "emulator/results/mlperf_record.h"

#include "loader/util/output_text.h"

#include <fstream>

#include "emulator/results/results.h"

namespace feedrate {

using nlohmann::json;

namespace {

// DLIO's task overrides for the command's overrides: workload=NAME, then ++workload.KEY=VALUE.
std::vector<std::string> TaskOverrides(const std::string& workload, const std::vector<std::string>& overrides) {
  std::vector<std::string> out = {"workload=" + workload};
  for (const auto& o : overrides) {
    std::string key = o.substr(0, o.find('='));
    key.erase(0, std::min(key.find_first_not_of('+'), key.size()));
    if (key.starts_with("workload.")) key.erase(0, 9);
    out.push_back("++workload." + key + o.substr(o.find('=')));
  }
  return out;
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The client hosts a summary describes (DLIO's per-host arrays, Feedrate's host names), as CheckpointHost() gives one.
std::vector<json> HostsOf(const json& summary) {
  std::vector<json> hosts;
  const json mem = summary.value("host_memory_GB", json::array()), cpus = summary.value("host_cpu_count", json::array());
  const json proc = summary.value("host_processor_name", json::array());
  const json names = summary.contains("feedrate") ? summary["feedrate"].value("hosts", json::array()) : json::array();
  for (size_t i = 0; mem.is_array() && i < mem.size(); ++i) {
    json h = {{"host_memory_GB", mem[i]}, {"host_cpu_count", cpus.is_array() && i < cpus.size() ? cpus[i] : json(0)}};
    h["host_processor_name"] = proc.is_array() && i < proc.size() ? proc[i] : json("");
    h["hostname"] = names.is_array() && i < names.size() ? names[i].value("hostname", std::string()) : summary.value("hostname", std::string());
    hosts.push_back(h);
  }
  return hosts;
}

// mlpstorage's ClusterInformation.as_dict, in short: hosts with their memory and cores, and the totals.
json SystemInfo(const std::vector<json>& hosts) {
  double memory = 0;
  uint64_t cores = 0;
  json list = json::array();
  for (const auto& h : hosts) {
    const double bytes = h.value("host_memory_GB", 0.0) * 1073741824.0;
    memory += bytes;
    cores += h.value("host_cpu_count", 0u);
    list.push_back({{"hostname", h.value("hostname", std::string())}, {"memory", {{"total", bytes}}},
                    {"cpu", {{"num_cores", h.value("host_cpu_count", 0u)}, {"model", h.value("host_processor_name", std::string())}}}});
  }
  return {{"num_hosts", hosts.size()}, {"total_memory_bytes", memory}, {"total_cores", cores}, {"hosts", list},
          {"collection_method", "feedrate"}};
}

}  // namespace

Result<std::unique_ptr<MlperfRecord>> MlperfRecord::Begin(const MlperfTree& tree, const Spec& spec, const WorkloadConfig& cfg,
                                                          Comm& comm) {
  std::unique_ptr<MlperfRecord> r(new MlperfRecord());
  r->tree_ = tree;
  r->spec_ = spec;
  r->root_ = comm.root();
  r->start_unix_ = UnixNow();
  // training/<model>/<command>/<stamp> as mlpstorage v3.0 lays it out (rules/utils.py generate_output_location),
  // datasize included (its checker then flags the datasize/ folder, rule 2.1.12, as it does mlpstorage's own).
  // Every folder name here comes from configuration (a workload's model.name among them): one component each, or
  // the tree would be written outside its root.
  for (const auto& [what, name] : {std::pair{"model", spec.model}, std::pair{"command", spec.command}, std::pair{"mode", spec.mode},
                                   std::pair{"--org", tree.org}, std::pair{"--system", tree.system}, std::pair{"--division", tree.division}}) {
    if (!IsPlainName(name) && !(std::string(what) == "command" && spec.mode != "training")) {
      return Status::InvalidArgument(std::string("--mlperf-root: the ") + what + " '" + PlainText(name) +
                                     "' would be a folder of the results tree but is not a plain folder name (no '/', not '..'; " +
                                     cfg.source + ")");
    }
  }
  r->parent_ = tree.WorkloadDir(spec.mode, spec.model) + (spec.mode == "training" ? "/" + spec.command : "");
  Status st;
  if (r->root_) {
    auto stamp = NewTimestampDir(r->parent_);
    st = stamp.status();
    if (stamp.ok()) r->stamp_ = *stamp;
  }
  r->stamp_ = comm.Broadcast(r->stamp_, 0);
  r->dir_ = r->parent_ + "/" + r->stamp_;
  r->inv_.workload = cfg.name;
  r->inv_.task_overrides = TaskOverrides(cfg.name, spec.overrides);
  r->inv_.hydra_overrides = {"++hydra.run.dir=" + r->dir_, "++hydra.output_subdir=dlio_config"};
  r->inv_.run_dir = r->dir_;
  r->inv_.output_subdir = "dlio_config";
  r->inv_.workload_source = cfg.source;
  if (r->root_ && st.ok()) {
    const std::string base = r->dir_ + "/" + spec.mode + "_" + spec.command;
    st = r->tee_.Start(base + ".stdout.log", base + ".stderr.log");
    if (st.ok() && spec.hydra) st = WriteDlioHydraFolder(r->inv_, cfg.tree);
  }
  const std::string msg = comm.AgreeFirstError(st);
  if (!msg.empty()) return Status::IoError("the mlpstorage tree: " + msg);
  return r;
}

Status MlperfRecord::Finish(const WorkloadConfig& cfg, int ranks) {
  if (!root_) return Status::Ok();
  tee_.Stop();
  json summary;
  if (std::ifstream in(dir_ + "/summary.json"); in) summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
  std::vector<json> hosts = summary.is_object() ? HostsOf(summary) : std::vector<json>{};
  if (hosts.empty()) hosts.push_back(CheckpointHost(false));  // datagen, datasize: this host
  const json validity = summary.is_object() && summary.contains("feedrate") ? summary["feedrate"].value("validity", json())
                                                                             : json();
  MlperfMetadata m;
  m.mode = spec_.mode;
  m.command = spec_.command;
  m.model = spec_.model;
  m.accelerator = spec_.accelerator;
  m.stamp = stamp_;
  m.dir = dir_;
  m.num_processes = static_cast<uint64_t>(ranks);
  m.parameters = YamlToJson(cfg.tree);
  m.override_parameters = OverrideParameters(spec_.overrides);
  m.system_info = SystemInfo(hosts);
  m.runtime_seconds = UnixNow() - start_unix_;
  m.verification = validity.is_object() ? Lower(validity.value("category", tree_.division)) : tree_.division;
  m.executed_command = spec_.command_line;
  m.stdout_log = dir_ + "/" + spec_.mode + "_" + spec_.command + ".stdout.log";
  m.stderr_log = dir_ + "/" + spec_.mode + "_" + spec_.command + ".stderr.log";
  m.args = spec_.args;
  FEEDRATE_RETURN_IF_ERROR(WriteMlperfMetadata(m));
  if (spec_.command == "run") FEEDRATE_RETURN_IF_ERROR(WriteWorkloadResults(parent_, parent_));
  FEEDRATE_ASSIGN_OR_RETURN(const bool drafted, WriteSystemsDraft(tree_, hosts));
  if (drafted) std::printf("mlpstorage tree: drafted %s (fill its TODOs)\n", tree_.SystemsFile().c_str());
  return Status::Ok();
}

}  // namespace feedrate
