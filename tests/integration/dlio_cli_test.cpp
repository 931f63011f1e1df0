// `feedrate dlio` (DLIO's command line, the `dlio_benchmark` launcher): the files and JSON keys it writes against
// what mlpstorage + DLIO wrote for the same small workload (tests/fixtures/mlpstorage/MANIFEST.json), DLIO's time
// format, figures that agree with each other, and the command lines it refuses.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json Manifest() {
  std::string path = FEEDRATE_FIXTURES_DIR;  // (appended, not `std::string(...) + "..."`: GCC 12 -Warray-bounds misfires)
  path += "/mlpstorage/MANIFEST.json";
  return ReadJson(path);
}

// What Feedrate leaves out of DLIO's keys, and why (docs/mlpstorage.md "What differs"): the checkpoint metrics a
// training run without a checkpoint reports as NaN (JSON has none), and the /proc/meminfo snapshot DLIO's ranks
// take at each epoch's end.
const std::set<std::string> kLeftOut = {"checkpoint_size_GB", "save_checkpoint_duration_mean_seconds",
                                        "save_checkpoint_duration_stdev_seconds", "save_checkpoint_io_mean_GB_per_second",
                                        "save_checkpoint_io_stdev_GB_per_second", "host_meminfo@epoch"};

void ExpectKeys(const json& object, const json& expected, const std::string& what, const std::string& suffix = "") {
  for (const auto& k : expected) {
    const std::string key = k.get<std::string>();
    if (kLeftOut.count(key + suffix) != 0 || key == "<epoch>") continue;
    EXPECT_TRUE(object.contains(key)) << what << " lacks DLIO's key " << key;
  }
}

bool IsDlioTime(const json& v) {
  static const std::regex re(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})");
  return v.is_string() && std::regex_match(v.get<std::string>(), re);
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A DLIO workload YAML in a Hydra config folder (CONFIG/workload/NAME.yaml), as mlpstorage's configs/dlio is.
void WriteWorkload(const std::string& config_dir, const std::string& name, bool generate, bool train) {
  fs::create_directories(config_dir + "/workload");
  std::ofstream(config_dir + "/workload/" + name + ".yaml")
      << "model:\n  name: unet3d\n  type: cnn\n  model_size: 499153191\nframework: pytorch\n"
      << "workflow:\n  generate_data: " << (generate ? "True" : "False") << "\n  train: " << (train ? "True" : "False")
      << "\n  checkpoint: False\n"
      << "dataset:\n  data_folder: data/unet3d/\n  format: npz\n  num_files_train: 16\n  num_samples_per_file: 1\n"
      << "  record_length_bytes: 65536\n  record_length_bytes_stdev: 0\n"
      << "reader:\n  data_loader: pytorch\n  batch_size: 2\n  read_threads: 1\n  file_shuffle: seed\n  sample_shuffle: seed\n"
      << "train:\n  epochs: 2\n  computation_time: 0.01\nmetric:\n  au: 0.90\n";
}

