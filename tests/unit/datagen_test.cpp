// Dataset generation: DLIO names and shapes, rank split, skip-existing, durable commits in the background, and
// clear errors on a bad target; generated PNG/JPEG images decoded back.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "datagen/background_committer.h"
#include "datagen/generator.h"
#include "datagen/jpeg_writer.h"
#include "datagen/png_writer.h"
#include "datagen/temp_file.h"
#include "loader/format/image_decode.h"
#include "loader/format/npz.h"
#include "loader/io/unique_fd.h"
#include "test_util.h"

namespace feedrate {
namespace {

WorkloadConfig SmallUnet(const std::string& dir, int files) {
  return LoadWorkload("unet3d_h100", {"dataset.data_folder=" + dir, "dataset.num_files_train=" + std::to_string(files),
                                      "dataset.record_length_bytes=10000", "dataset.record_length_bytes_stdev=2000"});
}

std::vector<uint64_t> Shape(const std::string& path) {
  auto fd = OpenForRead(path);
  auto arrays = ReadNpzArrays(fd->get(), std::filesystem::file_size(path), path);
  EXPECT_TRUE(arrays.ok()) << arrays.status().ToString();
  return (*arrays)[0].header.shape;
}

TEST(Datagen, NamesAndShapesFollowDlio) {
  test::TempDir dir;
  auto cfg = SmallUnet(dir.path(), 12);
  auto stats = GenerateDataset(cfg, {0, 1, 3, false});
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->files_written, 12u);
  auto dims = DlioDimensions(10000, 2000, 12);
  for (uint64_t i = 0; i < 12; ++i) {
    std::string p = dir / ("train/img_" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "_of_12.npz");
    ASSERT_TRUE(std::filesystem::exists(p)) << p;
    EXPECT_EQ(Shape(p), (std::vector<uint64_t>{dims[i].first, dims[i].second, 1}));
  }
}

TEST(Datagen, RanksSplitFilesModuloAndSkipExisting) {
  test::TempDir dir;
  auto cfg = SmallUnet(dir.path(), 7);
  auto r1 = GenerateDataset(cfg, {1, 3, 2, false});
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->files_written, 2u);  // files 1 and 4
  EXPECT_TRUE(std::filesystem::exists(dir / "train/img_4_of_7.npz"));
  EXPECT_FALSE(std::filesystem::exists(dir / "train/img_0_of_7.npz"));
  auto again = GenerateDataset(cfg, {0, 1, 2, true});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->files_skipped, 2u);
  EXPECT_EQ(again->files_written, 5u);
}

// No temporary file (".<name>.tmp-...") left anywhere under `dir`.
size_t TempFilesUnder(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    n += e.path().filename().string().find(".tmp-") != std::string::npos;
  }
  return n;
}

TEST(Datagen, DurableRunsCommitInTheBackgroundAndLeaveEveryFileComplete) {
  test::TempDir dir;
  for (const char* format : {"npz", "tfrecord"}) {
    SCOPED_TRACE(format);
    auto cfg = SmallUnet(dir / format, 9);
    cfg.format = *Parse<DataFormat>(format);
    TempFile::SetDurableCommits(true);
    DatagenOptions o;
    o.threads = 3;
    o.fsync = true;
    o.write_size = 4096;  // many writes per file
    auto stats = GenerateDataset(cfg, o);
    TempFile::SetDurableCommits(false);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(stats->files_written, 9u);
    EXPECT_EQ(TempFilesUnder(dir / format), 0u);
    auto again = GenerateDataset(cfg, {0, 1, 2, true});  // every file (and TFRecord index) is complete
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->files_skipped, 9u);
  }
}

// --skip-existing keeps a file only with the planned size and the format's first bytes: a same-size file whose
// header was overwritten is written again.
TEST(Datagen, SkipExistingRewritesAFileWithTheRightSizeButAWrongHeader) {
  test::TempDir dir;
  for (const char* format : {"npz", "npy", "tfrecord"}) {
    SCOPED_TRACE(format);
    auto cfg = SmallUnet(dir / format, 4);
    cfg.format = *Parse<DataFormat>(format);
    ASSERT_TRUE(GenerateDataset(cfg, {0, 1, 1, false}).ok());
    const std::string victim = dir / (std::string(format) + "/train/img_2_of_4." + format);
    ASSERT_TRUE(std::filesystem::exists(victim)) << victim;
    const auto size = std::filesystem::file_size(victim);
    {
      std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
      f.write("garbage!garbage!", 16);
    }
    ASSERT_EQ(std::filesystem::file_size(victim), size);
    auto again = GenerateDataset(cfg, {0, 1, 1, true});
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->files_skipped, 3u);
    EXPECT_EQ(again->files_written, 1u);
  }
}

