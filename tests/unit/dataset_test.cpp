// DLIO file naming and discovery.
#include <gtest/gtest.h>

#include <filesystem>

#include "loader/dataset/dataset.h"
#include "test_util.h"

namespace feedrate {
namespace {

TEST(Dataset, DlioNames) {
  EXPECT_EQ(DlioFileName("img", 7, 64, DataFormat::kNpz), "img_07_of_64.npz");
  EXPECT_EQ(DlioFileName("img", 7, 168, DataFormat::kNpz), "img_007_of_168.npz");
  EXPECT_EQ(DlioFileName("img", 0, 8, DataFormat::kNpz), "img_0_of_8.npz");
  EXPECT_EQ(DlioFileName("part", 499, 500, DataFormat::kTfRecord), "part_499_of_500.tfrecord");
  EXPECT_EQ(DlioFilePath("/d", "train", "img", 13, 100, 4, DataFormat::kNpz), "/d/train/1/img_013_of_100.npz");
  EXPECT_EQ(DlioFilePath("/d", "train", "img", 13, 100, 12, DataFormat::kNpz), "/d/train/01/img_013_of_100.npz");
  EXPECT_EQ(DlioFilePath("/d", "valid", "img", 3, 8, 0, DataFormat::kNpz), "/d/valid/img_3_of_8.npz");
}

TEST(Dataset, DiscoveryOrdersAndTrims) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "train");
  for (int i : {3, 0, 2, 1}) test::WriteFile(dir / ("train/" + DlioFileName("img", i, 4, DataFormat::kNpz)), "x");
  test::WriteFile(dir / "train/.img_9_of_9.npz.tmp-1", "partial");  // a generator's temporary file
  test::WriteFile(dir / "train/notes.txt", "x");
  auto files = DiscoverFiles(dir.path(), "train", DataFormat::kNpz, 3, 0);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 3u);
  EXPECT_TRUE((*files)[0].ends_with("img_0_of_4.npz"));
  EXPECT_TRUE((*files)[2].ends_with("img_2_of_4.npz"));
}

TEST(Dataset, DiscoveryErrors) {
  test::TempDir dir;
  auto missing = DiscoverFiles(dir / "nope", "train", DataFormat::kNpz, 1, 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope/train"), std::string::npos);
  std::filesystem::create_directories(dir / "train");
  test::WriteFile(dir / "train/img_0_of_2.npz", "x");
  auto few = DiscoverFiles(dir.path(), "train", DataFormat::kNpz, 2, 0);
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("found 1 .npz files"), std::string::npos) << few.status().ToString();
  EXPECT_NE(few.status().message().find("num_files_train=2"), std::string::npos);
}

TEST(Dataset, SubfoldersSortByBasename) {
  test::TempDir dir;
  for (int i = 0; i < 6; ++i) {
    std::string p = DlioFilePath(dir.path(), "train", "img", i, 6, 2, DataFormat::kNpz);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    test::WriteFile(p, "x");
  }
  auto files = DiscoverFiles(dir.path(), "train", DataFormat::kNpz, 4, 2);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_TRUE((*files)[1].ends_with("1/img_1_of_6.npz"));
  EXPECT_TRUE((*files)[2].ends_with("0/img_2_of_6.npz"));
  EXPECT_FALSE(DiscoverFiles(dir.path(), "train", DataFormat::kNpz, 4, 3).ok());
}

// The compact listing: relative names in one arena, DLIO's order, full paths built on demand; a symbolic link to
// a file counts as a file (as stat says), one to a folder or a dangling one does not.
TEST(Dataset, ListingBuildsPathsInOrderAndFollowsLinks) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "train");
  std::filesystem::create_directories(dir / "elsewhere");
  for (int i : {2, 0}) test::WriteFile(dir / ("train/" + DlioFileName("img", i, 4, DataFormat::kNpz)), "x");
  test::WriteFile(dir / "elsewhere/real.npz", "x");
  std::filesystem::create_symlink(dir / "elsewhere/real.npz", dir / "train/img_1_of_4.npz");
  std::filesystem::create_symlink(dir / "elsewhere", dir / "train/folder.npz");
  std::filesystem::create_symlink(dir / "nowhere.npz", dir / "train/img_3_of_4.npz");
  auto listing = ListDatasetFiles(dir.path(), "train", DataFormat::kNpz, 3, 0);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  ASSERT_EQ(listing->size(), 3u);
  EXPECT_EQ(listing->Path(1), dir / "train/img_1_of_4.npz");
  std::string path = "x:";
  listing->AppendPath(2, &path);
  EXPECT_EQ(path, "x:" + dir / "train/img_2_of_4.npz");
  EXPECT_FALSE(ListDatasetFiles(dir.path(), "train", DataFormat::kNpz, 4, 0).ok());  // the dangling link is no file
}

// The selection S3 listings go through: names filtered, sorted by basename across subfolders, trimmed.
TEST(Dataset, SelectionFromAListing) {
  EXPECT_TRUE(DatasetFileNameMatches("img_1_of_8.npz", DataFormat::kNpz));
  EXPECT_TRUE(DatasetFileNameMatches("a.tfrecords", DataFormat::kTfRecord));
  EXPECT_FALSE(DatasetFileNameMatches(".img_1_of_8.npz.tmp", DataFormat::kNpz));
  EXPECT_FALSE(DatasetFileNameMatches(".hidden.npz", DataFormat::kNpz));
  EXPECT_FALSE(DatasetFileNameMatches("img.npy", DataFormat::kNpz));
  std::vector<std::string> keys = {"p/train/1/img_3_of_4.npz", "p/train/0/img_0_of_4.npz", "p/train/1/img_1_of_4.npz",
                                   "p/train/0/img_2_of_4.npz"};
  auto sel = SelectDatasetFiles("s3://b/p/train/", keys, 2, "train", DataFormat::kNpz, 3, 2);
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  EXPECT_EQ(*sel, (std::vector<std::string>{"p/train/0/img_0_of_4.npz", "p/train/1/img_1_of_4.npz", "p/train/0/img_2_of_4.npz"}));
  auto few = SelectDatasetFiles("s3://b/p/train/", keys, 2, "train", DataFormat::kNpz, 5, 2);
  EXPECT_NE(few.status().message().find("s3://b/p/train/: found 4 .npz files across its subfolders, the workload needs "
                                        "dataset.num_files_train=5"), std::string::npos) << few.status().ToString();
  auto subs = SelectDatasetFiles("s3://b/p/train/", keys, 2, "train", DataFormat::kNpz, 4, 3);
  EXPECT_NE(subs.status().message().find("found 2 subfolders, dataset.num_subfolders_train is 3"), std::string::npos);
}

}  // namespace
}  // namespace feedrate
