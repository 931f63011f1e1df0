// --mlperf-root/--division/--org/--system: Feedrate's own commands writing mlpstorage's results tree.
#include "cli/commands.h"

#include <cstdio>

#include "emulator/host/comm.h"

namespace feedrate::cli {

void MlperfArgs::Register(CLI::App* app) {
  auto* root = app->add_option("--mlperf-root", tree.root,
                               "write this command's record into an mlpstorage results tree rooted here: "
                               "<division>/<org>/results/<system>/<training|checkpointing>/<model>/... with DLIO's "
                               "files, mlpstorage's metadata and output logs (docs/mlpstorage.md)");
  app->add_option("--division", tree.division, "the tree's division: open (default) or closed")
      ->check(CLI::IsMember({"open", "closed"}))
      ->needs(root);
  app->add_option("--org", tree.org, "the tree's submitter (organisation) folder")->needs(root);
  app->add_option("--system", tree.system, "the tree's system name (results/<system>, systems/<system>.yaml)")->needs(root);
}

int RunRecorded(const MlperfTree& tree, const MlperfRecord::Spec& spec, const WorkloadConfig& cfg, Comm& comm,
                int processes, const std::function<int(const MlperfRecord&)>& body) {
  auto record = MlperfRecord::Begin(tree, spec, cfg, comm);
  if (!record.ok()) {
    if (comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", record.status().ToString().c_str());
    return kExitError;
  }
  int code = body(**record);
  if (Status st = (*record)->Finish(cfg, processes); !st.ok()) {
    std::fprintf(stderr, "feedrate: error: %s\n", st.ToString().c_str());
    code = kExitError;
  }
  return std::stoi(comm.Broadcast(std::to_string(code), 0));
}

void MlperfArgs::Check() {
  if (!tree.enabled()) return;
  if (tree.org.empty() || tree.system.empty()) throw CLI::RequiredError("--mlperf-root needs --org and --system");
  for (const std::string* name : {&tree.org, &tree.system}) {
    if (name->find('/') != std::string::npos || *name == "." || *name == "..") {
      throw CLI::ValidationError("--org/--system", "'" + *name + "' must be a plain folder name");
    }
  }
  if (tree.division.empty()) tree.division = "open";
}

}  // namespace feedrate::cli