TEST(BackgroundCommitter, AFailedCommitIsReportedAndNothingAfterItIsRenamed) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "blocked/inside");  // renaming a file over a non-empty directory fails
  TempFile::SetDurableCommits(true);
  {
    BackgroundCommitter committer(1);
    auto ok = TempFile::Create(dir / "first");
    ASSERT_TRUE(ok.ok());
    ASSERT_TRUE(ok->WriteAt("a", 1, 0).ok());
    ASSERT_TRUE(committer.Submit(std::move(*ok)).ok());
    auto bad = TempFile::Create(dir / "blocked");
    ASSERT_TRUE(bad.ok());
    ASSERT_TRUE(committer.Submit(std::move(*bad)).ok());
    Status st;
    for (int i = 0; i < 50 && st.ok(); ++i) {  // later submissions see the failure (or Finish reports it)
      auto later = TempFile::Create(dir / ("later" + std::to_string(i)));
      ASSERT_TRUE(later.ok());
      st = committer.Submit(std::move(*later));
    }
    Status fin = committer.Finish();
    ASSERT_FALSE(fin.ok());
    EXPECT_NE(fin.message().find("cannot rename"), std::string::npos) << fin.message();
    EXPECT_NE(fin.message().find("blocked"), std::string::npos) << fin.message();
  }
  TempFile::SetDurableCommits(false);
  EXPECT_TRUE(std::filesystem::exists(dir / "first"));
  EXPECT_FALSE(std::filesystem::exists(dir / "later0"));  // queued behind the failure: dropped, not renamed
  EXPECT_FALSE(std::filesystem::exists(dir / "later49"));
  EXPECT_EQ(TempFilesUnder(dir.path()), 0u);
}

TEST(Images, PngDecodesToExactlyThePixelsWrittenAndJpegCloseToThem) {
  test::TempDir dir;
  AlignedBuffer scratch(4096);
  ImageDecoder decoder;
  uint64_t n = 0;
  // PNG is lossless: every pixel comes back. The writer fills each row with one FastBytes::Fill call.
  ASSERT_TRUE(WritePng(dir / "a.png", 7, 13, 42, &scratch).ok());
  std::string png = test::ReadFile(dir / "a.png");
  auto size = ReadImageSize(png.data(), png.size());
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(size->width, 13u);
  EXPECT_EQ(size->height, 7u);
  EXPECT_EQ(size->channels, 1u);
  ASSERT_TRUE(decoder.Decode(png.data(), png.size(), &n).ok());
  ASSERT_EQ(n, 7u * 13);
  FastBytes rng(42);
  std::string row(13, '\0');
  for (int r = 0; r < 7; ++r) {
    rng.Fill(row.data(), row.size());
    EXPECT_EQ(std::string(decoder.pixels() + r * 13, 13), row) << "row " << r;
  }
  // JPEG is lossy: the pixels come back close to the noise written (random guesses would be ~85 levels off).
  ASSERT_TRUE(WriteJpeg(dir / "b.jpeg", 64, 48, 7, &scratch).ok());
  std::string jpeg = test::ReadFile(dir / "b.jpeg");
  size = ReadImageSize(jpeg.data(), jpeg.size());
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(size->width, 48u);
  EXPECT_EQ(size->height, 64u);
  ASSERT_TRUE(decoder.Decode(jpeg.data(), jpeg.size(), &n).ok());
  ASSERT_EQ(n, 64u * 48);
  std::string want(64 * 48, '\0');
  FastBytes(7).Fill(want.data(), want.size());
  double diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const int w = (static_cast<unsigned char>(want[i]) * 255) >> 8;  // DLIO's randint(255) range, as written
    diff += std::abs(w - static_cast<unsigned char>(decoder.pixels()[i]));
  }
  EXPECT_LT(diff / static_cast<double>(want.size()), 40.0);
  EXPECT_TRUE(JpegHasSize(dir / "b.jpeg", 64, 48));
  EXPECT_FALSE(JpegHasSize(dir / "b.jpeg", 48, 64));

  // Truncated, corrupt and foreign bytes are errors, not crashes.
  EXPECT_FALSE(decoder.Decode(jpeg.data(), jpeg.size() / 2, &n).ok());
  std::string bad = jpeg;
  for (size_t i = bad.size() / 3; i < bad.size() / 3 + 64; ++i) bad[i] = static_cast<char>(0xFF);
  Status st = decoder.Decode(bad.data(), bad.size(), &n);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("JPEG: ", 0), 0u) << st.message();
  EXPECT_FALSE(decoder.Decode(png.data(), png.size() - 20, &n).ok());
  EXPECT_FALSE(decoder.Decode("GIF89a", 6, &n).ok());
  EXPECT_TRUE(decoder.Decode(jpeg.data(), jpeg.size(), &n).ok());  // and the decoder still works afterwards
}

