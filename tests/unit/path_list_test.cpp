// PathList (paths by file index in one arena, absent indices) and a FileTable over a rank's part of a listing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loader/io/io_engine.h"
#include "loader/util/path_list.h"
#include "test_util.h"

namespace feedrate {
namespace {

// A rank's list: some indices with their path, the others absent.
Result<PathList> Keep(const std::vector<std::string>& all, const std::vector<char>& keep) {
  PathList l;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!keep[i]) {
      l.AddAbsent();
      continue;
    }
    FEEDRATE_RETURN_IF_ERROR(l.Add(all[i]));
  }
  return l;
}

TEST(PathList, KeepsTheMarkedPathsByIndex) {
  const std::vector<std::string> all = {"/d/train/a.jpeg", "/d/train/b.jpeg", "/d/train/c.jpeg", "/d/train/d.jpeg"};
  const std::vector<char> keep = {0, 1, 0, 1};
  auto l = Keep(all, keep);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->size(), 4u);
  EXPECT_FALSE(l->held(0));
  EXPECT_STREQ(l->c_str(0), "");
  EXPECT_EQ(l->view(1), "/d/train/b.jpeg");
  EXPECT_STREQ(l->c_str(3), "/d/train/d.jpeg");
  EXPECT_EQ(l->held_count(), 2u);
  EXPECT_EQ(l->first_held(), 1u);
  // The arena holds the kept paths only (each with its NUL), plus the one empty path the absent files share.
  EXPECT_LT(l->bytes(), 1 + 2 * 16 + 4 * sizeof(uint32_t) + 64);

  PathList eval({"/d/valid/x.jpeg"});
  ASSERT_TRUE(l->Append(eval).ok());
  ASSERT_EQ(l->size(), 5u);
  EXPECT_EQ(l->view(4), "/d/valid/x.jpeg");
  EXPECT_EQ(l->view(3), "/d/train/d.jpeg");  // earlier paths survive the arena's growth
  EXPECT_EQ(PathList().first_held(), 0u);
  EXPECT_EQ(Keep(all, std::vector<char>(4, 0))->first_held(), 4u);
}

// A rank's table holds only the files it reads; with keep_open (kOnce) it opens those, never the others: a file
// another rank reads may be anywhere (here: gone).
TEST(PathList, AFileTableOpensOnlyTheFilesItHolds) {
  test::TempDir dir;
  test::WriteFile(dir / "mine", "0123456789");
  const std::vector<std::string> all = {dir / "gone", dir / "mine"};
  auto paths = Keep(all, std::vector<char>{0, 1});
  ASSERT_TRUE(paths.ok());
  auto table = FileTable::Create(std::move(*paths), FileOpenMode::kOnce);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->open_fd(0), -1);
  EXPECT_GE(table->open_fd(1), 0);
  EXPECT_STREQ(table->path(0), "");
  // Every path held: the missing file is refused, naming it.
  auto all_held = FileTable::Create(all, FileOpenMode::kOnce);
  ASSERT_FALSE(all_held.ok());
  EXPECT_NE(all_held.status().message().find(dir / "gone"), std::string::npos) << all_held.status().ToString();
}

}  // namespace
}  // namespace feedrate
