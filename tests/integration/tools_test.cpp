// datasize, inspect, and compatibility with datasets written the way DLIO writes them (numpy).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "datagen/generator.h"
#include "harness.h"

namespace feedrate::it {
namespace {

TEST(Datasize, MlpstorageWorkedExample) {
  // 2 clients x 128 GiB, 8 H100s: memory rule 9375.06 files (9376 pass the submission checker), steps rule
  // 500 * 8 * 7 = 28000 files.
  auto r = Sh(Feedrate("datasize -w unet3d_h100 --client-memory-gib 128 --clients 2 --num-accelerators 8 --json"));
  ASSERT_EQ(r.code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["files_by_memory"], 9376);
  EXPECT_EQ(j["files_by_steps"], 28000);
  EXPECT_EQ(j["num_files_train"], 28000);
  EXPECT_EQ(j["mlpstorage_datasize_files"], 28000);
  const std::string big_args = "datasize -w unet3d_h100 --client-memory-gib 1024 --clients 4 --num-accelerators 8";
  auto big = nlohmann::json::parse(Sh(Feedrate(big_args + " --json")).output);
  EXPECT_EQ(big["num_files_train"], 150001);  // 5 * 4 TiB / 146600628 = 150000.94
  EXPECT_EQ(big["mlpstorage_datasize_files"], 150000);
  auto text = Sh(Feedrate(big_args));
  EXPECT_NE(text.output.find("mlpstorage's datasize prints 150000"), std::string::npos) << text.output;
  // The old spelling (the job's total, where run's --accelerators is per rank) still answers, with a warning.
  auto old = Sh(Feedrate("datasize -w unet3d_h100 --client-memory-gib 128 --clients 2 --accelerators 8 --json"));
  ASSERT_EQ(old.code, 0) << old.output;
  EXPECT_NE(old.output.find("--accelerators is deprecated"), std::string::npos) << old.output;
  EXPECT_NE(old.output.find("\"files_by_steps\": 28000"), std::string::npos) << old.output;
}

TEST(Inspect, FixturesAndErrors) {
  const std::string fx = test::FixturesDir() + "/npy/";
  auto ok = Sh(Feedrate("inspect --json " + fx + "dlio_layout_stored.npz"));
  ASSERT_EQ(ok.code, 0) << ok.output;
  auto j = nlohmann::json::parse(ok.output);
  EXPECT_EQ(j["format"], "npz");
  EXPECT_EQ(j["arrays"][0]["name"], "x");
  EXPECT_EQ(j["arrays"][0]["shape"], nlohmann::json({64, 64, 4}));
  EXPECT_EQ(j["arrays"][0]["data_offset"], 183);  // 55 + 128
  // Content decides the format: an .npy renamed to .npz is still read as .npy.
  test::TempDir dir;
  std::filesystem::copy_file(fx + "f4_64x33.npy", dir / "disguised.npz");
  auto disguised = Sh(Feedrate("inspect --json " + dir / "disguised.npz"));
  ASSERT_EQ(disguised.code, 0) << disguised.output;
  EXPECT_EQ(nlohmann::json::parse(disguised.output)["format"], "npy");
  auto structured = Sh(Feedrate("inspect " + fx + "v3_0_structured.npy"));
  EXPECT_EQ(structured.code, 2);
  EXPECT_NE(structured.output.find("v3_0_structured.npy"), std::string::npos);
  std::string bytes = test::ReadFile(fx + "small_stored.npz");
  test::WriteFile(dir / "cut.npz", bytes.substr(0, bytes.size() - 30));
  auto cut = Sh(Feedrate("inspect " + dir / "cut.npz"));
  EXPECT_EQ(cut.code, 2);
  EXPECT_NE(cut.output.find("cut.npz"), std::string::npos) << cut.output;
}

// Writes a dataset exactly as DLIO's npz generator does (numpy seeded with 10, np.savez) and checks that
// (1) Feedrate's generator produces the same file names and array shapes and (2) Feedrate runs on it.
TEST(DlioCompatibility, ReadsDlioWrittenDatasetAndMatchesItsShapes) {
  if (!HaveNumpy()) GTEST_SKIP() << "python3-numpy not installed";
  test::TempDir dir;
  const std::string dlio = dir / "dlio", ours = dir / "ours";
  auto py = Sh(std::string(FEEDRATE_PYTHON3) + " " + FEEDRATE_TEST_SCRIPTS + "/dlio_npz_generator.py " + dlio +
               " 10 2 40000 12000");
  ASSERT_EQ(py.code, 0) << py.output;
  std::string params = "--param dataset.num_files_train=10 --param dataset.num_samples_per_file=2"
                       " --param dataset.record_length_bytes=40000 --param dataset.record_length_bytes_stdev=12000";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + ours + " " + params)).code, 0);
  for (int i = 0; i < 10; ++i) {
    std::string name = "/train/img_" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "_of_10.npz";
    auto a = nlohmann::json::parse(Sh(Feedrate("inspect --json " + dlio + name)).output);
    auto b = nlohmann::json::parse(Sh(Feedrate("inspect --json " + ours + name)).output);
    EXPECT_EQ(a["arrays"][0]["shape"], b["arrays"][0]["shape"]) << name;
    EXPECT_EQ(a["arrays"][1]["shape"], b["arrays"][1]["shape"]) << name;
  }
  auto run = Sh(MpiFeedrate(2, "run -w unet3d_h100 --data-dir " + dlio + " " + params +
                                   " --param reader.batch_size=1 --param train.epochs=2 --param train.computation_time=0.01"
                                   " --results-dir " + dir / "r"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;  // read correctly; the verdict is timing
  EXPECT_GT(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 0u);
}

// The per-accelerator demand table (reference spec 1.2: batch x record / computation_time at 100% AU).
// README's first command (scripts/quickstart.sh, its set-up skipped) completes and prints no warning: a new user
// gets nothing to act on that they cannot act on (the built-in unet3d's checkpoint keys used to warn).
TEST(Quickstart, RunsAndPrintsNoWarning) {
  test::TempDir dir;
  auto r = Sh("cd " + std::string(FEEDRATE_SOURCE_DIR) + " && FEEDRATE_QUICKSTART_NO_SETUP=1 FEEDRATE_BIN=" +
                  FEEDRATE_BIN + " FEEDRATE_QUICKSTART_DATA=" + dir.path() + "/data FEEDRATE_QUICKSTART_RESULTS=" +
                  dir.path() + "/results bash scripts/quickstart.sh 2>&1",
              300);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("quickstart: emulation completed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/results/summary.json")) << r.output;
}

