// Shared options: -w, --data-dir, --param and Hydra-style positional overrides; the --inject check.
#include "cli/commands.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <string_view>

#include "emulator/host/comm.h"
#include "emulator/host/job_start.h"
#include "loader/io/fault_injection.h"

namespace feedrate::cli {

std::optional<WorkloadConfig> LoadWorkloadOrPrint(const std::string& workload, const std::vector<std::string>& overrides) {
  try {
    return LoadWorkload(workload, overrides);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "feedrate: error: %s\n", e.what());
    return std::nullopt;
  }
}

std::optional<WorkloadConfig> LoadJobWorkload(const std::string& workload, const std::vector<std::string>& overrides,
                                              const Comm& comm) {
  RankStart mine;
  std::optional<WorkloadConfig> cfg;
  try {
    cfg = LoadWorkload(workload, overrides);
    mine.build = BuildIdentity(FEEDRATE_VERSION);
    mine.workload = WorkloadFingerprint(YAML::Dump(cfg->tree));
  } catch (const std::exception& e) {  // a ConfigError, or what the YAML library threw: this rank's cause
    mine.error = e.what();
    cfg.reset();
  }
  const std::string verdict = AgreeOnStart(comm, mine);
  if (verdict.empty()) return cfg;
  if (comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", verdict.c_str());
  return std::nullopt;
}

// The data-dir check of a command that reads or writes a dataset: a location given some way.
void WorkloadArgs::CheckLocation() const {
  // (An override of dataset.data_folder is a location too: DLIO's own form, with storage.* for S3; so is a
  // workload file's own dataset.data_folder.)
  auto sets_folder = [](const std::vector<std::string>& v) {
    return std::any_of(v.begin(), v.end(), [](const std::string& p) {
      return std::string_view(p).substr(std::min(p.find_first_not_of('+'), p.size())).starts_with("dataset.data_folder=");
    });
  };
  if (data_dir.empty() && storage.empty() && !sets_folder(params) && !sets_folder(params_list) && !sets_folder(positional) &&
      !WorkloadFileNamesItsData(workload)) {
    throw CLI::RequiredError("--data-dir or --storage");
  }
}

// mlpstorage's --model/--accelerator-type name a workload as MODEL_ACCELERATOR (its config file's name: '-' in the
// model becomes '_', llama3-8b -> llama3_8b); -w names it directly; one of the two is needed.
void WorkloadArgs::ResolveWorkload() {
  if (!model.empty()) {
    std::string m = model;
    std::replace(m.begin(), m.end(), '-', '_');
    workload = accelerator_type.empty() ? m : m + "_" + accelerator_type;
  } else if (!accelerator_type.empty()) {
    throw CLI::ValidationError("--accelerator-type", "needs --model (mlpstorage's pair; or -w MODEL_ACCELERATOR)");
  }
  if (workload.empty()) throw CLI::RequiredError("-w/--workload (or mlpstorage's --model with --accelerator-type)");
}

void WorkloadArgs::Register(CLI::App* app, bool need_data_dir, bool with_storage) {
  auto* w = app->add_option("-w,--workload", workload, "built-in workload name (e.g. unet3d_h100) or a DLIO workload YAML");
  app->add_option("--model", model, "mlpstorage's spelling: the model (unet3d, retinanet, llama3-8b, ...); with "
                                    "--accelerator-type names the workload MODEL_ACCELERATOR")
      ->excludes(w);
  app->add_option("--accelerator-type", accelerator_type, "mlpstorage's spelling: the accelerator (b200, mi355, h100, ...)")
      ->excludes(w);
  auto* d = app->add_option("--data-dir", data_dir, "dataset folder (sets dataset.data_folder)");
  if (with_storage) {
    auto* s = app->add_option("--storage", storage,
                              "dataset in an object store: s3://bucket/prefix (sets storage.storage_type=s3, "
                              "storage.storage_root=bucket, dataset.data_folder=prefix); credentials from "
                              "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials")
                  ->check([](const std::string& v) { return v.starts_with("s3://") ? "" : "must be an s3://bucket/prefix URL"; })
                  ->excludes(d);
    app->add_option("--endpoint", endpoint, "S3 endpoint URL, e.g. http://127.0.0.1:7480 (storage.storage_options.endpoint_url)")
        ->check(NoCredentialInUrl());
    app->add_option("--region", region, "S3 signing region (storage.storage_options.region, default us-east-1)");
    app->add_flag("--virtual-host", virtual_host, "virtual-host addressing (https://bucket.host/key) instead of path style");
    (void)s;
  } else if (need_data_dir) {
    d->required();
  }
  app->add_option("--rules", rules, "the MLPerf Storage rules edition whose DLIO is emulated: v3.0 (default: mlpstorage "
                                    "3.0's DLIO_local_changes f16fe43), v2.0 or upstream (argonne-lcf DLIO) "
                                    "(feedrate.rules; docs/dlio-compatibility.md)")
      ->check(CLI::IsMember({"v3.0", "v2.0", "upstream"}));
  app->add_option("--param", params, "override: key.path=value (repeatable)");
  app->add_option("--params", params_list, "mlpstorage's spelling: overrides key.path=value ... (several after one --params)")
      ->expected(1, -1);
  app->add_option("overrides", positional, "overrides as ++key=value / ++workload.key=value / key=value");
  const bool check_location = with_storage && need_data_dir;
  app->final_callback([this, check_location] {
    ResolveWorkload();
    if (check_location) CheckLocation();
  });
}

std::vector<std::string> WorkloadArgs::Overrides() const {
  std::vector<std::string> all = params;
  all.insert(all.end(), params_list.begin(), params_list.end());
  for (const auto& p : positional) {
    if (p.find('=') == std::string::npos) throw CLI::ValidationError("unexpected argument '" + p + "'");
    all.push_back(p);
  }
  if (!data_dir.empty()) all.push_back("dataset.data_folder=" + data_dir);
  if (!rules.empty()) all.push_back("feedrate.rules=" + rules);
  if (!storage.empty()) {
    const std::string rest = storage.substr(5);
    const size_t slash = rest.find('/');
    const std::string bucket = rest.substr(0, slash);
    if (bucket.empty()) throw CLI::ValidationError("--storage: no bucket in '" + storage + "'");
    all.push_back("storage.storage_type=s3");
    all.push_back("storage.storage_root=" + bucket);
    all.push_back("dataset.data_folder=" + (slash == std::string::npos ? std::string() : rest.substr(slash + 1)));
  }
  if (!endpoint.empty()) all.push_back("storage.storage_options.endpoint_url=" + endpoint);
  if (!region.empty()) all.push_back("storage.storage_options.region=" + region);
  if (virtual_host) all.push_back("storage.storage_options.s3_force_path_style=false");
  return all;
}

std::string CheckNumber(const std::string& text, bool whole) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {  // exact for whole numbers up to 2^64 (seeds), where a double would round
    (void)std::strtoull(begin, &end, 10);
    return errno == ERANGE ? "'" + text + "' is too large" : "";
  }
  const double v = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || std::isspace(static_cast<unsigned char>(text[0]))) {
    return "'" + text + "' is not a number";
  }
  if (!std::isfinite(v) || errno == ERANGE) return "'" + text + "' is not a finite number";
  if (v < 0) return "'" + text + "' is negative";
  if (v > 1e18) return "'" + text + "' is too large";
  if (whole && v != std::floor(v)) return "'" + text + "' is not a whole number";
  return "";
}

