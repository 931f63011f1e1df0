// I/O engines: random unaligned extents read by the POSIX and io_uring engines, buffered and O_DIRECT, must be
// byte-identical to the file; truncation is reported with path and offset; ring-setup failure falls back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/io/direct_io.h"
#include "loader/io/dlio_engine.h"
#include "loader/io/engine_factory.h"
#include "completions.h"
#include "test_util.h"

namespace feedrate {
namespace {

struct Case {
  const char* engine;
  bool odirect;
  const char* inject = "";  // --inject rules
};

class EngineBytes : public ::testing::TestWithParam<Case> {};

TEST_P(EngineBytes, RandomExtentsMatchTheFile) {
  const Case c = GetParam();
  test::TempDir dir;
  std::mt19937_64 rng(42);
  std::string content(3 * 1048576 + 12345, '\0');
  for (auto& ch : content) ch = static_cast<char>(rng());
  std::string path = dir / "data.bin";
  test::WriteFile(path, content);
  if (c.odirect && !DirectIoAlignment(path).ok()) GTEST_SKIP() << "O_DIRECT refused on " << dir.path();
  auto table = FileTable::Create({path}, false, c.odirect ? O_DIRECT : 0);
  ASSERT_TRUE(table.ok());
  EngineOptions o;
  o.threads = 2;
  o.transfer_size = 65536;  // many transfers per extent, so a sample is read with depth
  o.queue_depth = 4;
  o.queue_capacity = 256;
  o.odirect = c.odirect;
  o.direct_align = c.odirect ? *DirectIoAlignment(path) : 4096;
  FaultInjector faults(*ParseFaultPlan(c.inject), o.odirect ? o.direct_align : 1);
  faults.BindFiles(*table);
  if (faults.any()) o.faults = &faults;
  auto engine = MakeEngine(*Parse<EngineKind>(c.engine), *table, o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE(engine->fallback_reason.empty()) << engine->fallback_reason;

  const size_t n = 64;
  std::vector<SampleExtent> extents;
  std::vector<AlignedBuffer> dest;
  std::uniform_int_distribution<uint64_t> off_d(0, content.size() - 1);
  for (size_t i = 0; i < n; ++i) {
    uint64_t off = off_d(rng), len = std::uniform_int_distribution<uint64_t>(1, std::min<uint64_t>(400000, content.size() - off))(rng);
    if (i == 0) off = content.size() - 777, len = 777;  // ends at EOF, unaligned
    extents.push_back({0, off, len});
    dest.emplace_back(AlignUp(len + 2 * o.direct_align, o.direct_align), o.direct_align);
  }
  test::Collector done(n);
  for (size_t i = 0; i < n; ++i) engine->engine->Submit({extents[i], dest[i].data(), &done, i});
  done.Wait();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(done.status_[i].ok()) << done.status_[i].ToString();
    EXPECT_EQ(done.bytes_[i], extents[i].length);
    uint64_t shift = c.odirect ? extents[i].offset % o.direct_align : 0;  // the window starts aligned
    ASSERT_EQ(std::string(dest[i].data() + shift, extents[i].length), content.substr(extents[i].offset, extents[i].length))
        << "extent " << i << " offset " << extents[i].offset << " length " << extents[i].length;
  }
  EngineCounters k = engine->engine->counters();
  uint64_t want = 0;
  for (const auto& e : extents) want += e.length;
  if (faults.any()) {
    EXPECT_GT(k.requeued, 0u);  // both engines retried the injected short reads and EAGAINs
    EXPECT_GT(faults.injected(), 0u);
  } else if (c.odirect) {
    EXPECT_GT(k.device_bytes, want);  // aligned windows read more than the samples
  } else {
    EXPECT_EQ(k.device_bytes, want);
  }
}

// Without a destination, a sample whose window fits one transfer is handed to the target in place (for checks
// such as TFRecord CRCs, with no copy); larger ones are not.
TEST_P(EngineBytes, SmallSamplesAreHandedOverInPlace) {
  const Case c = GetParam();
  test::TempDir dir;
  std::mt19937_64 rng(7);
  std::string content(1048576 + 999, '\0');
  for (auto& ch : content) ch = static_cast<char>(rng());
  std::string path = dir / "data.bin";
  test::WriteFile(path, content);
  if (c.odirect && !DirectIoAlignment(path).ok()) GTEST_SKIP() << "O_DIRECT refused on " << dir.path();
  auto table = FileTable::Create({path}, true, c.odirect ? O_DIRECT : 0);
  ASSERT_TRUE(table.ok());
  EngineOptions o;
  o.threads = 2;
  o.transfer_size = 65536;
  o.queue_depth = 4;
  o.queue_capacity = 256;
  o.odirect = c.odirect;
  o.direct_align = c.odirect ? *DirectIoAlignment(path) : 4096;
  FaultInjector faults(*ParseFaultPlan(c.inject), o.odirect ? o.direct_align : 1);
  faults.BindFiles(*table);
  if (faults.any()) o.faults = &faults;
  auto engine = MakeEngine(*Parse<EngineKind>(c.engine), *table, o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  const size_t n = 48;
  const uint64_t fit = o.transfer_size - (c.odirect ? 2 * o.direct_align : 0);
  std::vector<SampleExtent> extents;
  for (size_t i = 0; i < n; ++i) {
    uint64_t len = i % 8 == 7 ? 3 * o.transfer_size : std::uniform_int_distribution<uint64_t>(1, fit)(rng);
    uint64_t off = std::uniform_int_distribution<uint64_t>(0, content.size() - len)(rng);
    extents.push_back({0, off, len});
  }
  test::Collector done(n);
  for (size_t i = 0; i < n; ++i) engine->engine->Submit({extents[i], nullptr, &done, i});
  done.Wait();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(done.status_[i].ok()) << done.status_[i].ToString();
    if (extents[i].length > o.transfer_size) {
      EXPECT_FALSE(done.had_data_[i]) << i;
      continue;
    }
    ASSERT_TRUE(done.had_data_[i]) << "extent " << i << " length " << extents[i].length;
    EXPECT_EQ(done.handed_[i], content.substr(extents[i].offset, extents[i].length)) << "extent " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineBytes,
                         ::testing::Values(Case{"posix", false}, Case{"uring", false}, Case{"posix", true},
                                           Case{"uring", true},
                                           // Short reads every 3rd read and EAGAIN every 4th: same bytes in the end.
                                           Case{"posix", false, "short:every=3;eagain:every=4"},
                                           Case{"uring", false, "short:every=3;eagain:every=4"},
                                           Case{"posix", true, "short:every=3;eagain:every=4"},
                                           Case{"uring", true, "short:every=3;eagain:every=4"}),
                         [](const auto& p) {
                           return std::string(p.param.engine) + (p.param.odirect ? "_direct" : "_buffered") +
                                  (*p.param.inject ? "_faults" : "");
                         });

// kWholeFile: files of unknown size read to their end, with and without short reads and EAGAIN: the completion's
// bytes are the file's size; a file that fits one transfer is handed over in place, a larger one is not.
TEST(Engines, WholeFilesOfUnknownSizeAreReadToTheirEnd) {
  const std::vector<size_t> sizes = {0, 1, 100, 16383, 16384, 16385, 40000, 3 * 16384};
  for (const char* inject : {"", "short:every=2;eagain:every=3"}) {
    for (const char* kind : {"posix", "uring"}) {
      test::TempDir dir;
      std::vector<std::string> paths, contents;
      std::mt19937_64 rng(7);
      for (size_t i = 0; i < sizes.size(); ++i) {
        std::string c(sizes[i], '\0');
        for (auto& ch : c) ch = static_cast<char>(rng());
        paths.push_back(dir / ("f" + std::to_string(i)));
        test::WriteFile(paths.back(), c);
        contents.push_back(c);
      }
      auto table = FileTable::Create(paths, false);
      ASSERT_TRUE(table.ok());
      EngineOptions o;
      o.threads = 2;
      o.transfer_size = 16384;
      o.queue_depth = 4;
      FaultInjector faults(*ParseFaultPlan(inject), 1);
      faults.BindFiles(*table);
      if (faults.any()) o.faults = &faults;
      auto engine = MakeEngine(*Parse<EngineKind>(kind), *table, o);
      ASSERT_TRUE(engine.ok());
      const size_t rounds = 3;
      test::Collector done(sizes.size() * rounds);
      for (size_t k = 0; k < sizes.size() * rounds; ++k) {
        engine->engine->Submit({{static_cast<uint32_t>(k % sizes.size()), 0, kWholeFile}, nullptr, &done, k});
      }
      done.Wait();
      for (size_t k = 0; k < sizes.size() * rounds; ++k) {
        const size_t i = k % sizes.size();
        const std::string where = std::string(kind) + " " + inject + " file of " + std::to_string(sizes[i]) + " bytes";
        ASSERT_TRUE(done.status_[k].ok()) << where << ": " << done.status_[k].ToString();
        EXPECT_EQ(done.bytes_[k], sizes[i]) << where;
        EXPECT_EQ(done.had_data_[k] != 0, sizes[i] < 16384) << where;  // a full transfer may not be the end
        if (done.had_data_[k]) {
          EXPECT_EQ(done.handed_[k], contents[i]) << where;
        }
      }
    }
  }
}

// An empty extent (a Parquet row group's rows after its first) completes at once: no open — its file does not
// even exist here — and, with O_DIRECT at an unaligned offset, no aligned block read into its destination.
TEST(Engines, EmptyExtentsCompleteWithoutOpeningOrReading) {
  for (const char* kind : {"posix", "uring"}) {
    for (const bool odirect : {false, true}) {
      test::TempDir dir;
      auto table = FileTable::Create({dir / "absent.parquet"}, false);
      ASSERT_TRUE(table.ok());
      EngineOptions o;
      o.transfer_size = 16384;
      o.odirect = odirect;
      o.direct_align = 4096;
      auto engine = MakeEngine(*Parse<EngineKind>(kind), *table, o);
      ASSERT_TRUE(engine.ok());
      AlignedBuffer dest(8192, 4096);
      std::memset(dest.data(), 'z', 8192);
      test::Collector done(3);
      for (uint64_t k = 0; k < 3; ++k) engine->engine->Submit({{0, 4097 + k * 5000, 0}, dest.data(), &done, k});
      done.Wait();
      for (uint64_t k = 0; k < 3; ++k) {
        ASSERT_TRUE(done.status_[k].ok()) << kind << " " << odirect << ": " << done.status_[k].ToString();
        EXPECT_EQ(done.bytes_[k], 0u);
      }
      EXPECT_EQ(std::string(dest.data(), 8192), std::string(8192, 'z')) << kind << " " << odirect;
    }
  }
}

TEST(Engines, TruncatedFileNamesPathAndOffset) {
  for (const char* kind : {"posix", "uring"}) {
    test::TempDir dir;
    std::string path = dir / "short.bin";
    test::WriteFile(path, std::string(100000, 'x'));
    auto table = FileTable::Create({path}, true);
    EngineOptions o;
    o.transfer_size = 16384;
    auto engine = MakeEngine(*Parse<EngineKind>(kind), *table, o);
    ASSERT_TRUE(engine.ok());
    test::Collector done(1);
    engine->engine->Submit({{0, 50000, 80000}, nullptr, &done, 0});
    done.Wait();
    ASSERT_FALSE(done.status_[0].ok()) << kind;
    EXPECT_NE(done.status_[0].message().find(path), std::string::npos) << done.status_[0].ToString();
    EXPECT_NE(done.status_[0].message().find("offset 100000"), std::string::npos) << done.status_[0].ToString();
  }
}

TEST(Engines, InjectedEioFailsTheSampleWithPathOffsetAndErrno) {
  for (const char* kind : {"posix", "uring"}) {
    test::TempDir dir;
    std::string path = dir / "data.bin";
    test::WriteFile(path, std::string(1 << 20, 'y'));
    auto table = FileTable::Create({path}, false);
    EngineOptions o;
    o.transfer_size = 65536;
    FaultInjector faults(*ParseFaultPlan("eio:every=5"));
    faults.BindFiles(*table);
    o.faults = &faults;
    auto engine = MakeEngine(*Parse<EngineKind>(kind), *table, o);
    ASSERT_TRUE(engine.ok());
    const size_t n = 8;
    test::Collector done(n);
    for (size_t i = 0; i < n; ++i) engine->engine->Submit({{0, 0, 1 << 20}, nullptr, &done, i});
    done.Wait();  // completes (no hang) even though reads fail
    size_t failed = 0;
    for (const auto& st : done.status_) {
      if (st.ok()) continue;
      ++failed;
      EXPECT_NE(st.message().find(path), std::string::npos) << st.ToString();
      EXPECT_NE(st.message().find("offset"), std::string::npos) << st.ToString();
      EXPECT_NE(st.message().find("Input/output error"), std::string::npos) << st.ToString();
    }
    EXPECT_GT(failed, 0u) << kind;
  }
}

// Rules by file and by offset: only the matching file's reads in the range fail, and each failure names them.
TEST(Engines, InjectedFaultsByFileAndOffset) {
  for (const char* kind : {"posix", "uring"}) {
    test::TempDir dir;
    const std::string a = dir / "img_1.bin", b = dir / "img_3.bin";
    test::WriteFile(a, std::string(1 << 20, 'a'));
    test::WriteFile(b, std::string(1 << 20, 'b'));
    auto table = FileTable::Create({a, b}, false);
    EngineOptions o;
    o.transfer_size = 65536;
    FaultInjector faults(*ParseFaultPlan("eio:file=img_3*,offset=512K-520K"));
    faults.BindFiles(*table);
    o.faults = &faults;
    auto engine = MakeEngine(*Parse<EngineKind>(kind), *table, o);
    ASSERT_TRUE(engine.ok());
    // Per file: [0, 256K) clean, [256K, 512K) touches the range's start only at its end (clean), [512K, 1M) fails.
    const std::vector<SampleExtent> extents = {{0, 0, 256 << 10}, {0, 512 << 10, 512 << 10}, {1, 0, 256 << 10},
                                               {1, 256 << 10, 256 << 10}, {1, 512 << 10, 512 << 10}};
    test::Collector done(extents.size());
    for (size_t i = 0; i < extents.size(); ++i) engine->engine->Submit({extents[i], nullptr, &done, i});
    done.Wait();
    for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(done.status_[i].ok()) << kind << " " << i << ": " << done.status_[i].ToString();
    ASSERT_FALSE(done.status_[4].ok()) << kind;
    EXPECT_NE(done.status_[4].message().find(b + ": read failed at offset 524288"), std::string::npos) << done.status_[4].ToString();
    EXPECT_NE(done.status_[4].message().find("Input/output error"), std::string::npos);
    EXPECT_EQ(faults.injected(), 1u) << kind;  // the sample stops at its first failed transfer
  }
}

TEST(Engines, RingSetupFailureFallsBackOrFails) {
  test::TempDir dir;
  test::WriteFile(dir / "f", "x");
  auto table = FileTable::Create({dir / "f"}, false);
  ::setenv("FEEDRATE_TEST_URING_SETUP_ERRNO", "1", 1);  // EPERM, as under a seccomp filter
  auto fallback = MakeEngine(EngineKind::kAuto, *table, {});
  auto strict = MakeEngine(EngineKind::kUring, *table, {});
  ::unsetenv("FEEDRATE_TEST_URING_SETUP_ERRNO");
  ASSERT_TRUE(fallback.ok());
  EXPECT_STREQ(fallback->engine->name(), "posix");
  EXPECT_NE(fallback->fallback_reason.find("Operation not permitted"), std::string::npos);
  EXPECT_NE(fallback->description.find("io_uring unavailable"), std::string::npos);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("--engine uring"), std::string::npos);
}

// Opens `make`'s engine with io_uring's first submit failing for good (EIO, injected), submits 12 reads of a 1 MiB
// file over `lanes` lanes (more than a ring's depth: later ones arrive after the failure) and expects every one to
// complete failed, naming the cause. A hang shows as ctest's timeout, not as a verdict of the test.
template <typename Make>
void ExpectEveryRequestFailsOnABrokenRing(Make make, uint32_t lanes) {
  test::TempDir dir;
  test::WriteFile(dir / "f", std::string(1 << 20, 'r'));
  auto table = FileTable::Create({dir / "f"}, false);
  ASSERT_TRUE(table.ok());
  ::setenv("FEEDRATE_TEST_URING_SUBMIT_ERRNO", "0:5", 1);
  auto engine = make(*table);
  ::unsetenv("FEEDRATE_TEST_URING_SUBMIT_ERRNO");
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  constexpr size_t kRequests = 12;
  test::Collector c(kRequests);
  for (size_t i = 0; i < kRequests; ++i) {
    ReadRequest r;
    r.extent = {0, i * 65536, 65536};
    r.target = &c;
    r.tag = i;
    r.lane = static_cast<uint32_t>(i % lanes);
    (*engine)->Submit(r);
  }
  c.Wait();
  for (size_t i = 0; i < kRequests; ++i) {
    EXPECT_FALSE(c.status_[i].ok()) << i;
    EXPECT_NE(c.status_[i].message().find("io_uring_submit_and_wait failed"), std::string::npos) << c.status_[i].message();
    EXPECT_EQ(c.bytes_[i], 0u);
  }
}

// The io_uring engine: before the fix its worker spun with the requests stranded.
TEST(Engines, RingThatFailsForGoodFailsEveryRequestInsteadOfSpinning) {
  ExpectEveryRequestFailsOnABrokenRing(
      [](const FileTable& table) -> Result<std::unique_ptr<IoEngine>> {
        EngineOptions o;
        o.threads = 1;
        o.queue_depth = 4;
        o.transfer_size = 65536;
        FEEDRATE_ASSIGN_OR_RETURN(auto e, MakeEngine(EngineKind::kUring, table, o));
        return std::move(e.engine);
      },
      1);
}

// A DlioEngine planner of one read per extent.
struct WholeExtent final : ReadPlanner {
  void Plan(const ReadRequest& r, uint64_t, uint64_t, std::vector<AccessRead>* out) const override {
    out->assign(1, AccessRead{r.extent.offset, r.extent.length});
  }
  uint64_t MaxReads() const override { return 1; }
};

// The DLIO engine: it used to end the process with abort().
TEST(DlioEngine, ARingThatFailsForGoodFailsEveryRequest) {
  const WholeExtent planner;
  ExpectEveryRequestFailsOnABrokenRing(
      [&planner](const FileTable& table) -> Result<std::unique_ptr<IoEngine>> {
        DlioEngineOptions d;
        d.lanes = 2;
        d.lane_capacity = 16;
        FEEDRATE_ASSIGN_OR_RETURN(auto e, DlioEngine::Create(table, EngineOptions{}, d, planner));
        return std::unique_ptr<IoEngine>(std::move(e));
      },
      2);
}

// reader.preprocess_time: each sample of a lane waits it after its reads, so one lane's 4 samples take 4 waits;
// 4 lanes' waits run at once on one I/O thread (a timeout each, no thread asleep). Bounds, not timings: a lane
// cannot finish sooner than its waits, and 4 lanes on 1 thread finish well before 4 waits one after another.
TEST(DlioEngine, PreprocessWaitsAfterEachSampleOfALane) {
  const WholeExtent planner;
  test::TempDir dir;
  test::WriteFile(dir / "f", std::string(8192, 'p'));
  auto table = FileTable::Create({dir / "f"}, false);
  ASSERT_TRUE(table.ok());
  for (const uint32_t lanes : {1u, 4u}) {
    SCOPED_TRACE(lanes);
    DlioEngineOptions d;
    d.lanes = lanes;
    d.lane_capacity = 8;
    d.preprocess.mean = 0.2;
    EngineOptions o;
    o.threads = 1;
    auto engine = DlioEngine::Create(*table, o, d, planner);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    test::Collector done(4);
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t k = 0; k < 4; ++k) {
      ReadRequest r{{0, k * 2048, 2048}, nullptr, &done, k};
      r.lane = static_cast<uint32_t>(k % lanes);
      (*engine)->Submit(r);
    }
    done.Wait();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (uint64_t k = 0; k < 4; ++k) {
      ASSERT_TRUE(done.status_[k].ok()) << done.status_[k].ToString();
      EXPECT_EQ(done.bytes_[k], 2048u);
    }
    EXPECT_GE(s, lanes == 1 ? 0.8 : 0.2);  // every sample completes after its wait
    if (lanes == 4) {
      EXPECT_LT(s, 0.7);  // the 4 lanes' waits overlap on the one thread
    }
  }
}

// A reader's work on each sample's bytes (feedrate.decode's image decode under the DLIO pattern): it gets exactly
// the sample's bytes, whatever the reads were (a header before the extent, a read past its end, a read in pieces
// larger than the scratch buffer), once per sample on the lane's I/O thread, and its error fails the sample naming
// the file.
struct SampleBytesWork final : SampleWork {
  Status Run(const char* data, uint64_t n, const char* path) override {
    calls->fetch_add(1);
    if (n > 0 && data[0] == 'X') return Status::Corruption(std::string(path) + ": not an image");
    for (const SampleExtent& e : *extents) {  // the test's samples have lengths of their own
      if (e.length == n) {
        return std::memcmp(file->data() + e.offset, data, n) == 0
                   ? Status::Ok()
                   : Status::Corruption(std::string(path) + ": the work got bytes that are not the sample's");
      }
    }
    return Status::Corruption(std::string(path) + ": no sample of " + std::to_string(n) + " bytes");
  }
  const std::string* file = nullptr;
  const std::vector<SampleExtent>* extents = nullptr;
  std::atomic<int>* calls = nullptr;
};
struct PlannerWithWork final : ReadPlanner {
  void Plan(const ReadRequest& r, uint64_t, uint64_t, std::vector<AccessRead>* out) const override {
    out->clear();
    out->push_back({0, 10});  // a header before the sample (npz's directory): not the sample's bytes
    out->push_back({r.extent.offset, 16});
    uint64_t at = r.extent.offset;
    out->push_back({at, 10000});  // larger than the 4 KiB scratch buffer: pieces
    for (at += 10000; at < r.extent.offset + r.extent.length; at += 3000) out->push_back({at, 3000});  // the last asks past the end
  }
  uint64_t MaxReads() const override { return 64; }
  std::unique_ptr<SampleWork> NewSampleWork() const override { return std::make_unique<SampleBytesWork>(work); }
  SampleBytesWork work;
};

TEST(DlioEngine, SampleWorkGetsEachSampleBytesBeforeTheLaneGoesOn) {
  test::TempDir dir;
  std::string bytes(200000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 251);
  for (size_t i = 150000; i < 170000; ++i) bytes[i] = 'X';  // a sample there fails its work
  test::WriteFile(dir / "f", bytes);
  auto table = FileTable::Create({dir / "f"}, false);
  ASSERT_TRUE(table.ok());
  // Samples of growing sizes (the lane's buffer grows), at offsets that are not multiples of anything.
  const std::vector<SampleExtent> extents = {{0, 1000, 12000}, {0, 20011, 30000}, {0, 60013, 80000}, {0, 5, 14000}, {0, 150000, 15000}};
  std::atomic<int> calls{0};
  PlannerWithWork planner;
  planner.work.file = &bytes;
  planner.work.extents = &extents;
  planner.work.calls = &calls;
  DlioEngineOptions d;
  d.lanes = 2;
  d.lane_capacity = 8;
  d.chunk = 4096;
  EngineOptions o;
  o.threads = 1;
  auto engine = DlioEngine::Create(*table, o, d, planner);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  test::Collector done(5);
  for (uint64_t k = 0; k < 5; ++k) {
    ReadRequest r{extents[k], nullptr, &done, k};
    r.lane = static_cast<uint32_t>(k % 2);
    (*engine)->Submit(r);
  }
  done.Wait();
  for (uint64_t k = 0; k < 4; ++k) {
    EXPECT_TRUE(done.status_[k].ok()) << k << ": " << done.status_[k].ToString();
    EXPECT_EQ(done.bytes_[k], extents[k].length);
  }
  EXPECT_FALSE(done.status_[4].ok());
  EXPECT_NE(done.status_[4].ToString().find((dir / "f") + ": not an image"), std::string::npos) << done.status_[4].ToString();
  EXPECT_EQ(calls.load(), 5);
  EXPECT_GT((*engine)->counters().sample_work_ns, 0u);
}

// One truth for the engine's numbers: what ResolveEngineOptions returns is what the engines, the memory check,
// coalescing and retained batches use (run.cpp used the unrounded O_DIRECT transfer size in three places).
TEST(EngineOptions, ResolvedOnceForEveryUser) {
  EngineRequest r;
  r.transfer_size = 1'000'000;
  r.odirect = true;
  r.direct_align = 4096;
  r.read_threads = 4;
  r.accelerators = 10;
  r.batches_in_flight = 2;
  r.batch = 7;
  r.cpus = 2;
  ResolvedEngine e = ResolveEngineOptions(r);
  EXPECT_EQ(e.options.transfer_size, 1'003'520u);  // rounded up to the alignment: the size the engines read with
  EXPECT_EQ(e.options.queue_depth, 16u);
  EXPECT_EQ(e.MaxWindow(100), 100u + 8192);
  EXPECT_EQ(e.dlio_threads, 40u);
  EXPECT_TRUE(e.capped);
  EXPECT_EQ(e.io_threads, 8u);  // 4 per CPU
  EXPECT_EQ(e.options.threads, 8u);
  EXPECT_EQ(e.options.queue_capacity, 10u * 2 * 7 + 16);
  EXPECT_EQ(EngineBufferBytes(EngineKind::kUring, e.options), 8u * 16 * 1'003'520);

  r.posix = true;  // POSIX O_DIRECT: blocked threads are its concurrency, no cap
  e = ResolveEngineOptions(r);
  EXPECT_FALSE(e.capped);
  EXPECT_EQ(e.io_threads, 40u);

  r = EngineRequest{};
  r.transfer_size = 1'000'000;  // buffered: as given, depth 1, windows are the extents
  r.io_threads = 3;
  r.read_threads = 4;
  r.accelerators = 10;
  r.cpus = 2;
  e = ResolveEngineOptions(r);
  EXPECT_EQ(e.options.transfer_size, 1'000'000u);
  EXPECT_EQ(e.options.queue_depth, 1u);
  EXPECT_EQ(e.MaxWindow(100), 100u);
  EXPECT_FALSE(e.capped);
  EXPECT_EQ(e.io_threads, 3u);

  r.io_threads = 0;  // tmpfs, buffered: every read is a copy, so one thread per CPU
  r.memory_storage = true;
  e = ResolveEngineOptions(r);
  EXPECT_TRUE(e.capped);
  EXPECT_EQ(e.io_threads, 2u);
  EXPECT_EQ(e.options.threads, 2u);
  EXPECT_NE(std::string(e.cap_reason).find("1 per CPU"), std::string::npos);
  r.io_threads = 5;  // given: as given
  EXPECT_EQ(ResolveEngineOptions(r).io_threads, 5u);
  r.io_threads = 0;
  r.accelerators = 1;
  r.read_threads = 1;  // below the CPUs: DLIO's count
  e = ResolveEngineOptions(r);
  EXPECT_FALSE(e.capped);
  EXPECT_EQ(e.io_threads, 1u);
  r.accelerators = 10;
  r.read_threads = 4;
  r.memory_storage = false;

  r.s3 = true;  // S3: at most one event loop per CPU, depth 16
  e = ResolveEngineOptions(r);
  EXPECT_EQ(e.io_threads, 8u);
  EXPECT_EQ(e.options.threads, 2u);
  EXPECT_EQ(e.options.queue_depth, 16u);
  r.queue_depth = 4;
  EXPECT_EQ(ResolveEngineOptions(r).options.queue_depth, 4u);
}

}  // namespace
}  // namespace feedrate
