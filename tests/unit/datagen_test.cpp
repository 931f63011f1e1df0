// Dataset generation: DLIO names and shapes, rank split, skip-existing, durable commits in the background, and
// clear errors on a bad target.
#include <gtest/gtest.h>

#include <filesystem>

#include "datagen/background_committer.h"
#include "datagen/generator.h"
#include "datagen/temp_file.h"
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
    cfg.format = format;
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

}  // namespace
}  // namespace feedrate