TEST(Help, EveryCommandsHelpIsPrintableAndNamesItsChoices) {
  // Enum options once printed their enum's numbers, as raw bytes for char-based enums.
  for (const char* cmd : {"", "datagen", "run", "checkpoint", "datasize", "inspect", "iobench", "workloads", "sweep", "report"}) {
    auto r = Sh(Feedrate(std::string(cmd) + " --help"));
    ASSERT_EQ(r.code, 0) << cmd << r.output;
    for (unsigned char c : r.output) ASSERT_TRUE(c == '\n' || (c >= 0x20 && c != 0x7f)) << cmd << ": byte " << int{c};
  }
  EXPECT_NE(Sh(Feedrate("run --help")).output.find("{host,pinned,device}"), std::string::npos);
  EXPECT_NE(Sh(Feedrate("iobench --help")).output.find("{cpuonly,cpu_gpu,"), std::string::npos);
  EXPECT_NE(Sh(Feedrate("checkpoint --help")).output.find("{auto,uring,posix}"), std::string::npos);
}

TEST(Workloads, ListsEveryBuiltinWithItsDemand) {
  auto r = Sh(Feedrate("workloads --json"));
  ASSERT_EQ(r.code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 30u);  // 26 training workloads and the 4 llama3 checkpoint workloads
  std::map<std::string, nlohmann::json> by;
  for (const auto& w : j) by[w["name"]] = w;
  // Every MLPerf Storage v3.0 training config, each naming the mlcommons/storage commit it follows.
  for (const char* v3 : {"flux_a100", "flux_h100", "flux_b200", "flux_mi355", "dlrm_a100", "dlrm_h100", "dlrm_b200",
                         "dlrm_mi355", "dlrm_parquet_a100", "dlrm_parquet_h100", "retinanet_a100", "retinanet_h100",
                         "retinanet_b200", "retinanet_mi355", "unet3d_b200"}) {
    ASSERT_TRUE(by.contains(v3)) << v3;
    const std::string source = by[v3]["source"];
    EXPECT_NE(source.find("mlcommons/storage"), std::string::npos) << v3 << ": " << source;
    EXPECT_NE(source.find(" @"), std::string::npos) << v3 << ": " << source;
  }
  EXPECT_EQ(by["flux_b200"]["format"], "parquet");
  EXPECT_EQ(by["dlrm_b200"]["record_length_bytes"], 761);
  EXPECT_NE(by["dlrm_dlio_upstream"]["source"].get<std::string>().find("argonne-lcf"), std::string::npos);
  EXPECT_NEAR(by["unet3d_h100"]["samples_per_s_per_accelerator"].get<double>(), 21.67, 0.01);
  EXPECT_NEAR(by["unet3d_h100"]["mib_per_s_per_accelerator"].get<double>(), 3030, 1);
  EXPECT_NEAR(by["resnet50_h100"]["samples_per_s_per_accelerator"].get<double>(), 1785.7, 0.1);
  EXPECT_NEAR(by["resnet50_h100"]["mib_per_s_per_accelerator"].get<double>(), 195.3, 0.1);
  EXPECT_NEAR(by["cosmoflow_a100"]["mib_per_s_per_accelerator"].get<double>(), 490, 1);
  EXPECT_EQ(by["cosmoflow_h100"]["au_bar"], 0.7);
  EXPECT_EQ(by["bert_v100"]["format"], "tfrecord");
  EXPECT_NE(by["resnet50_a100"]["source"].get<std::string>().find("v2.0"), std::string::npos);
  EXPECT_EQ(by["llama3_8b"]["kind"], "checkpoint");
  EXPECT_EQ(by["llama3_8b"]["parameters"], 8030261248u);
  EXPECT_EQ(by["llama3_405b"]["closed_world"], 512);
  auto text = Sh(Feedrate("workloads"));
  EXPECT_NE(text.output.find("cosmoflow_v100"), std::string::npos);
  EXPECT_NE(text.output.find("104.7"), std::string::npos);  // llama3_8b's checkpoint GiB
}