// Datagen and training in one DLIO invocation under mpirun, one rank per accelerator as mlpstorage starts it.
TEST(DlioCli, WritesWhatDlioWritesUnderMpirun) {
  test::TempDir dir;
  const std::string cd = dir / "configs", data = dir / "data", run = dir / "run";
  WriteWorkload(cd, "tiny_h100", true, true);
  const std::vector<std::string> task = {"workload=tiny_h100", "++workload.dataset.data_folder=" + data,
                                         "++workload.train.epochs=2"};
  std::string args = "dlio";
  for (const auto& t : task) args += " " + t;
  args += " ++hydra.run.dir=" + run + " ++hydra.output_subdir=dlio_config --config-dir=" + cd;
  auto r = Sh(MpiFeedrate(2, args));
  ASSERT_EQ(r.code, 0) << r.output;
  const json m = Manifest();

  // The files: DLIO's per rank, and the Hydra folder with exactly DLIO's three.
  for (const auto& f : m["run"]["dlio_files"]) {
    std::string name = f.get<std::string>();
    if (name.starts_with("<rank>_")) {
      for (const char* rank : {"0_", "1_"}) EXPECT_TRUE(fs::exists(run + "/" + rank + name.substr(7))) << rank << name;
    } else {
      EXPECT_TRUE(fs::exists(run + "/" + name)) << name;
    }
  }
  EXPECT_FALSE(fs::exists(run + "/2_output.json"));
  EXPECT_EQ(json(FilesIn(run + "/dlio_config")), m["run"]["folders"]["dlio_config"]);

  // summary.json: DLIO's keys and time format; the figures agree with the per-rank files.
  const json s = ReadJson(run + "/summary.json");
  ExpectKeys(s, m["summary_keys"], "summary.json");
  ExpectKeys(s["metric"], m["summary_metric_keys"], "summary.json metric");
  EXPECT_TRUE(IsDlioTime(s["start"])) << s["start"];
  EXPECT_TRUE(IsDlioTime(s["end"])) << s["end"];
  EXPECT_LT(s["start"].get<std::string>(), s["end"].get<std::string>());
  EXPECT_EQ(s["num_accelerators"], 2);
  ASSERT_EQ(s["metric"]["train_au_percentage"].size(), 2u);
  for (int e = 1; e <= 2; ++e) {
    double au_sum = 0;
    for (int rank = 0; rank < 2; ++rank) {
      const json o = ReadJson(run + "/" + std::to_string(rank) + "_output.json");
      ExpectKeys(o, m["output_keys"], "output.json");
      const json& ep = o[std::to_string(e)];
      ExpectKeys(ep, m["output_epoch_keys"], "output.json epoch", "@epoch");
      EXPECT_EQ(ep["load"]["block1"].size(), 4u);  // 16 samples / batch 2 / 2 ranks
      EXPECT_EQ(ep["compute"]["block1"].size(), 4u);
      for (size_t i = 0; i < 4; ++i) {
        EXPECT_NEAR(ep["compute"]["block1"][i].get<double>(), 0.01, 0.005);
        EXPECT_GE(ep["proc"]["block1"][i].get<double>(), ep["compute"]["block1"][i].get<double>());
      }
      au_sum += ep["au"]["block1"].get<double>();
      const json st = ReadJson(run + "/" + std::to_string(rank) + "_per_epoch_stats.json")[std::to_string(e)];
      ExpectKeys(st, m["per_epoch_stats_epoch_keys"], "per_epoch_stats");
      ExpectKeys(st["block1"], m["per_epoch_stats_block_keys"], "per_epoch_stats block1");
      for (const char* k : {"start", "end"}) EXPECT_TRUE(IsDlioTime(st[k]) && IsDlioTime(st["block1"][k])) << st;
      EXPECT_TRUE(st["duration"].is_string()) << st;  // DLIO writes "%.2f" text
    }
    EXPECT_NEAR(au_sum / 2, s["metric"]["train_au_percentage"][e - 1].get<double>(), 1e-6);  // AU: mean over ranks
  }

  // The Hydra folder: the workload under `workload:`, the overrides as given, where the outputs went.
  const YAML::Node config = YAML::LoadFile(run + "/dlio_config/config.yaml");
  EXPECT_EQ(config["workload"]["dataset"]["data_folder"].as<std::string>(), data);
  EXPECT_TRUE(config["workload"]["workflow"]["train"].as<bool>());
  const YAML::Node overrides = YAML::LoadFile(run + "/dlio_config/overrides.yaml");
  ASSERT_EQ(overrides.size(), task.size());
  for (size_t i = 0; i < task.size(); ++i) EXPECT_EQ(overrides[i].as<std::string>(), task[i]);
  const YAML::Node hydra = YAML::LoadFile(run + "/dlio_config/hydra.yaml")["hydra"];
  EXPECT_EQ(hydra["run"]["dir"].as<std::string>(), run);
  EXPECT_EQ(hydra["output_subdir"].as<std::string>(), "dlio_config");
  EXPECT_EQ(hydra["runtime"]["choices"]["workload"].as<std::string>(), "tiny_h100");
  EXPECT_EQ(hydra["runtime"]["workload_source"].as<std::string>(), cd + "/workload/tiny_h100.yaml");

  // dlio.log: DLIO's line kinds, every metric line DLIO writes, the AU it printed.
  const std::string log = test::ReadFile(run + "/dlio.log");
  for (const auto& line : m["dlio_log_metric_lines"]) EXPECT_NE(log.find(line.get<std::string>() + ": "), std::string::npos) << line;
  EXPECT_NE(log.find("Running DLIO [Training] with 2 process(es)"), std::string::npos) << log;
  EXPECT_NE(log.find("Running DLIO [Generating data] with 2 process(es)"), std::string::npos) << log;
  EXPECT_EQ(fs::directory_iterator(data + "/train") == fs::directory_iterator(), false);
}

