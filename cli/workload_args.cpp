// Shared options: -w, --data-dir, --param and Hydra-style positional overrides; the --inject check.
#include "cli/commands.h"
#include "loader/io/fault_injection.h"

namespace feedrate::cli {

void WorkloadArgs::Register(CLI::App* app, bool need_data_dir) {
  app->add_option("-w,--workload", workload, "built-in workload name (e.g. unet3d_h100) or a DLIO workload YAML")
      ->required();
  auto* d = app->add_option("--data-dir", data_dir, "dataset folder (sets dataset.data_folder)");
  if (need_data_dir) d->required();
  app->add_option("--param", params, "override: key.path=value (repeatable)");
  app->add_option("overrides", positional, "overrides as ++key=value / ++workload.key=value / key=value");
}

std::vector<std::string> WorkloadArgs::Overrides() const {
  std::vector<std::string> all = params;
  for (const auto& p : positional) {
    if (p.find('=') == std::string::npos) throw CLI::ValidationError("unexpected argument '" + p + "'");
    all.push_back(p);
  }
  if (!data_dir.empty()) all.push_back("dataset.data_folder=" + data_dir);
  return all;
}

std::string CheckInjectRules(const std::string& rules) {
  auto p = ParseFaultPlan(rules);
  if (p.ok()) return "";
  std::string m = p.status().message();
  return m.starts_with("--inject ") ? m.substr(9) : m;  // CLI11 names the option itself
}

std::string JoinCommandLine(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                         "_-+=.,/:@%") == std::string::npos;
    if (!plain) {
      std::string q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = q + "'";
    }
    out += (i > 0 ? " " : "") + a;
  }
  return out;
}

}  // namespace feedrate::cli
