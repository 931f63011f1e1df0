// --inject rules: parsing (every key, and errors naming the rule), and what each rule does to reads and writes
// (every/after/count, file globs, offset ranges, short-read alignment, delays, ENOSPC on writes).
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include "loader/io/fault_injection.h"
#include "loader/io/io_engine.h"
#include "test_util.h"

namespace feedrate {
namespace {

TEST(FaultPlan, ParsesEveryKey) {
  auto p = ParseFaultPlan("eio:file=img_3*,every=5,after=2,count=3,offset=4K-1M;delay:ms=2;short:op=write;enospc");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->rules.size(), 4u);
  const FaultRule& e = p->rules[0];
  EXPECT_EQ(e.kind, FaultKind::kEio);
  EXPECT_EQ(e.op, FaultOp::kRead);
  EXPECT_EQ(e.file, "img_3*");
  EXPECT_EQ(e.every, 5u);
  EXPECT_EQ(e.after, 2u);
  EXPECT_EQ(e.count, 3u);
  EXPECT_EQ(e.offset_begin, 4096u);
  EXPECT_EQ(e.offset_end, 1u << 20);
  EXPECT_EQ(p->rules[1].delay_us, 2000u);
  EXPECT_EQ(p->rules[2].op, FaultOp::kWrite);
  EXPECT_EQ(p->rules[3].kind, FaultKind::kEnospc);
  EXPECT_EQ(p->rules[3].op, FaultOp::kWrite);
  EXPECT_EQ(p->ToString(), "eio:file=img_3*,every=5,after=2,count=3,offset=4K-1M;delay:ms=2;short:op=write;enospc");
  EXPECT_FALSE(ParseFaultPlan("").value().any());
}

TEST(FaultPlan, ErrorsNameTheRuleAndKey) {
  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& b : {Bad{"bogus", "unknown fault 'bogus'"}, Bad{"eio:every=0", "every must be at least 1"},
                       Bad{"eio:every=x", "every=x is not a number"}, Bad{"eio:color=red", "unknown key 'color'"},
                       Bad{"eio:every", "expected key=value"}, Bad{"delay", "delay needs us=N"},
                       Bad{"eio:us=5", "us/ms apply to delay only"}, Bad{"enospc:op=read", "enospc is a write fault"},
                       Bad{"eio:offset=9-3", "offset range 9-3 is empty"}, Bad{"eio:op=sideways", "op=sideways"}}) {
    auto p = ParseFaultPlan(b.text);
    ASSERT_FALSE(p.ok()) << b.text;
    EXPECT_NE(p.status().message().find(b.says), std::string::npos) << b.text << ": " << p.status().ToString();
    EXPECT_NE(p.status().message().find(std::string("'") + b.text), std::string::npos) << p.status().ToString();
  }
}

TEST(FaultInjector, EveryAfterCountAndFiles) {
  test::TempDir dir;
  auto table = FileTable::Create({dir / "img_1.npz", dir / "img_3.npz"}, false);
  ASSERT_TRUE(table.ok());
  FaultInjector f(*ParseFaultPlan("eio:file=img_3*,every=2,after=1,count=2"));
  f.BindFiles(*table);
  std::vector<int64_t> got;
  for (int i = 0; i < 10; ++i) got.push_back(f.OnRead(1, 0, 100, 100));
  // Matching reads 1..10: skip the first, then every 2nd of the rest (3, 5), at most 2.
  EXPECT_EQ(got, (std::vector<int64_t>{100, 100, -EIO, 100, -EIO, 100, 100, 100, 100, 100}));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(f.OnRead(0, 0, 100, 100), 100);  // img_1 never matches
  EXPECT_EQ(f.OnRead(1, 0, 100, -EBADF), -EBADF);  // a real error stands
  ASSERT_EQ(f.Counts().size(), 1u);
  EXPECT_EQ(f.Counts()[0].matched, 10u);
  EXPECT_EQ(f.Counts()[0].injected, 2u);
  EXPECT_EQ(f.injected(), 2u);
}

TEST(FaultInjector, ShortReadsStayAlignedAndOffsetsSelect) {
  FaultInjector f(*ParseFaultPlan("short:offset=1M-2M"), 4096);
  EXPECT_EQ(f.OnRead(0, 0, 65536, 65536), 65536);               // before the range
  EXPECT_EQ(f.OnRead(0, (1 << 20) - 4096, 8192, 8192), 4096);   // overlaps its start
  EXPECT_EQ(f.OnRead(0, 1 << 20, 65536, 65536), 32768);
  EXPECT_EQ(f.OnRead(0, 1 << 20, 4096, 4096), 4096);            // half of one block rounds to 0: left whole
  EXPECT_EQ(f.OnRead(0, 2 << 20, 65536, 65536), 65536);         // the range's end is exclusive
}

TEST(FaultInjector, DelayAddsServiceTimeAndKeepsTheResult) {
  FaultInjector f(*ParseFaultPlan("delay:ms=20"));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.OnRead(0, 0, 10, 10), 10);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(20));  // sleep_for's lower bound
}

TEST(FaultInjector, WritesGetEnospcAndShortWritesByPath) {
  FaultInjector f(*ParseFaultPlan("enospc:file=*_2_of_*,after=1;short:op=write,file=*_5_of_*"));
  EXPECT_EQ(f.OnWrite("/d/train/img_1_of_8.npz", 0, 1000), 0);
  EXPECT_EQ(f.OnWrite("/d/train/img_2_of_8.npz", 0, 1000), 0);  // after=1
  EXPECT_EQ(f.OnWrite("/d/train/img_2_of_8.npz", 1000, 1000), -ENOSPC);
  EXPECT_EQ(f.OnWrite("/d/train/img_5_of_8.npz", 0, 1000), 500);
  EXPECT_EQ(f.OnRead(0, 0, 10, 10), 10);  // write rules leave reads alone
}

// Reads named by path (checkpoint reads): read rules match the glob and act on the real result; write rules do not.
TEST(FaultInjector, ReadsByPathMatchGlobsAndKeepRealErrors) {
  auto plan = ParseFaultPlan("eio:op=read,file=*rank_1_*,offset=4096-4097;short:op=read,every=2;enospc:file=*");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  FaultInjector f(std::move(*plan));
  EXPECT_EQ(f.OnReadPath("/ck/zero_pp_rank_1_model.pt", 4096, 4096, 4096), -EIO);  // (the short rule's 1st match)
  EXPECT_EQ(f.OnReadPath("/ck/zero_pp_rank_0_model.pt", 4096, 4096, 4096), 2048);  // its 2nd: short
  EXPECT_EQ(f.OnReadPath("/ck/zero_pp_rank_0_model.pt", 0, 4096, 4096), 4096);     // its 3rd: untouched
  EXPECT_EQ(f.OnReadPath("/ck/zero_pp_rank_0_model.pt", 0, 4096, -EBADF), -EBADF);  // a real error stands
  EXPECT_EQ(f.OnWrite("/ck/zero_pp_rank_1_model.pt", 4096, 4096), -ENOSPC);         // only the write rule
}

TEST(FaultInjector, CountsAreExactAcrossThreads) {
  FaultInjector f(*ParseFaultPlan("eio:every=3,count=50"));
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 300; ++i) failed += f.OnRead(0, 0, 1, 1) < 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 50);
  EXPECT_EQ(f.Counts()[0].matched, 1200u);
}

}  // namespace
}  // namespace feedrate