void GuardNumericOptions(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    const bool whole = type.starts_with("INT") || type.starts_with("UINT");
    if (!whole && !type.starts_with("FLOAT") && !type.starts_with("NUMBER")) continue;
    o->check(CLI::Validator([whole](std::string& v) { return CheckNumber(v, whole); }, "", "number"));
  }
  for (CLI::App* sub : app.get_subcommands({})) GuardNumericOptions(*sub);
}

namespace {
void CollectOptionalNumbers(const CLI::App& app, std::map<std::string, std::string>* bare) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_expected_min() != 0 || o->get_expected_max() != 1 || o->get_default_str().empty()) continue;
    for (const auto& name : o->get_lnames()) (*bare)["--" + name] = "--" + name + "=" + o->get_default_str();
  }
  for (const CLI::App* sub : app.get_subcommands({})) CollectOptionalNumbers(*sub, bare);
}
}  // namespace

void BareOptionalNumbers(const CLI::App& app, int argc, char** argv) {
  static std::deque<std::string> kept;  // argv's replacements outlive the parse
  std::map<std::string, std::string> bare;
  CollectOptionalNumbers(app, &bare);
  for (int i = 1; i < argc; ++i) {
    const auto it = bare.find(argv[i]);
    // (A word with '=' is an override, ++key=value or key=value; anything else is the value, refused if no number.)
    if (it == bare.end() || (i + 1 < argc && std::string_view(argv[i + 1]).find('=') == std::string_view::npos))
      continue;
    argv[i] = kept.emplace_back(it->second).data();
  }
}

