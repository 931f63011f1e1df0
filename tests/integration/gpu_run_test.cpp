// `feedrate run --accelerator-memory pinned|device` against the CUDA test double (tests/gpu_double): every byte
// read reaches the accelerator's "device" memory, every buffer, stream and event is freed, and a GPU path that
// cannot run ends with exit 2 and one line naming what is missing.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness.h"

namespace feedrate::it {
namespace {

// The test double's lines (one per process that loaded it): what was left allocated and the bytes it copied.
struct FakeReport {
  long device_allocs = -1, pinned_allocs = -1, streams = -1, events = -1, contexts = -1;
  unsigned long long h2d_bytes = 0;
};
std::vector<FakeReport> ReadFakeReports(const std::string& path) {
  std::vector<FakeReport> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    FakeReport r;
    if (std::sscanf(line.c_str(), "device_allocs=%ld pinned_allocs=%ld streams=%ld events=%ld contexts=%ld h2d_bytes=%llu",
                    &r.device_allocs, &r.pinned_allocs, &r.streams, &r.events, &r.contexts, &r.h2d_bytes) == 6) {
      out.push_back(r);
    }
  }
  return out;
}

std::string FakeCuda(const std::string& report, int devices = 1) {
  return std::string("FEEDRATE_LIBCUDA=") + FEEDRATE_FAKE_CUDA + " FEEDRATE_FAKE_CUDA_REPORT=" + report +
         " FEEDRATE_FAKE_CUDA_DEVICES=" + std::to_string(devices) + " ";
}

class GpuRun : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + dir_.path() + " " + kData + " --content verifiable"));
    ASSERT_EQ(gen.code, 0) << gen.output;
  }
  std::string Run(const std::string& extra) const {
    return "run -w unet3d_h100 --data-dir " + dir_.path() + " " + kData +
           " --param reader.batch_size=2 --param train.epochs=2 --param train.computation_time=0.002 -q " + extra;
  }
  test::TempDir dir_;
  const std::string kData = SmallDatasetParams(24, 20000);
};

TEST_F(GpuRun, DeviceMemoryReceivesEveryByteReadAndEverythingIsFreed) {
  for (const std::string extra : {"", "--odirect --engine uring"}) {
    SCOPED_TRACE(extra);
    const std::string res = dir_ / ("r" + std::to_string(extra.size())), report = dir_ / ("fake" + std::to_string(extra.size()));
    auto run = Sh(FakeCuda(report) + Feedrate(Run("-n 2 --verify 1 --accelerator-memory device --results-dir " + res + " " + extra)));
    ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
    EXPECT_NE(run.output.find("copied host to GPU at"), std::string::npos) << run.output;
    auto f = ReadJson(res + "/summary.json")["feedrate"];
    const auto& a = f["accelerator_memory"];
    EXPECT_EQ(a["mode"], "device") << a.dump();
    EXPECT_TRUE(f["retain_batches"].get<bool>());
    // The samples' own bytes are copied, not the O_DIRECT windows around them.
    EXPECT_EQ(a["h2d_bytes"].get<uint64_t>(), f["bytes_read"].get<uint64_t>()) << a.dump();
    EXPECT_EQ(a["batches_copied"].get<uint64_t>(), 2u * 2u * f["steps_per_epoch"].get<uint64_t>());
    EXPECT_GE(a["copy_seconds"].get<double>(), a["copy_stall_seconds"].get<double>());
    EXPECT_EQ(a["ranks"][0]["gpus"][0]["name"], "Feedrate test double GPU");
    EXPECT_GT(f["verify"]["bytes_checked"].get<uint64_t>(), 0u);  // the pinned slots held the dataset's bytes
    auto fake = ReadFakeReports(report);
    ASSERT_EQ(fake.size(), 1u);
    EXPECT_EQ(fake[0].h2d_bytes, a["h2d_bytes"].get<uint64_t>());  // the driver saw the copies the summary reports
    EXPECT_EQ(fake[0].device_allocs, 0);
    EXPECT_EQ(fake[0].pinned_allocs, 0);
    EXPECT_EQ(fake[0].streams, 0);
    EXPECT_EQ(fake[0].events, 0);
    EXPECT_EQ(fake[0].contexts, 0);
  }
}

// Two ranks of two accelerators over --gpus 0,1: global accelerator g uses GPU g % 2, on every rank.
TEST_F(GpuRun, AcceleratorsMapOntoGpusRoundRobinAcrossRanksAndPinnedCopiesNothing) {
  const std::string report = dir_ / "fake";
  auto run = Sh(FakeCuda(report, 2) + MpiFeedrate(2, Run("-n 2 --accelerator-memory device --gpus 0,1 --results-dir " + dir_ / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto a = ReadJson(dir_ / "r/summary.json")["feedrate"]["accelerator_memory"];
  ASSERT_EQ(a["ranks"].size(), 2u) << a.dump();
  for (const auto& r : a["ranks"]) EXPECT_EQ(r["accelerator_gpu"], nlohmann::json::parse("[0, 1]")) << r.dump();
  EXPECT_EQ(ReadFakeReports(report).size(), 2u);

  auto pinned = Sh(FakeCuda(dir_ / "fake_pinned") + Feedrate(Run("--accelerator-memory pinned --results-dir " + dir_ / "p")));
  ASSERT_TRUE(pinned.code == 0 || pinned.code == 3) << pinned.output;
  auto p = ReadJson(dir_ / "p/summary.json")["feedrate"]["accelerator_memory"];
  EXPECT_EQ(p["mode"], "pinned");
  EXPECT_FALSE(p.contains("h2d_bytes"));
  auto fake = ReadFakeReports(dir_ / "fake_pinned");
  ASSERT_EQ(fake.size(), 1u);
  EXPECT_EQ(fake[0].h2d_bytes, 0u);
  EXPECT_EQ(fake[0].pinned_allocs, 0);
}

TEST_F(GpuRun, AGpuPathThatCannotRunSaysWhatIsMissing) {
  struct Case {
    std::string env, extra, expect;
  };
  const std::string fake = std::string("FEEDRATE_LIBCUDA=") + FEEDRATE_FAKE_CUDA + " ";
  const Case cases[] = {
      {"FEEDRATE_LIBCUDA=/nonexistent/libcuda.so.1 ", "--accelerator-memory device",
       "--accelerator-memory device: cannot load /nonexistent/libcuda.so.1"},
      {fake + "FEEDRATE_FAKE_CUDA_DEVICES=0 ", "--accelerator-memory pinned", "cuInit: CUDA_ERROR_NO_DEVICE (100)"},
      {fake, "--accelerator-memory device --gpus 0,3", "--gpus: GPU 3 does not exist (1 visible)"},
  };
  int k = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    const std::string res = dir_ / ("bad" + std::to_string(k++));
    auto run = Sh(c.env + Feedrate(Run(c.extra + " --results-dir " + res)));
    EXPECT_EQ(run.code, 2) << run.output;
    EXPECT_NE(run.output.find(c.expect), std::string::npos) << run.output;
    EXPECT_EQ(ReadJson(res + "/summary.json")["feedrate"]["status"], "failed");
  }
  // Host memory never loads the driver.
  auto host = Sh("FEEDRATE_LIBCUDA=/nonexistent/libcuda.so.1 " + Feedrate(Run("--results-dir " + dir_ / "host")));
  EXPECT_TRUE(host.code == 0 || host.code == 3) << host.output;
  EXPECT_EQ(ReadJson(dir_ / "host/summary.json")["feedrate"]["accelerator_memory"]["mode"], "host");
}

}  // namespace
}  // namespace feedrate::it
