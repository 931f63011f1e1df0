// `feedrate iobench`: a tiny grid with --verify end to end, under mpirun, and its error cases.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"

namespace feedrate::it {
namespace {

TEST(Iobench, WriteThenVerifiedReadGrid) {
  test::TempDir dir;
  const std::string file = dir / "bench.dat";
  auto w = Sh(Feedrate("iobench --path " + file + " --rw write,randwrite --bs 4k,64k --qd 1,4 --threads 1,2"
                       " --size 8m --runtime 0.2 --verify --results-dir " + dir / "w"));
  ASSERT_EQ(w.code, 0) << w.output;
  // randwrite leaves some blocks of the sequential pass; rewrite the whole file sequentially before verifying.
  ASSERT_EQ(Sh(Feedrate("iobench --path " + file + " --rw write --bs 1m --qd 2 --threads 1 --size 8m --runtime 0.5"
                        " --verify --results-dir " + dir / "w2")).code, 0);
  auto r = Sh(Feedrate("iobench --path " + file + " --rw read,randread --bs 4k,64k --qd 1,4 --threads 1,2"
                       " --runtime 0.2 --verify --results-dir " + dir / "r"));
  ASSERT_EQ(r.code, 0) << r.output;
  auto j = ReadJson(dir / "r/iobench.json");
  ASSERT_EQ(j["cells"].size(), 16u);
  for (const auto& c : j["cells"]) {
    for (const char* k : {"rw", "bs", "qd", "threads", "mib_per_s", "iops", "lat_us", "cpu_s_per_gib"}) {
      EXPECT_TRUE(c.contains(k)) << k;
    }
    EXPECT_GT(c["iops"].get<double>(), 0) << c.dump();
    EXPECT_LE(c["lat_us"]["p50"].get<double>(), c["lat_us"]["p99"].get<double>());
    EXPECT_LE(c["lat_us"]["p99"].get<double>(), c["lat_us"]["max"].get<double>());
  }
  std::string csv = test::ReadFile(dir / "r/iobench.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 17);
}

TEST(Iobench, VerifyCatchesTheWrongPattern) {
  test::TempDir dir;
  const std::string file = dir / "bench.dat";
  ASSERT_EQ(Sh(Feedrate("iobench --path " + file + " --rw write --bs 64k --qd 1 --threads 1 --size 1m --runtime 0.3"
                        " --verify --seed 1 --results-dir " + dir / "w")).code, 0);
  auto r = Sh(Feedrate("iobench --path " + file + " --rw read --bs 64k --qd 1 --threads 1 --runtime 0.2 --verify"
                       " --seed 2 --results-dir " + dir / "r"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("verify failed at offset"), std::string::npos) << r.output;
}

TEST(Iobench, ErrorsNameTheCause) {
  test::TempDir dir;
  const std::string file = dir / "small.dat";
  test::WriteFile(file, std::string(4096, 'x'));
  auto small = Sh(Feedrate("iobench --path " + file + " --rw read --bs 4k --qd 1 --size 1m --runtime 0.1 --results-dir " +
                           dir / "r"));
  EXPECT_EQ(small.code, 2);
  EXPECT_NE(small.output.find("smaller than --size"), std::string::npos) << small.output;
  auto missing = Sh(Feedrate("iobench --path " + dir / "nope.dat" + " --rw read --runtime 0.1 --results-dir " + dir / "r"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("nope.dat"), std::string::npos) << missing.output;
  test::WriteFile(dir / "blocker", "x");
  auto unwritable = Sh(Feedrate("iobench --path " + file + " --rw read --bs 4k --qd 1 --runtime 0.1 --results-dir " +
                                dir / "blocker/sub"));
  EXPECT_EQ(unwritable.code, 2);
  EXPECT_NE(unwritable.output.find("blocker"), std::string::npos) << unwritable.output;
  auto posix_qd = Sh(Feedrate("iobench --path " + file + " --rw read --bs 4k --qd 8 --engine posix --runtime 0.1"
                              " --results-dir " + dir / "r"));
  EXPECT_EQ(posix_qd.code, 2);
  EXPECT_NE(posix_qd.output.find("one I/O per thread"), std::string::npos) << posix_qd.output;
}

// gdsio's GPU transfer modes against the test doubles of libcuda and libcufile (docs/gpu.md): each lands the file's
// blocks in "device" memory, where --verify checks them (a wrong seed fails), and says what served them.
TEST(Iobench, GpuTransferModesLandVerifiedBlocksInDeviceMemory) {
  test::TempDir dir("/var/tmp");  // O_DIRECT: not tmpfs
  const std::string file = dir / "bench.dat";
  ASSERT_EQ(Sh(Feedrate("iobench --path " + file + " --rw write --bs 1m --qd 2 --size 4m --runtime 0.5 --verify"
                        " --results-dir " + dir / "w")).code, 0);
  const std::string env = std::string("FEEDRATE_LIBCUDA=") + FEEDRATE_FAKE_CUDA + " FEEDRATE_LIBCUFILE=" +
                          FEEDRATE_FAKE_CUFILE + " ";
  for (const std::string mode : {"cpu_gpu", "cpu_async_gpu", "cpu_cached_gpu", "gpud", "gpu_batch", "gpud_async"}) {
    const bool depth = mode == "cpu_async_gpu" || mode == "gpu_batch" || mode == "gpud_async";
    auto r = Sh(env + Feedrate("iobench --path " + file + " --rw read,randread --bs 64k --qd " + (depth ? "4" : "1") +
                               " --threads 1,2 --runtime 0.2 --verify --xfer " + mode + " --results-dir " + dir / mode));
    ASSERT_EQ(r.code, 0) << mode << ": " << r.output;
    EXPECT_NE(r.output.find("served by: " + mode + " ("), std::string::npos) << r.output;
    auto j = ReadJson(dir / (mode + "/iobench.json"));
    EXPECT_EQ(j["xfer"], mode);
    ASSERT_EQ(j["cells"].size(), 4u);
    for (const auto& c : j["cells"]) {
      EXPECT_EQ(c["engine"], mode);
      EXPECT_NE(c["engine_detail"].get<std::string>().find("Feedrate test double GPU"), std::string::npos) << c.dump();
      EXPECT_GT(c["read_mib_per_s"].get<double>(), 0) << c.dump();
    }
    auto wrong = Sh(env + Feedrate("iobench --path " + file + " --rw read --bs 64k --runtime 0.1 --verify --seed 9"
                                   " --xfer " + mode + " --results-dir " + dir / (mode + "_wrong")));
    EXPECT_EQ(wrong.code, 2) << mode << ": " << wrong.output;
    EXPECT_NE(wrong.output.find("verify failed at offset"), std::string::npos) << wrong.output;
  }
}

// A GPU mode that cannot run ends with one line naming what is missing; cpuonly needs no GPU.
TEST(Iobench, GpuModesWithoutTheirLibrariesSayWhatIsMissing) {
  test::TempDir dir("/var/tmp");
  const std::string file = dir / "bench.dat";
  ASSERT_EQ(Sh(Feedrate("iobench --path " + file + " --rw write --bs 1m --size 2m --runtime 0.2 --results-dir " +
                        dir / "w")).code, 0);
  const std::string read = "iobench --path " + file + " --rw read --bs 64k --runtime 0.1 --results-dir " + dir / "r";
  auto no_driver = Sh("FEEDRATE_LIBCUDA=/nonexistent/libcuda.so.1 " + Feedrate(read + " --xfer cpu_gpu"));
  EXPECT_EQ(no_driver.code, 2) << no_driver.output;
  EXPECT_NE(no_driver.output.find("feedrate: error: cannot load /nonexistent/libcuda.so.1"), std::string::npos)
      << no_driver.output;
  const std::string fake = std::string("FEEDRATE_LIBCUDA=") + FEEDRATE_FAKE_CUDA + " ";
  auto no_device = Sh(fake + "FEEDRATE_FAKE_CUDA_DEVICES=0 " + Feedrate(read + " --xfer cpu_gpu"));
  EXPECT_EQ(no_device.code, 2) << no_device.output;
  EXPECT_NE(no_device.output.find("cuInit: CUDA_ERROR_NO_DEVICE (100)"), std::string::npos) << no_device.output;
  auto no_gds = Sh(fake + "FEEDRATE_LIBCUFILE=/nonexistent/libcufile.so.0 " + Feedrate(read + " --xfer gpud"));
  EXPECT_EQ(no_gds.code, 2) << no_gds.output;
  EXPECT_NE(no_gds.output.find("cannot load /nonexistent/libcufile.so.0"), std::string::npos) << no_gds.output;
  auto no_nvfs = Sh(fake + "FEEDRATE_LIBCUFILE=" + FEEDRATE_FAKE_CUFILE + " FEEDRATE_FAKE_CUFILE_DRIVER=fail " +
                    Feedrate(read + " --xfer gpu_batch"));
  EXPECT_EQ(no_nvfs.code, 2) << no_nvfs.output;
  EXPECT_NE(no_nvfs.output.find("CU_FILE_DRIVER_NOT_INITIALIZED"), std::string::npos) << no_nvfs.output;
  auto wrong_gpu = Sh(fake + Feedrate(read + " --xfer cpu_gpu --gpu 3"));
  EXPECT_EQ(wrong_gpu.code, 2) << wrong_gpu.output;
  EXPECT_NE(wrong_gpu.output.find("GPU 3 does not exist (1 visible)"), std::string::npos) << wrong_gpu.output;
  auto writes = Sh(fake + Feedrate("iobench --path " + file + " --rw write --bs 64k --runtime 0.1 --xfer gpud"
                                   " --results-dir " + dir / "w2"));
  EXPECT_EQ(writes.code, 2) << writes.output;
  EXPECT_NE(writes.output.find("--xfer gpud reads"), std::string::npos) << writes.output;
  auto host = Sh("FEEDRATE_LIBCUDA=/nonexistent/libcuda.so.1 " + Feedrate(read + " --xfer cpuonly"));
  EXPECT_EQ(host.code, 0) << host.output;
}

TEST(Iobench, MpiRanksAggregate) {
  test::TempDir dir;
  auto w = Sh(MpiFeedrate(2, "iobench --path " + dir.path() + " --rw randrw --rwmixread 70 --bs 16k --qd 2 --threads 1"
                                 " --size 4m --runtime 0.3 --results-dir " + dir / "m"));
  ASSERT_EQ(w.code, 0) << w.output;
  auto j = ReadJson(dir / "m/iobench.json");
  EXPECT_EQ(j["ranks"], 2);
  ASSERT_EQ(j["cells"].size(), 1u);
  const auto& c = j["cells"][0];
  EXPECT_GT(c["read_mib_per_s"].get<double>(), c["write_mib_per_s"].get<double>());  // 70% reads
  EXPECT_GT(c["write_mib_per_s"].get<double>(), 0);
  EXPECT_TRUE(std::filesystem::exists(dir / "feedrate-iobench.0.dat"));
  EXPECT_TRUE(std::filesystem::exists(dir / "feedrate-iobench.1.dat"));
}

}  // namespace
}  // namespace feedrate::it
