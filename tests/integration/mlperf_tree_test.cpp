// Feedrate's own commands writing mlpstorage's results tree (--mlperf-root): the layout mlpstorage + DLIO write
// (tests/fixtures/mlpstorage/MANIFEST.json names the files), mlpstorage v3.0's metadata keys, one results.json per
// workload, back-to-back runs in their own timestamped folders, the systems draft, `report` over the whole tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <yaml-cpp/yaml.h>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTreeData = "--params dataset.num_files_train=16 dataset.record_length_bytes=65536 "
                           "dataset.record_length_bytes_stdev=0 reader.batch_size=2 train.computation_time=0.001";

std::vector<std::string> Stamps(const std::string& dir) {
  std::vector<std::string> out;
  static const std::regex stamp(R"(\d{8}_\d{6})");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && std::regex_match(e.path().filename().string(), stamp)) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every file mlpstorage and DLIO put in such a folder (the manifest's names, <rank> for each of `ranks`).
void ExpectFolder(const std::string& dir, const json& section, const std::string& mode, const std::string& stamp, int ranks) {
  for (const auto& f : section["dlio_files"]) {
    std::string name = f.get<std::string>();
    for (int r = 0; r < (name.starts_with("<rank>_") ? ranks : 1); ++r) {
      const std::string file = name.starts_with("<rank>_") ? std::to_string(r) + "_" + name.substr(7) : name;
      EXPECT_TRUE(fs::exists(dir + "/" + file)) << dir << "/" << file;
    }
  }
  for (const auto& f : section["mlpstorage_files"]) {
    std::string name = std::regex_replace(f.get<std::string>(), std::regex("<timestamp>"), stamp);
    EXPECT_TRUE(fs::exists(dir + "/" + name)) << dir << "/" << name;
  }
  for (const auto& f : section["folders"]["dlio_config"]) EXPECT_TRUE(fs::exists(dir + "/dlio_config/" + f.get<std::string>()));
  const json meta = ReadJson(dir + "/" + mode + "_" + stamp + "_metadata.json");
  // mlpstorage v3.0's metadata keys (benchmarks/base.py `metadata`), the ones its checker and reportgen read.
  for (const char* k : {"benchmark_type", "model", "command", "run_datetime", "num_processes", "accelerator", "result_dir",
                        "parameters", "override_parameters", "system_info", "runtime", "verification", "args"}) {
    EXPECT_TRUE(meta.contains(k)) << dir << " metadata lacks " << k;
  }
  EXPECT_EQ(meta["run_datetime"], stamp);
  EXPECT_EQ(meta["benchmark_type"], mode);
}

TEST(MlperfTree, FeedratesOwnCommandsWriteMlpstoragesTree) {
  test::TempDir dir("/var/tmp");
  const std::string root = dir / "tree", data = dir / "data";
  const std::string tree = " --mlperf-root " + root + " --org acme --system sut1";
  auto size = Sh(Feedrate("datasize --model unet3d --accelerator-type h100 --client-host-memory-in-gb 1 "
                          "--max-accelerators 2" + tree));
  ASSERT_EQ(size.code, 0) << size.output;
  auto gen = Sh(MpiFeedrate(2, "datagen --model unet3d --accelerator-type h100 --data-dir " + data + " " + kTreeData + tree));
  ASSERT_EQ(gen.code, 0) << gen.output;
  auto run = Sh(MpiFeedrate(2, "run --model unet3d --accelerator-type h100 --data-dir " + data + " " + kTreeData +
                                   " --loops 2 -q" + tree));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto ck = Sh(MpiFeedrate(2, "checkpoint --model llama3-8b --checkpoint-folder " + dir / "ck" + " --scale 0.0005 "
                                  "--time-between 0 -q --num-checkpoints-write 1 --num-checkpoints-read 1" + tree));
  ASSERT_EQ(ck.code, 0) << ck.output;

  const json m = ReadJson(std::string(FEEDRATE_FIXTURES_DIR) + "/mlpstorage/MANIFEST.json");
  const std::string results = root + "/open/acme/results/sut1";
  const auto runs = Stamps(results + "/training/unet3d/run");
  ASSERT_EQ(runs.size(), 2u);  // back to back, each its own second
  for (const auto& s : runs) ExpectFolder(results + "/training/unet3d/run/" + s, m["run"], "training", s, 2);
  const auto gens = Stamps(results + "/training/unet3d/datagen");
  ASSERT_EQ(gens.size(), 1u);
  ExpectFolder(results + "/training/unet3d/datagen/" + gens[0], m["datagen"], "training", gens[0], 0);
  const auto cks = Stamps(results + "/checkpointing/llama3-8b");
  ASSERT_EQ(cks.size(), 1u);
  ExpectFolder(results + "/checkpointing/llama3-8b/" + cks[0], m["checkpoint"], "checkpointing", cks[0], 2);
  // The datasize record where mlpstorage v3.0 puts its own.
  EXPECT_EQ(Stamps(results + "/training/unet3d/datasize").size(), 1u);

  // What the output logs hold, the run's metadata, one results.json per workload with every run.
  const std::string first = results + "/training/unet3d/run/" + runs[0];
  EXPECT_NE(test::ReadFile(first + "/training_run.stdout.log").find("AU "), std::string::npos);
  const json meta = ReadJson(first + "/training_" + runs[0] + "_metadata.json");
  EXPECT_EQ(meta["parameters"]["dataset"]["num_files_train"], 16);
  EXPECT_EQ(meta["override_parameters"]["dataset.num_files_train"], "16");
  EXPECT_EQ(meta["args"]["num_accelerators"], 2);
  EXPECT_EQ(meta["verification"], "invalid");  // 16 files: the dataset-size rule
  EXPECT_EQ(ReadJson(results + "/training/unet3d/run/results.json").size(), 2u);
  EXPECT_EQ(ReadJson(results + "/checkpointing/llama3-8b/results.json").size(), 1u);

  // The systems draft: written once, what Feedrate knows filled, the rest marked; never overwritten.
  const std::string systems = root + "/open/acme/systems/sut1.yaml";
  const std::string draft = test::ReadFile(systems);
  EXPECT_NE(draft.find("submission_name: sut1"), std::string::npos) << draft;
  EXPECT_NE(draft.find("TODO"), std::string::npos);
  // A typed field (enum, bool, number) is never given a TODO string (mlpstorage v3.0's checker multiplied
  // remap_time_in_seconds and died): left out of the YAML, named in its header.
  const YAML::Node parsed = YAML::LoadFile(systems);
  const YAML::Node sol = parsed["system_under_test"]["solution"];
  EXPECT_FALSE(sol["capabilities"]) << draft;
  EXPECT_FALSE(sol["architecture"]) << draft;
  EXPECT_FALSE(parsed["system_under_test"]["deployment"]) << draft;
  EXPECT_FALSE(parsed["system_under_test"]["clients"][0]["chassis"]["cpu_qty"]) << draft;
  for (const auto& nic : parsed["system_under_test"]["clients"][0]["networking"]) {
    if (nic["speed"]) {
      EXPECT_NO_THROW(nic["speed"].as<int>()) << draft;
    }
  }
  EXPECT_NE(draft.find("remap_time_in_seconds (int)"), std::string::npos) << draft;
  std::ofstream(systems) << "system_under_test: {solution: {submission_name: sut1}}\n";
  ASSERT_EQ(Sh(Feedrate("datasize -w unet3d_h100 --client-memory-gib 1" + tree)).code, 0);
  EXPECT_EQ(test::ReadFile(systems), "system_under_test: {solution: {submission_name: sut1}}\n");

  // `report` over the whole tree: every run under it (2 training runs, 1 checkpoint run).
  auto rep = Sh(Feedrate("report " + root + " -o " + dir / "rep/report.html"));
  ASSERT_EQ(rep.code, 0) << rep.output;
  EXPECT_EQ(ReadJson(dir / "rep/results.json").size(), 3u);
}

TEST(MlperfTree, RefusesWhatWouldMixOrLoseRecords) {
  test::TempDir dir;
  // A workload whose model name climbs out of the tree (the model is a folder of it, as --org and --system are).
  test::WriteFile(dir / "w.yaml", "model:\n  name: ../../../escape\nframework: pytorch\nworkflow:\n  train: True\n"
                                  "dataset:\n  format: npz\n  num_files_train: 8\n  record_length_bytes: 4096\n"
                                  "reader:\n  batch_size: 1\ntrain:\n  epochs: 1\n  computation_time: 0.01\n");
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"run -w unet3d_h100 --data-dir " + dir / "d" + " --mlperf-root " + dir / "t", "--mlperf-root needs --org and --system"},
           {"run -w unet3d_h100 --data-dir " + dir / "d" + " --mlperf-root " + dir / "t" + " --org a --system s --results-dir " + dir / "r",
            "excludes --mlperf-root"},
           {"run -w unet3d_h100 --data-dir " + dir / "d" + " --loops 2 --results-dir " + dir / "r", "not one --results-dir"},
           {"run -w unet3d_h100 --data-dir " + dir / "d" + " --mlperf-root " + dir / "t" + " --org a/b --system s", "plain folder name"},
           {"run -w unet3d_h100 --data-dir " + dir / "d" + " --division closed", "--division requires --mlperf-root"},
           {"run -w " + dir / "w.yaml" + " --data-dir " + dir / "d" + " --mlperf-root " + dir / "t" + " --org a --system s",
            "the model '../../../escape' would be a folder of the results tree but is not a plain folder name"}}) {
    auto r = Sh(Feedrate(c.args));
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "t"));
  EXPECT_FALSE(fs::exists(dir / "r"));
  EXPECT_FALSE(fs::exists(dir.path() + "/../escape"));
}

}  // namespace
}  // namespace feedrate::it
