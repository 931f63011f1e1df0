// `feedrate run --accelerator-memory pinned|device [--gds]` against the CUDA and cuFile test doubles
// (tests/gpu_double): every byte read reaches the accelerator's "device" memory (copied, or read there by cuFile
// into registered memory), every buffer, stream, event and registration is given back, --gds auto says why it
// bounced, and a GPU path that cannot run ends with exit 2 and one line naming what is missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"

namespace feedrate::it {
namespace {

// The test double's lines (one per process that loaded it): what was left allocated and the bytes it copied.
struct FakeReport {
  long device_allocs = -1, pinned_allocs = -1, streams = -1, events = -1, contexts = -1;
  unsigned long long h2d_bytes = 0;
  long modules = -1;
  unsigned long long launches = 0, kernel_ns = 0;
};
std::vector<FakeReport> ReadFakeReports(const std::string& path) {
  std::vector<FakeReport> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    FakeReport r;
    if (std::sscanf(line.c_str(),
                    "device_allocs=%ld pinned_allocs=%ld streams=%ld events=%ld contexts=%ld h2d_bytes=%llu modules=%ld "
                    "launches=%llu kernel_ns=%llu",
                    &r.device_allocs, &r.pinned_allocs, &r.streams, &r.events, &r.contexts, &r.h2d_bytes, &r.modules,
                    &r.launches, &r.kernel_ns) == 9) {
      out.push_back(r);
    }
  }
  return out;
}

// The cuFile double's line at unload: what is still registered and how the reads went.
struct CuFileReport {
  long driver_opens = -1, handles = -1;
  unsigned long buffers = 1;
  unsigned long long bytes = 0, registered_reads = 0, unregistered_reads = 1, buffered_handles = 1, registrations = 0;
};
std::vector<CuFileReport> ReadCuFileReports(const std::string& path) {
  std::vector<CuFileReport> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    CuFileReport r;
    if (std::sscanf(line.c_str(),
                    "driver_opens=%ld handles=%ld buffers=%lu bytes=%llu registered_reads=%llu unregistered_reads=%llu "
                    "buffered_handles=%llu registrations=%llu",
                    &r.driver_opens, &r.handles, &r.buffers, &r.bytes, &r.registered_reads, &r.unregistered_reads,
                    &r.buffered_handles, &r.registrations) == 8) {
      out.push_back(r);
    }
  }
  return out;
}