CLI::Validator NonNegativeNumber() {
  return CLI::Validator([](std::string& v) { return CheckNumber(v, false); }, "NUMBER >= 0", "non-negative");
}

CLI::Validator NoCredentialInUrl() {
  return CLI::Validator([](std::string& v) -> std::string {
    if (RedactSecrets(v) == v) return "";
    return "carries a user:password, which looks like a credential; Feedrate takes S3 credentials from "
           "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials only (the value is not shown)";
  }, "URL", "no-credential");
}

CLI::Validator PositiveNumber() {
  return CLI::Validator([](std::string& v) {
    std::string why = CheckNumber(v, false);
    return !why.empty() || std::strtod(v.c_str(), nullptr) > 0 ? why : "'" + v + "' is not above zero";
  }, "NUMBER > 0", "positive");
}

std::string CheckBytes(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) ++digits;
  std::string unit = text.substr(digits);
  for (auto& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const double mult = unit.empty() || unit == "b" ? 1 : unit == "k" || unit == "kib" || unit == "kb" ? 1024.0
                    : unit == "m" || unit == "mib" || unit == "mb" ? 1048576.0
                    : unit == "g" || unit == "gib" || unit == "gb" ? 1073741824.0
                    : unit == "t" || unit == "tib" || unit == "tb" ? 1099511627776.0
                    : -1;
  const std::string number = text.substr(0, digits);
  if (mult < 0 || !CheckNumber(number, false).empty()) return "cannot read '" + text + "' as a size (e.g. 4k, 1m, 2g)";
  const double bytes = std::strtod(number.c_str(), nullptr) * mult;
  if (bytes < 1) return "'" + text + "' is not a size of at least one byte";
  if (bytes > 1e18) return "'" + text + "' is too large";
  return "";
}

// (shared by iobench and datagen)
uint64_t ParseBytes(const std::string& text) {
  if (std::string why = CheckBytes(text); !why.empty()) throw CLI::ValidationError("size", why);
  size_t digits = text.find_first_not_of("0123456789.");
  if (digits == std::string::npos) digits = text.size();
  std::string unit = text.substr(digits);
  const char u = unit.empty() ? 'b' : static_cast<char>(std::tolower(static_cast<unsigned char>(unit[0])));
  const double mult = u == 'k' ? 1024.0 : u == 'm' ? 1048576.0 : u == 'g' ? 1073741824.0 : u == 't' ? 1099511627776.0 : 1;
  return static_cast<uint64_t>(std::strtod(text.substr(0, digits).c_str(), nullptr) * mult);
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
  return RedactSecrets(out);
}

}  // namespace feedrate::cli