// A datagen-only workload (mlpstorage's `training datagen`): the dataset, dlio.log and the Hydra folder; no summary,
// as DLIO writes none for datagen.
TEST(DlioCli, DatagenWritesTheDatasetAndDliosLog) {
  test::TempDir dir;
  const std::string cd = dir / "configs", data = dir / "data", run = dir / "run";
  WriteWorkload(cd, "tiny_datagen", true, false);
  auto r = Sh(Feedrate("dlio workload=tiny_datagen ++workload.dataset.data_folder=" + data + " ++hydra.run.dir=" + run +
                       " ++hydra.output_subdir=dlio_config --config-dir " + cd));
  ASSERT_EQ(r.code, 0) << r.output;
  const json m = Manifest();
  for (const auto& f : m["datagen"]["dlio_files"]) EXPECT_TRUE(fs::exists(run + "/" + f.get<std::string>())) << f;
  EXPECT_EQ(json(FilesIn(run + "/dlio_config")), m["datagen"]["folders"]["dlio_config"]);
  EXPECT_FALSE(fs::exists(run + "/summary.json"));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(data + "/train")) files += e.path().extension() == ".npz" ? 1 : 0;
  EXPECT_EQ(files, 16u);
  const std::string log = test::ReadFile(run + "/dlio.log");
  static const std::regex line(R"(\[OUTPUT\] \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6} Generation done)");
  EXPECT_TRUE(std::regex_search(log, line)) << log;
}

// What a checkpoint run reads no dataset for: DLIO fills these with its training defaults (8 files, potential
// caching of them), which say nothing of a checkpoint.
const std::set<std::string> kCheckpointLeftOut = {"data_size_per_host_GB", "num_files_eval", "num_files_train",
                                                  "num_samples_per_file", "potential_caching"};