std::string FakeCuFile(const std::string& report) {
  return std::string("FEEDRATE_LIBCUFILE=") + FEEDRATE_FAKE_CUFILE + " FEEDRATE_FAKE_CUFILE_REPORT=" + report + " ";
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
    // The samples' own bytes are copied, not the O_DIRECT windows around them: the steps' and v3.0's pre-warm passes'.
    EXPECT_EQ(a["h2d_bytes"].get<uint64_t>(), f["bytes_read"].get<uint64_t>() + f["prewarm"]["bytes"].get<uint64_t>())
        << a.dump();
    EXPECT_EQ(a["batches_copied"].get<uint64_t>(),
              2u * 2u * f["steps_per_epoch"].get<uint64_t>() + f["prewarm"]["batches"].get<uint64_t>());
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

// Whole image files into device memory, decoded or not: set-up looks their sizes up (the retained slots the copies
// leave from need them; lanes decoding without sizes would stage nothing), the run reads coalesced saying why, and
// every byte is copied.
TEST_F(GpuRun, ImagesStageIntoDeviceMemoryDecodedOrNot) {
  const std::string data = dir_ / "jpeg";
  const std::string shape = " --param dataset.format=jpeg --param dataset.num_files_train=12"
                            " --param dataset.record_length_bytes=30000 --param dataset.record_length_bytes_stdev=0"
                            " --rules upstream";  // (PIL-readable images, decoded as upstream DLIO does)
  auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + shape));
  ASSERT_EQ(gen.code, 0) << gen.output;
  uint64_t dataset_bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(data + "/train")) dataset_bytes += e.file_size();
  for (const std::string decode : {"false", "true"}) {
    SCOPED_TRACE("feedrate.decode=" + decode);
    const std::string res = dir_ / ("img" + decode), report = dir_ / ("fake_img" + decode);
    auto run = Sh(FakeCuda(report) +
                  Feedrate("run -w unet3d_h100 --data-dir " + data + shape + " --param feedrate.decode=" + decode +
                           " --param reader.batch_size=2 --param train.computation_time=0.002 --param train.epochs=1"
                           " -q -n 2"
                           " --accelerator-memory device --results-dir " + res));
    ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
    const auto f = ReadJson(res + "/summary.json")["feedrate"];
    EXPECT_EQ(f["access_pattern"], "coalesced");
    EXPECT_EQ(f["access_pattern_reason"], "batches staged into accelerator memory");
    EXPECT_EQ(f["accelerator_memory"]["h2d_bytes"].get<uint64_t>(), f["bytes_read"].get<uint64_t>());
    EXPECT_EQ(f["bytes_read"].get<uint64_t>(), dataset_bytes);  // one epoch: every image, whole
    const auto fake = ReadFakeReports(report);
    ASSERT_EQ(fake.size(), 1u);
    EXPECT_EQ(fake[0].device_allocs, 0);
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

// --gds on with O_DIRECT files: cuFile reads every sample's window straight into the registered device slots;
// nothing is copied, and what cuFile read is what the engine counted. In compat mode it says so.
TEST_F(GpuRun, GdsReadsEverySampleIntoRegisteredDeviceMemoryWithoutACopy) {
  for (const std::string nvfs : {"2.17", "0.0"}) {
    SCOPED_TRACE(nvfs);
    const std::string res = dir_ / ("gds" + nvfs), cuda_report = dir_ / ("cuda" + nvfs), cufile_report = dir_ / ("cufile" + nvfs);
    auto run = Sh(FakeCuda(cuda_report) + FakeCuFile(cufile_report) + "FEEDRATE_FAKE_CUFILE_NVFS=" + nvfs + " " +
                  Feedrate(Run("-n 2 --odirect --accelerator-memory device --gds on --results-dir " + res)));
    ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
    const bool gpudirect = nvfs != "0.0";
    EXPECT_NE(run.output.find(gpudirect ? "read into GPU memory by cuFile (GPUDirect Storage)"
                                        : "read into GPU memory by cuFile (not GPUDirect"),
              std::string::npos) << run.output;
    auto f = ReadJson(res + "/summary.json")["feedrate"];
    const auto& a = f["accelerator_memory"];
    // Compat mode is never reported as GDS.
    EXPECT_EQ(a["ranks"][0]["path"], gpudirect ? "gds" : "cufile_compat") << a.dump();
    EXPECT_EQ(a["ranks"][0]["gds"]["used"], true);
    EXPECT_EQ(a["ranks"][0]["gds"]["gpudirect"], gpudirect);
    EXPECT_EQ(a["path"].get<std::string>().rfind(gpudirect ? "gds: GPUDirect Storage" : "cufile_compat: ", 0), 0u) << a.dump();
    EXPECT_NE(a["path"].get<std::string>().find(gpudirect ? "GPUDirect (nvidia-fs 2.17" : "compatibility mode"),
              std::string::npos) << a.dump();
    EXPECT_EQ(a["h2d_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(a["batches_copied"].get<uint64_t>(), 0u);
    EXPECT_EQ(f["buffer_bytes_per_rank"].get<double>(), 0.0);  // no read buffer in host memory: the slots are on the GPU
    EXPECT_GE(a["gds_bytes"].get<uint64_t>(), f["bytes_read"].get<uint64_t>());  // windows include alignment
    EXPECT_EQ(f["engine_detail"].get<std::string>().rfind("cufile (cuFileRead into GPU memory", 0), 0u)
        << f["engine_detail"];
    auto cufile = ReadCuFileReports(cufile_report);
    ASSERT_EQ(cufile.size(), 1u);
    EXPECT_EQ(cufile[0].bytes, a["gds_bytes"].get<uint64_t>());  // what cuFile read is what the summary reports
    EXPECT_GT(cufile[0].registered_reads, 0u);
    EXPECT_EQ(cufile[0].unregistered_reads, 0u);  // every read into a registered slot, with its base and offset
    EXPECT_EQ(cufile[0].buffered_handles, 0u);    // every handle on an O_DIRECT descriptor
    EXPECT_EQ(cufile[0].handles, 0);
    EXPECT_EQ(cufile[0].buffers, 0u);
    EXPECT_EQ(cufile[0].driver_opens, 0);
    auto cuda = ReadFakeReports(cuda_report);
    ASSERT_EQ(cuda.size(), 1u);
    EXPECT_EQ(cuda[0].h2d_bytes, 0u);
    EXPECT_EQ(cuda[0].device_allocs, 0);
    EXPECT_EQ(cuda[0].pinned_allocs, 0);  // no host slots at all
    EXPECT_EQ(cuda[0].contexts, 0);
  }
}

// --gds auto takes the bounce path where cuFile cannot serve the run, and says why; --gds on refuses instead.
TEST_F(GpuRun, GdsAutoBouncesWithTheReasonAndGdsOnRefuses) {
  const std::string env = FakeCuda(dir_ / "cuda") + FakeCuFile(dir_ / "cufile");
  struct Fallback {
    std::string env, extra, reason;
  };
  const Fallback fallbacks[] = {
      {env, "", "reader.odirect is off"},
      {env + "FEEDRATE_FAKE_CUFILE_HANDLE=fail ", "--odirect", "CU_FILE_IO_NOT_SUPPORTED"},
      {env + "FEEDRATE_FAKE_CUFILE_DRIVER=fail ", "--odirect", "CU_FILE_DRIVER_NOT_INITIALIZED"},
      // cuFile took the file, then could not register the device slots: planned again, the bounce path's own slots.
      {env + "FEEDRATE_FAKE_CUFILE_BUF=fail ", "--odirect", "CU_FILE_GPU_MEMORY_PINNING_FAILED"},
      {env, "--odirect --verify 1", "--verify checks the samples on the host"},
  };
  int k = 0;
  for (const Fallback& c : fallbacks) {
    SCOPED_TRACE(c.env + c.extra);
    const std::string res = dir_ / ("auto" + std::to_string(k++));
    auto run = Sh(c.env + Feedrate(Run("--accelerator-memory device " + c.extra + " --results-dir " + res)));
    ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
    const size_t warning = run.output.find("--gds auto: GPUDirect reads not used (");
    ASSERT_NE(warning, std::string::npos) << run.output;
    EXPECT_NE(run.output.find(c.reason, warning), std::string::npos) << run.output;
    auto f = ReadJson(res + "/summary.json")["feedrate"];
    const auto& r = f["accelerator_memory"]["ranks"][0];
    EXPECT_EQ(r["path"], "bounce");
    EXPECT_NE(r["gds"]["reason"].get<std::string>().find(c.reason), std::string::npos) << r.dump();
    EXPECT_NE(f["engine_detail"].get<std::string>().find(c.reason), std::string::npos) << f["engine_detail"];
    EXPECT_EQ(f["accelerator_memory"]["h2d_bytes"].get<uint64_t>(),
              f["bytes_read"].get<uint64_t>() + f["prewarm"]["bytes"].get<uint64_t>());
  }
  struct Refusal {
    std::string env, extra, expect;
  };
  const Refusal refusals[] = {
      {env, "--accelerator-memory device --gds on", "--gds on: reader.odirect is off"},
      {env, "--gds on", "--gds on needs --accelerator-memory device"},
      {FakeCuda(dir_ / "cuda") + "FEEDRATE_LIBCUFILE=/nonexistent/libcufile.so.0 ",
       "--accelerator-memory device --gds on --odirect", "--gds on: cannot load /nonexistent/libcufile.so.0"},
      {env + "FEEDRATE_FAKE_CUFILE_HANDLE=fail ", "--accelerator-memory device --gds on --odirect",
       "CU_FILE_IO_NOT_SUPPORTED"},
      {env + "FEEDRATE_FAKE_CUFILE_BUF=fail ", "--accelerator-memory device --gds on --odirect",
       "--gds on: cuFileBufRegister"},
      {env, "--accelerator-memory device --gpus 0,0", "--gpus: GPU 0 is listed twice"},
  };
  for (const Refusal& c : refusals) {
    SCOPED_TRACE(c.extra);
    const std::string res = dir_ / ("refused" + std::to_string(k++));
    auto run = Sh(c.env + Feedrate(Run(c.extra + " --results-dir " + res)));
    EXPECT_EQ(run.code, 2) << run.output;
    EXPECT_NE(run.output.find(c.expect), std::string::npos) << run.output;
    EXPECT_EQ(ReadJson(res + "/summary.json")["feedrate"]["status"], "failed");
  }
}

// feedrate.compute: gpu: each step's compute is the spin kernel on the accelerator's GPU, for the step's drawn
// time; the summary's launches and kernel time are the ones the driver saw; everything is unloaded and freed.
TEST_F(GpuRun, GpuComputeRunsTheSpinKernelForEachStepsTime) {
  const std::string report = dir_ / "fake";
  auto run = Sh(FakeCuda(report) + Feedrate(Run("-n 2 --param feedrate.compute=gpu --param feedrate.compute_memory_bytes=65536 "
                                                "--param train.computation_time=0.01 --results-dir " + dir_ / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_NE(run.output.find("compute on the GPU: "), std::string::npos) << run.output;
  auto f = ReadJson(dir_ / "r/summary.json")["feedrate"];
  const auto& c = f["compute"];
  EXPECT_EQ(c["kind"], "gpu") << c.dump();
  const uint64_t steps = 2 * 2 * f["steps_per_epoch"].get<uint64_t>();  // accelerators x epochs x steps
  EXPECT_GT(c["launches"].get<uint64_t>(), 0u);
  EXPECT_LE(c["launches"].get<uint64_t>(), steps);
  // What is asked is what is left of each step's 10 ms after the refill (how much depends on the host's speed);
  // the kernels' event time is at least that and at most the accelerators' own wall time. No bound assumes a speed.
  const double requested = c["requested_seconds"].get<double>();
  EXPECT_GT(requested, 0.0);
  EXPECT_LE(requested, 0.01 * static_cast<double>(steps) + 1e-9);
  EXPECT_GE(c["kernel_seconds"].get<double>(), requested * (1 - 1e-5)) << c.dump();
  EXPECT_LE(c["kernel_seconds"].get<double>(), 2 * f["wall_seconds"].get<double>()) << c.dump();
  EXPECT_EQ(c["ranks"][0]["memory_bytes"], 65536);
  EXPECT_EQ(f["accelerator_memory"]["mode"], "host");  // the data stays in host memory
  auto fake = ReadFakeReports(report);
  ASSERT_EQ(fake.size(), 1u);
  EXPECT_EQ(fake[0].launches, c["launches"].get<uint64_t>());
  EXPECT_NEAR(static_cast<double>(fake[0].kernel_ns) / 1e9, c["requested_seconds"].get<double>(), 1e-6);
  EXPECT_EQ(fake[0].modules, 0);
  EXPECT_EQ(fake[0].device_allocs, 0);
  EXPECT_EQ(fake[0].streams, 0);
  EXPECT_EQ(fake[0].events, 0);
  EXPECT_EQ(fake[0].contexts, 0);
  // Without the driver: one line naming what asked for it.
  auto none = Sh("FEEDRATE_LIBCUDA=/nonexistent/libcuda.so.1 " +
                 Feedrate(Run("--param feedrate.compute=gpu --results-dir " + dir_ / "none")));
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("feedrate.compute gpu: cannot load /nonexistent/libcuda.so.1"), std::string::npos) << none.output;
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
