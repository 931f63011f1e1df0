// Streaming whole-file I/O (checkpoints): every size and engine round-trips, O_DIRECT handles unaligned sizes,
// fsync is really called, content checks catch a changed byte, and a failed write leaves no file behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <fstream>

#include "loader/io/stream_io.h"
#include "loader/util/content_pattern.h"
#include "test_util.h"

namespace feedrate {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<StreamIo> Make(bool uring, bool odirect, FaultInjector* faults = nullptr) {
  StreamOptions o;
  o.queue_depth = 4;
  o.block = 64 << 10;
  o.uring = uring;
  o.odirect = odirect;
  o.faults = faults;
  auto s = StreamIo::Create(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(*s);
}

TEST(StreamIo, RoundTripsEverySizeWithBothEnginesAndODirect) {
  test::TempDir dir("/var/tmp");
  for (bool uring : {true, false}) {
    for (bool odirect : {false, true}) {
      auto io = Make(uring, odirect);
      for (uint64_t size : {uint64_t{1}, uint64_t{4096}, uint64_t{65536}, uint64_t{65537}, uint64_t{1000000}}) {
        const std::string path = dir / ("f" + std::to_string(size));
        const uint64_t key = ContentKey(1, path);
        Status w = io->WriteFile(path, size, true, key);
        if (odirect && !w.ok() && w.message().find("Invalid argument") != std::string::npos) GTEST_SKIP() << "no O_DIRECT here";
        ASSERT_TRUE(w.ok()) << w.ToString();
        EXPECT_EQ(fs::file_size(path), size);
        Status r = io->ReadFile(path, size, key);
        EXPECT_TRUE(r.ok()) << r.ToString() << " uring=" << uring << " odirect=" << odirect << " size=" << size;
      }
      EXPECT_EQ(io->fsyncs(), 5u);
      for (const auto& e : fs::directory_iterator(dir.path())) EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos);
    }
  }
}

// Data written, then committed on another thread while the next file is written (how checkpoints overlap a
// file's fsync with the next file); a pending file dropped uncommitted leaves nothing behind.
TEST(StreamIo, PendingFilesCommitOnAnotherThreadOrVanish) {
  test::TempDir dir("/var/tmp");
  auto io = Make(true, false);
  auto a = io->WriteData(dir / "a", 300000, 7);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(fs::exists(dir / "a"));  // not named before Commit
  auto committing = std::async(std::launch::async, [&] { return io->Commit(std::move(*a), true); });
  auto b = io->WriteData(dir / "b", 500000, 8);
  ASSERT_TRUE(committing.get().ok());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE(io->Commit(std::move(*b), true).ok());
  EXPECT_EQ(io->fsyncs(), 2u);
  EXPECT_EQ(io->bytes_written(), 800000u);
  EXPECT_TRUE(io->ReadFile(dir / "a", 300000, 7).ok());
  EXPECT_TRUE(io->ReadFile(dir / "b", 500000, 8).ok());
  {
    auto dropped = io->WriteData(dir / "c", 100000);
    ASSERT_TRUE(dropped.ok());
  }
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_TRUE(e.path().filename() == "a" || e.path().filename() == "b") << e.path();
  }
}

TEST(StreamIo, ContentCheckAndSizeCheckNameTheFile) {
  test::TempDir dir;
  auto io = Make(true, false);
  const std::string path = dir / "ckpt.pt";
  ASSERT_TRUE(io->WriteFile(path, 300000, false, 77).ok());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(123456);
    f.put('\x5a');
  }
  Status r = io->ReadFile(path, 300000, 77);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find(path + ": content check failed at offset 123456"), std::string::npos) << r.ToString();
  Status sz = io->ReadFile(path, 300001);
  ASSERT_FALSE(sz.ok());
  EXPECT_NE(sz.message().find("has 300000 bytes"), std::string::npos);
  EXPECT_FALSE(io->ReadFile(dir / "missing.pt", 1).ok());
}

TEST(StreamIo, FailedWritesLeaveNoFileAndShortWritesComplete) {
  test::TempDir dir;
  for (bool uring : {true, false}) {
    auto enospc = ParseFaultPlan("enospc:after=3,count=1");
    ASSERT_TRUE(enospc.ok());
    for (auto& r : enospc->rules) r.op = FaultOp::kWrite;
    FaultInjector faults(std::move(*enospc));
    auto io = Make(uring, false, &faults);
    const std::string path = dir / "full.pt";
    Status w = io->WriteFile(path, 1 << 20, true);
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.message().find(path + ": write failed at offset 196608 (injected)"), std::string::npos) << w.ToString();
    EXPECT_NE(w.message().find("No space left on device"), std::string::npos);
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(fs::is_empty(dir.path()));  // the temporary file is gone too

    auto shorts = ParseFaultPlan("short:every=2");
    ASSERT_TRUE(shorts.ok());
    for (auto& r : shorts->rules) r.op = FaultOp::kWrite;
    FaultInjector short_faults(std::move(*shorts));
    auto io2 = Make(uring, false, &short_faults);
    ASSERT_TRUE(io2->WriteFile(path, 500000, false, 9).ok());
    EXPECT_GT(short_faults.injected(), 0u);
    EXPECT_TRUE(io2->ReadFile(path, 500000, 9).ok());  // every byte where it belongs
    fs::remove(path);
  }
}

}  // namespace
}  // namespace feedrate