// DLIO's npy layout (np.save of uint8 (d1, d2, samples)): numpy loads every generated file with DLIO's shapes,
// and a run reads each whole file per sample.
TEST(DlioCompatibility, NpyDatagenIsNumpyLoadableAndRuns) {
  test::TempDir dir;
  const std::string data = dir / "npy";
  const std::string params = "--param dataset.format=npy --param dataset.num_files_train=6 "
                             "--param dataset.num_samples_per_file=2 --param dataset.record_length_bytes=40000 "
                             "--param dataset.record_length_bytes_stdev=12000";
  auto gen = Sh(MpiFeedrate(2, "datagen -w unet3d_h100 --data-dir " + data + " " + params));
  ASSERT_EQ(gen.code, 0) << gen.output;
  uint64_t total = 0;
  const auto dims = DlioDimensions(40000, 12000, 6);
  for (int i = 0; i < 6; ++i) {
    std::string path = data + "/train/img_" + std::to_string(i) + "_of_6.npy";
    auto j = nlohmann::json::parse(Sh(Feedrate("inspect --json " + path)).output);
    EXPECT_EQ(j["arrays"][0]["shape"], nlohmann::json({dims[i].first, dims[i].second, 2})) << path;
    EXPECT_EQ(j["arrays"][0]["dtype_descr"], "|u1");
    total += std::filesystem::file_size(path);
    if (HaveNumpy()) {
      auto py = Sh(std::string(FEEDRATE_PYTHON3) + " -c \"import numpy, sys; a = numpy.load(sys.argv[1]); "
                   "print(a.dtype, a.shape)\" " + path);
      EXPECT_EQ(py.output, "uint8 (" + std::to_string(dims[i].first) + ", " + std::to_string(dims[i].second) + ", 2)\n");
    }
  }
  auto run = Sh(Feedrate("run -w unet3d_h100 --data-dir " + data + " " + params +
                         " --param reader.batch_size=2 --param train.epochs=1 --param train.computation_time=0"
                         " --results-dir " + dir / "r"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  // 12 samples, 6 steps of 2: every sample reads its whole file, so each file is read twice.
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 2 * total);
}

}  // namespace
}  // namespace feedrate::it
