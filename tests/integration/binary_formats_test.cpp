// indexed_binary (DLRM), PNG and JPEG whole-file samples: generation, runs counting exactly the bytes of every
// sample, and clear errors for broken index files, mislabelled images and formats Feedrate cannot generate.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

TEST(BinaryFormats, IndexedBinaryDatagenRunAndBrokenIndex) {
  test::TempDir dir;
  const std::string data = dir / "dlrm";
  const std::string p = " --param dataset.num_files_train=4 --param dataset.num_samples_per_file=8"
                        " --param dataset.record_length_bytes=16384 --param reader.batch_size=2"
                        " --param train.epochs=2 --param train.computation_time=0";
  auto gen = Sh(MpiFeedrate(2, "datagen -w dlrm --fsync --data-dir " + data + p));  // durable commits too
  ASSERT_EQ(gen.code, 0) << gen.output;
  const std::string f0 = data + "/train/img_0_of_4.indexed_binary";
  EXPECT_EQ(fs::file_size(f0), 8u * 16384);
  EXPECT_EQ(fs::file_size(f0 + ".off.idx"), 64u);
  std::string sz = test::ReadFile(f0 + ".sz.idx");
  int64_t first = 0;
  std::memcpy(&first, sz.data(), 8);
  EXPECT_EQ(first, 16384);
  auto run = Sh(MpiFeedrate(2, "run -w dlrm --data-dir " + data + p + " --results-dir " + (dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 2u * 4 * 8 * 16384);
  // An offset past the end of the data file names the index and the sample.
  std::string off = test::ReadFile(f0 + ".off.idx");
  int64_t bad = 1 << 30;
  std::memcpy(off.data() + 3 * 8, &bad, 8);
  test::WriteFile(f0 + ".off.idx", off);
  auto broken = Sh(Feedrate("run -w dlrm --data-dir " + data + p + " --results-dir " + (dir / "b")));
  EXPECT_EQ(broken.code, 2) << broken.output;
  EXPECT_NE(broken.output.find("img_0_of_4.indexed_binary.off.idx/.sz.idx: sample 3"), std::string::npos) << broken.output;
  fs::remove(f0 + ".sz.idx");
  auto missing = Sh(Feedrate("run -w dlrm --data-dir " + data + p + " --results-dir " + (dir / "m")));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("img_0_of_4.indexed_binary.sz.idx"), std::string::npos) << missing.output;
}

TEST(BinaryFormats, PngDatagenAndWholeFileReads) {
  test::TempDir dir;
  const std::string data = dir / "png";
  const std::string p = " --param dataset.format=png --param dataset.num_files_train=6"
                        " --param dataset.record_length_bytes=40000 --param dataset.record_length_bytes_stdev=8000"
                        " --param reader.batch_size=2 --param train.epochs=1 --param train.computation_time=0";
  auto gen = Sh(Feedrate("datagen -w retinanet_h100 --data-dir " + data + p));
  ASSERT_EQ(gen.code, 0) << gen.output;
  uint64_t total = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string f = data + "/train/img_" + std::to_string(i) + "_of_6.png";
    std::string bytes = test::ReadFile(f);
    ASSERT_GT(bytes.size(), 33u) << f;
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(bytes.substr(12, 4), "IHDR");
    EXPECT_EQ(bytes.substr(bytes.size() - 8, 4), "IEND");
    total += bytes.size();
  }
  auto run = Sh(Feedrate("run -w retinanet_h100 --data-dir " + data + p + " --results-dir " + (dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), total);
}

TEST(BinaryFormats, JpegIsReadWholeButNotGenerated) {
  test::TempDir dir;
  auto gen = Sh(Feedrate("datagen -w retinanet_h100 --data-dir " + dir / "j" + " --param dataset.num_files_train=2"));
  EXPECT_EQ(gen.code, 2);
  EXPECT_NE(gen.output.find("JPEG needs an encoder"), std::string::npos) << gen.output;
  fs::create_directories(dir / "jpeg/train");
  std::string jpeg = std::string("\xFF\xD8\xFF\xE0", 4) + std::string(5000, 'j') + std::string("\xFF\xD9", 2);
  test::WriteFile(dir / "jpeg/train/img_0_of_2.jpeg", jpeg);
  test::WriteFile(dir / "jpeg/train/img_1_of_2.jpeg", jpeg);
  const std::string p = " --param dataset.num_files_train=2 --param reader.batch_size=1 --param train.epochs=1"
                        " --param train.computation_time=0";
  auto run = Sh(Feedrate("run -w retinanet_h100 --data-dir " + dir / "jpeg" + p + " --results-dir " + (dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 2 * jpeg.size());
  test::WriteFile(dir / "jpeg/train/img_1_of_2.jpeg", std::string("\x89PNG\r\n\x1a\n", 8) + std::string(100, 'p'));
  auto wrong = Sh(Feedrate("run -w retinanet_h100 --data-dir " + dir / "jpeg" + p + " --results-dir " + (dir / "w")));
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.output.find("img_1_of_2.jpeg: not a jpeg file (PNG signature)"), std::string::npos) << wrong.output;
}

}  // namespace
}  // namespace feedrate::it
