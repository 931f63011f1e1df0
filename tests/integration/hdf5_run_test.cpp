// HDF5 end to end: MPI datagen in DLIO's layout (checked with h5py where installed), runs reading rows straight
// from the file (buffered and O_DIRECT), the third-party DLIO-like fixtures, filtered chunks read raw and decoded
// (corruption named), and clear errors for filters libhdf5 does not have.
#include <gtest/gtest.h>

#include <filesystem>

#include "datagen/generator.h"
#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

const char* kHdf5Params =
    " --param dataset.format=hdf5 --param dataset.num_files_train=8 --param dataset.num_samples_per_file=4"
    " --param dataset.record_length_bytes=65536 --param dataset.record_length_bytes_stdev=16384";

bool HaveH5py() { return HavePython("h5py"); }

TEST(Hdf5Run, DatagenWritesDlioLayoutAndRunsReadEveryRow) {
  test::TempDir dir;
  const std::string data = dir / "h5";
  auto gen = Sh(MpiFeedrate(2, "datagen -w unet3d_h100 --fsync --data-dir " + data + kHdf5Params));
  ASSERT_EQ(gen.code, 0) << gen.output;
  uint64_t rows_bytes = 0;
  const auto dims = DlioDimensions(65536, 16384, 8);
  for (int i = 0; i < 8; ++i) {
    const std::string path = data + "/train/img_" + std::to_string(i) + "_of_8.hdf5";
    auto j = nlohmann::json::parse(Sh(Feedrate("inspect --json " + path)).output);
    ASSERT_EQ(j["datasets"].size(), 2u) << path;
    const auto& rec = j["datasets"][1];
    EXPECT_EQ(rec["path"], "/records");
    EXPECT_EQ(rec["shape"], nlohmann::json({4, dims[i].first, dims[i].second}));
    EXPECT_EQ(rec["layout"], "contiguous");
    EXPECT_EQ(rec["data_offset"].get<uint64_t>() % 4096, 0u);  // aligned for O_DIRECT
    EXPECT_EQ(j["datasets"][0]["path"], "/labels");
    rows_bytes += 4 * dims[i].first * dims[i].second;
    if (i == 0 && HaveH5py()) {
      auto py = RunPython(dir, "import h5py, sys\nf = h5py.File(sys.argv[1])\n"
                            "print(f['records'].shape, f['records'].dtype, [int(v) for v in f['labels'][:]])\n", path);
      EXPECT_EQ(py.output, "(4, " + std::to_string(dims[0].first) + ", " + std::to_string(dims[0].second) +
                               ") uint8 [0, 0, 0, 0]\n");
    }
  }
  // Upstream DLIO's h5py reads each sample's row; v3.0's reads the whole file for every sample (4 a file here).
  const std::string args = "run -w unet3d_h100 --data-dir " + data + kHdf5Params +
                           " --param reader.batch_size=2 --param train.epochs=2 --param train.computation_time=0.001";
  auto run = Sh(MpiFeedrate(2, args + " --rules upstream --results-dir " + (dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 2 * rows_bytes);
  auto direct = Sh(Feedrate(args + " --rules upstream --odirect --results-dir " + (dir / "d")));
  ASSERT_TRUE(direct.code == 0 || direct.code == 3) << direct.output;
  EXPECT_EQ(ReadJson(dir / "d/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 2 * rows_bytes);
  uint64_t file_bytes = 0;
  for (const auto& e : fs::directory_iterator(data + "/train")) file_bytes += e.file_size();
  auto v3 = Sh(MpiFeedrate(2, args + " --results-dir " + (dir / "v3")));
  ASSERT_TRUE(v3.code == 0 || v3.code == 3) << v3.output;
  EXPECT_EQ(ReadJson(dir / "v3/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 2 * 4 * file_bytes);
}

TEST(Hdf5Run, ReadsTheH5pyFixturesPlainAndGzipAndNamesACorruptChunk) {
  test::TempDir dir;
  const std::string params = " --param dataset.format=hdf5 --param dataset.num_files_train=2"
                             " --param dataset.num_samples_per_file=16 --param reader.batch_size=4"
                             " --param train.epochs=1 --param train.computation_time=0 --rules upstream";
  fs::create_directories(dir / "plain/train");
  for (int i = 0; i < 2; ++i) {
    fs::copy_file(test::FixturesDir() + "/h5/dlio_like_records.h5", dir / ("plain/train/img_" + std::to_string(i) + "_of_2.hdf5"));
  }
  auto run = Sh(Feedrate("run -w unet3d_h100 --data-dir " + dir / "plain" + params + " --results-dir " + (dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 2u * 16 * 256 * 256);
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["sample_check"], "none");

  // gzip-filtered chunks of one row each: every sample reads its stored (compressed) chunk, decoded on the I/O
  // threads, so the bytes read are the chunks' stored bytes.
  const std::string gzip = test::FixturesDir() + "/h5/dlio_like_records_chunked_gzip.h5";
  fs::create_directories(dir / "gzip/train");
  for (int i = 0; i < 2; ++i) fs::copy_file(gzip, dir / ("gzip/train/img_" + std::to_string(i) + "_of_2.hdf5"));
  const uint64_t stored = nlohmann::json::parse(Sh(Feedrate("inspect --json " + gzip)).output)["datasets"][1]["storage_size"].get<uint64_t>();
  auto gz = Sh(Feedrate("run -w unet3d_h100 --data-dir " + dir / "gzip" + params + " --results-dir " + (dir / "g")));
  ASSERT_TRUE(gz.code == 0 || gz.code == 3) << gz.output;
  auto g = ReadJson(dir / "g/summary.json")["feedrate"];
  EXPECT_EQ(g["bytes_read"].get<uint64_t>(), 2 * stored);
  EXPECT_NE(g["sample_check"].get<std::string>().find("hdf5: filtered chunks read raw"), std::string::npos) << g["sample_check"];
  EXPECT_NE(g["sample_check"].get<std::string>().find("(deflate)"), std::string::npos) << g["sample_check"];

  // One flipped byte inside the chunks: the inflate fails, the error names the file and the chunk, exit 2.
  const std::string bad = dir / "gzip/train/img_1_of_2.hdf5";
  std::string bytes = test::ReadFile(bad);
  bytes[bytes.size() / 2] ^= 0x5a;
  test::WriteFile(bad, bytes);
  auto broken = Sh(Feedrate("run -w unet3d_h100 --data-dir " + dir / "gzip" + params + " --results-dir " + (dir / "b")));
  EXPECT_EQ(broken.code, 2) << broken.output;
  EXPECT_NE(broken.output.find("img_1_of_2.hdf5: HDF5 chunk at offset"), std::string::npos) << broken.output;
  EXPECT_EQ(ReadJson(dir / "b/summary.json")["feedrate"]["status"], "failed");  // a record of the failure, no claim
}

TEST(Hdf5Run, MultiRowChunksWithShuffleAndFletcher32ReadTheWholeChunkPerSample) {
  if (!HaveH5py()) GTEST_SKIP() << "python3-h5py not installed";
  test::TempDir dir;
  fs::create_directories(dir / "d/train");
  auto py = RunPython(dir, "import h5py, numpy, sys\nrng = numpy.random.default_rng(1)\n"
                        "for i in range(2):\n"
                        "    f = h5py.File(sys.argv[1] + '/img_%d_of_2.hdf5' % i, 'w')\n"
                        "    x = (numpy.arange(8 * 32 * 32) % 7).astype('u1').reshape(8, 32, 32)\n"
                        "    f.create_dataset('records', data=x, chunks=(4, 32, 32), shuffle=True, compression='gzip', fletcher32=True)\n"
                        "    f.create_dataset('labels', data=numpy.zeros(8, dtype='i8'))\n",
                    dir / "d/train");
  ASSERT_EQ(py.code, 0) << py.output;
  uint64_t stored = 0;
  for (int i = 0; i < 2; ++i) {
    auto j = nlohmann::json::parse(Sh(Feedrate("inspect --json " + dir / ("d/train/img_" + std::to_string(i) + "_of_2.hdf5"))).output);
    for (const auto& d : j["datasets"]) {
      if (d["path"] == "/records") stored += d["storage_size"].get<uint64_t>();
    }
  }
  auto run = Sh(Feedrate("run -w unet3d_h100 --data-dir " + dir / "d" + " --results-dir " + (dir / "r") +
                         " --param dataset.format=hdf5 --param dataset.num_files_train=2 --param dataset.num_samples_per_file=8"
                         " --param reader.batch_size=4 --param train.epochs=1 --param train.computation_time=0 --rules upstream"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto f = ReadJson(dir / "r/summary.json")["feedrate"];
  // Each of a chunk's 4 rows reads the whole stored chunk (libhdf5 without a chunk cache does the same).
  EXPECT_EQ(f["bytes_read"].get<uint64_t>(), 4 * stored);
  EXPECT_NE(f["sample_check"].get<std::string>().find("(shuffle+deflate+fletcher32)"), std::string::npos) << f["sample_check"];
}

TEST(Hdf5Run, UnavailableFilterIsNamed) {
  if (!HaveH5py()) GTEST_SKIP() << "python3-h5py not installed";
  test::TempDir dir;
  const std::string path = dir / "lzf.h5";
  // h5py carries its own LZF filter; Debian's libhdf5 does not.
  auto py = RunPython(dir, "import h5py, numpy, sys\nf = h5py.File(sys.argv[1], 'w')\n"
                        "f.create_dataset('x', data=numpy.arange(4096, dtype='u1'), compression='lzf')\n", path);
  ASSERT_EQ(py.code, 0) << py.output;
  auto r = Sh(Feedrate("inspect " + path));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("dataset /x uses HDF5 filter 32000"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace feedrate::it