TEST(Datagen, UnwritableTargetNamesTheDirectory) {
  test::TempDir dir;
  test::WriteFile(dir / "blocker", "a file where a directory should be");
  auto cfg = SmallUnet(dir / "blocker", 2);
  auto r = GenerateDataset(cfg, {0, 1, 1, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("blocker"), std::string::npos) << r.status().ToString();
}

TEST(Datagen, RefusesADatasetLargerThanTheFreeSpace) {
  test::TempDir dir;
  // A 4 MB record length with the workload's 68 MB stdev draws files of ~170 MB on average: 5000 of them
  // need far more than this machine's disk holds.
  auto cfg = LoadWorkload("unet3d_h100", {"dataset.data_folder=" + dir.path(), "dataset.num_files_train=5000",
                                          "dataset.record_length_bytes=4194304"});
  auto r = GenerateDataset(cfg, {0, 1, 1, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not enough space"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(std::filesystem::is_empty(dir / "train"));
}

TEST(Datagen, EvalFilesContinueTheDraws) {
  test::TempDir dir;
  auto cfg = SmallUnet(dir.path(), 3);
  cfg.num_files_eval = 2;
  ASSERT_TRUE(GenerateDataset(cfg, {0, 1, 1, false}).ok());
  auto dims = DlioDimensions(10000, 2000, 5);
  EXPECT_EQ(Shape(dir / "valid/img_1_of_2.npz"), (std::vector<uint64_t>{dims[4].first, dims[4].second, 1}));
}

namespace feedrate {
namespace {

// Nothing at the path before Commit, an existing file replaced whole, nothing left behind by a file dropped without
// Commit (the hidden-name way is SafeFile's, tests/unit/safe_file_test.cpp).
TEST(TempFile, NothingAppearsBeforeCommitAndAnExistingFileIsReplacedWhole) {
  test::TempDir dir;
  const std::string path = dir / "f.bin";
  {
    test::WriteFile(path, "old contents");
    {
      auto t = TempFile::Create(path);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      ASSERT_TRUE(t->WriteAt("new", 3, 0).ok());
      EXPECT_EQ(test::ReadFile(path), "old contents");
      ASSERT_TRUE(t->Commit().ok());
    }
    EXPECT_EQ(test::ReadFile(path), "new");
    {
      auto dropped = TempFile::Create(dir / "g.bin");
      ASSERT_TRUE(dropped.ok());
      ASSERT_TRUE(dropped->WriteAt("x", 1, 0).ok());
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "g.bin"));
    size_t entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) entries += e.is_regular_file() ? 1 : 0;
    EXPECT_EQ(entries, 1u);  // f.bin only: no hidden temporary left
  }
}

}  // namespace
}  // namespace feedrate

// What cannot be generated comes back as the Status, never as an exception, and nothing is written.
TEST(Datagen, RefusalsAreStatusesNotExceptions) {
  test::TempDir dir;
  DatagenOptions o;
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"dataset.compression=gzip"}, {"dataset.format=parquet", "dataset.compression=bz2"}}) {
    std::vector<std::string> overrides = {"dataset.data_folder=" + dir.path(), "dataset.num_files_train=2"};
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    const WorkloadConfig cfg = LoadWorkload("unet3d_h100", overrides);  // a valid configuration, not a generable one
    Result<DatagenStats> r = Status::Ok();
    EXPECT_NO_THROW(r = GenerateDataset(cfg, o));
    ASSERT_FALSE(r.ok()) << extra.back();
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(r.status().ToString().find("dataset.compression"), std::string::npos) << r.status().ToString();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "train"));
}

}  // namespace
}  // namespace feedrate
