// The one safe writer (loader/io/safe_file.h): what a user who shares a results or checkpoint folder relies on.
#include "loader/io/safe_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "datagen/temp_file.h"
#include "emulator/results/results.h"
#include "loader/io/stream_io.h"
#include "tests/unit/test_util.h"

namespace feedrate {
namespace {

namespace fs = std::filesystem;

size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

size_t Entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// Both ways (unnamed, hidden name): nothing at the path before Commit, an existing file replaced whole, nothing left
// by a file dropped without Commit.
TEST(SafeFile, NothingAppearsBeforeCommitAndNothingIsLeftWhenDropped) {
  test::TempDir dir;
  const std::string path = dir / "f.json";
  for (bool named : {false, true}) {
    SCOPED_TRACE(named ? "hidden name" : "unnamed");
    test::WriteFile(path, "old");
    {
      auto f = SafeFile::Create(path, 0, named);
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      EXPECT_EQ(f->temp_path().empty(), !named);
      ASSERT_TRUE(f->WriteAt("new contents", 0).ok());
      EXPECT_EQ(test::ReadFile(path), "old");
      ASSERT_TRUE(f->Commit(true).ok());
    }
    EXPECT_EQ(test::ReadFile(path), "new contents");
    {
      auto dropped = SafeFile::Create(dir / "g.json", 0, named);
      ASSERT_TRUE(dropped.ok());
      ASSERT_TRUE(dropped->WriteAt("x", 0).ok());
    }
    EXPECT_FALSE(fs::exists(dir / "g.json"));
    EXPECT_EQ(Entries(dir.path()), 1u);  // f.json only
  }
}

// The attack of issue 36: a symlink planted where the output will be named is replaced, never written through, by
// every writer (results, checkpoint streams, datasets all come here).
TEST(SafeFile, APlantedSymlinkIsReplacedNotFollowed) {
  test::TempDir dir;
  const std::string victim = dir / "victim";
  test::WriteFile(victim, "precious");
  fs::create_directory(dir / "out");
  fs::create_symlink(victim, dir / "out/summary.json");
  // ... and at the names the writers used before (`summary.json.tmp-PID`, `.ckpt.bin.tmp-PID`), which they followed.
  const std::string pid = std::to_string(::getpid());
  fs::create_symlink(victim, dir / ("out/summary.json.tmp-" + pid));
  fs::create_symlink(victim, dir / ("out/.ckpt.bin.tmp-" + pid));
  ASSERT_TRUE(WriteFileSafely(dir / "out/summary.json", "{}\n").ok());
  EXPECT_EQ(test::ReadFile(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(dir / "out/summary.json"));
  EXPECT_EQ(test::ReadFile(dir / "out/summary.json"), "{}\n");

  fs::create_symlink(victim, dir / "out/ckpt.bin");
  auto io = StreamIo::Create({2, 4096, false, false});
  ASSERT_TRUE(io.ok());
  ASSERT_TRUE((*io)->WriteFile(dir / "out/ckpt.bin", 10000, true).ok());
  EXPECT_EQ(test::ReadFile(victim), "precious");
  EXPECT_EQ(fs::file_size(dir / "out/ckpt.bin"), 10000u);
  ASSERT_TRUE(WriteDatasetFile(dir / "out/data.npz", "PK").ok());  // datagen's writer
  EXPECT_EQ(test::ReadFile(victim), "precious");
}

// Temporary names carry 64 random bits: not the pid, not a counter, never the same twice.
TEST(SafeFile, HiddenNamesAreUnpredictable) {
  const std::string a = RandomHiddenName("/d/summary.json"), b = RandomHiddenName("/d/summary.json");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("/d/.summary.json.tmp-", 0), 0u) << a;
  EXPECT_EQ(a.size(), std::string("/d/.summary.json.tmp-").size() + 16) << a;
  EXPECT_EQ(a.find(std::to_string(::getpid())), std::string::npos) << a;
}

// A failed commit (here: renaming over a non-empty folder) closes the file and removes the temporary name: no fd
// leak on any path (issue 36: the old writer's `fsync || close` skipped the close).
TEST(SafeFile, AFailedCommitLeaksNoDescriptorAndNoFile) {
  test::TempDir dir;
  fs::create_directories(dir / "blocked/inside");
  const size_t before = OpenFds();
  for (bool named : {false, true}) {
    auto f = SafeFile::Create(dir / "blocked", 0, named);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->WriteAt("x", 0).ok());
    Status st = f->Commit(true);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("blocked"), std::string::npos) << st.message();
    EXPECT_EQ(OpenFds(), before);
  }
  EXPECT_FALSE(WriteFileSafely(dir / "blocked", "x").ok());
  EXPECT_EQ(OpenFds(), before);
  EXPECT_EQ(Entries(dir.path()), 1u);  // blocked/ only
}

}  // namespace
}  // namespace feedrate