// The checkpoint workflow (mlpstorage's `checkpointing run`: workflow.checkpoint without train), two ranks, a small
// llama3 8b shape: `feedrate checkpoint`'s write and read phases, DLIO's files and keys.
TEST(DlioCli, CheckpointWorkflowWritesDliosFiles) {
  test::TempDir dir("/var/tmp");
  const std::string ck = dir / "ck", run = dir / "run";
  auto r = Sh(MpiFeedrate(2, "dlio workload=llama3_8b ++workload.model.num_layers=2 ++workload.model.transformer.hidden_size=256 "
                             "++workload.model.transformer.ffn_hidden_size=512 ++workload.model.transformer.vocab_size=1024 "
                             "++workload.checkpoint.time_between_checkpoints=0 ++workload.checkpoint.num_checkpoints_write=2 "
                             "++workload.checkpoint.num_checkpoints_read=2 ++workload.checkpoint.checkpoint_folder=" + ck +
                             " ++hydra.run.dir=" + run + " ++hydra.output_subdir=dlio_config"));
  ASSERT_EQ(r.code, 0) << r.output;
  const json m = Manifest()["checkpoint"];
  EXPECT_TRUE(fs::exists(ck + "/global_epoch1_step2"));
  EXPECT_EQ(json(FilesIn(run + "/dlio_config")), m["folders"]["dlio_config"]);
  const json s = ReadJson(run + "/summary.json");
  for (const auto& k : m["summary_keys"]) {
    if (kCheckpointLeftOut.count(k.get<std::string>()) == 0) {
      EXPECT_TRUE(s.contains(k.get<std::string>())) << k;
    }
  }
  ExpectKeys(s["metric"], m["summary_metric_keys"], "checkpoint summary.json metric");
  EXPECT_TRUE(IsDlioTime(s["start"]) && IsDlioTime(s["end"])) << s;
  EXPECT_EQ(s["num_accelerators"], 2);
  EXPECT_EQ(s["num_hosts"], 1);
  for (int rank = 0; rank < 2; ++rank) {
    const json o = ReadJson(run + "/" + std::to_string(rank) + "_output.json");
    for (const auto& k : m["output_keys"]) {
      if (k != "<epoch>") {
        EXPECT_TRUE(o.contains(k.get<std::string>())) << k;
      }
    }
    ExpectKeys(o["1"], m["output_epoch_keys"], "checkpoint output.json epoch");
    const json st = ReadJson(run + "/" + std::to_string(rank) + "_per_epoch_stats.json")["1"];
    for (const char* k : {"save_ckpt1", "save_ckpt2", "load_ckpt1", "load_ckpt2"}) {
      ASSERT_TRUE(st.contains(k)) << st;
      ExpectKeys(st[k], m["per_epoch_stats_checkpoint_keys"], k);
      EXPECT_GT(st[k]["duration"].get<double>(), 0) << st;
      // DLIO's per-rank throughput: the whole checkpoint over this rank's seconds.
      EXPECT_NEAR(st[k]["throughput"].get<double>() * st[k]["duration"].get<double>(),
                  s["metric"]["checkpoint_size_GB"].get<double>(), 1e-9);
    }
    EXPECT_FALSE(st.contains("save_ckpt3"));
  }
  const std::string log = test::ReadFile(run + "/dlio.log");
  for (const auto& line : m["dlio_log_metric_lines"]) EXPECT_NE(log.find(line.get<std::string>() + ": "), std::string::npos) << line;
  EXPECT_NE(log.find("Running DLIO [Checkpointing] with 2 process(es)"), std::string::npos) << log;
}

// What DLIO's command line says that Feedrate cannot do is refused, naming the word, exit 2, nothing written.
TEST(DlioCli, RefusesWhatItCannotTake) {
  test::TempDir dir;
  const std::string cd = dir / "configs", run = dir / "run";
  WriteWorkload(cd, "idle", false, false);
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"dlio ++workload.train.epochs=1", "workload=NAME is required"},
           {"dlio workload=unet3d_h100 --frobnicate", "unknown option '--frobnicate'"},
           {"dlio workload=unet3d_h100 dataset.num_files_train=4", "'dataset.num_files_train=4'"},
           {"dlio workload=unet3d_h100 stray", "'stray' is not KEY=VALUE"},
           {"dlio workload=idle --config-dir=" + cd + " ++hydra.run.dir=" + run, "workflow.generate_data, workflow.train and workflow.checkpoint are all off"},
           {"dlio workload=no_such_workload ++hydra.run.dir=" + run, "no_such_workload"}}) {
    auto r = Sh(Feedrate(c.args));
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(run));
}

// The launcher mlpstorage's --dlio-bin-path DIR starts (DIR/dlio_benchmark) sits beside the binary and runs it.
TEST(DlioCli, TheLauncherBesideTheBinaryRunsFeedrate) {
  const std::string launcher = (fs::path(FEEDRATE_BIN).parent_path() / "dlio_benchmark").string();
  ASSERT_TRUE(fs::exists(launcher)) << launcher;
  auto r = Sh("'" + launcher + "' --help");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("usage: feedrate dlio workload=NAME"), std::string::npos) << r.output;
  auto bad = Sh("'" + launcher + "' --frobnicate");
  EXPECT_EQ(bad.code, 2) << bad.output;
}

}  // namespace
}  // namespace feedrate::it
