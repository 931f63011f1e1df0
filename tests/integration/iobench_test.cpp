// `feedrate iobench`: a tiny grid with --verify end to end, under mpirun, and its error cases.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"

namespace feedrate::it {
namespace {

TEST(Iobench, WriteThenVerifiedReadGrid) {
  test::TempDir dir;
  const std::string file = dir / "bench.dat";
  auto w = Sh(Feedrate("iobench --path " + file + " --rw write,randwrite --bs 4k,64k --qd 1,4 --threads 1,2"
                       " --size 8m --runtime 0.2 --verify --results-dir " + dir / "w"));
  ASSERT_EQ(w.code, 0) << w.output;
  // randwrite leaves some blocks of the sequential pass; rewrite the whole file sequentially before verifying.
  ASSERT_EQ(Sh(Feedrate("iobench --path " + file + " --rw write --bs 1m --qd 2 --threads 1 --size 8m --runtime 0.5"
                        " --verify --results-dir " + dir / "w2")).code, 0);
  auto r = Sh(Feedrate("iobench --path " + file + " --rw read,randread --bs 4k,64k --qd 1,4 --threads 1,2"
                       " --runtime 0.2 --verify --results-dir " + dir / "r"));
  ASSERT_EQ(r.code, 0) << r.output;
  auto j = ReadJson(dir / "r/iobench.json");
  ASSERT_EQ(j["cells"].size(), 16u);
  for (const auto& c : j["cells"]) {
    for (const char* k : {"rw", "bs", "qd", "threads", "mib_per_s", "iops", "lat_us", "cpu_s_per_gib"}) {
      EXPECT_TRUE(c.contains(k)) << k;
    }
    EXPECT_GT(c["iops"].get<double>(), 0) << c.dump();
    EXPECT_LE(c["lat_us"]["p50"].get<double>(), c["lat_us"]["p99"].get<double>());
    EXPECT_LE(c["lat_us"]["p99"].get<double>(), c["lat_us"]["max"].get<double>());
  }
  std::string csv = test::ReadFile(dir / "r/iobench.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 17);
}

TEST(Iobench, VerifyCatchesTheWrongPattern) {
  test::TempDir dir;
  const std::string file = dir / "bench.dat";
  ASSERT_EQ(Sh(Feedrate("iobench --path " + file + " --rw write --bs 64k --qd 1 --threads 1 --size 1m --runtime 0.3"
                        " --verify --seed 1 --results-dir " + dir / "w")).code, 0);
  auto r = Sh(Feedrate("iobench --path " + file + " --rw read --bs 64k --qd 1 --threads 1 --runtime 0.2 --verify"
                       " --seed 2 --results-dir " + dir / "r"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("verify failed at offset"), std::string::npos) << r.output;
}

TEST(Iobench, ErrorsNameTheCause) {
  test::TempDir dir;
  const std::string file = dir / "small.dat";
  test::WriteFile(file, std::string(4096, 'x'));
  auto small = Sh(Feedrate("iobench --path " + file + " --rw read --bs 4k --qd 1 --size 1m --runtime 0.1 --results-dir " +
                           dir / "r"));
  EXPECT_EQ(small.code, 2);
  EXPECT_NE(small.output.find("smaller than --size"), std::string::npos) << small.output;
  auto missing = Sh(Feedrate("iobench --path " + dir / "nope.dat" + " --rw read --runtime 0.1 --results-dir " + dir / "r"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("nope.dat"), std::string::npos) << missing.output;
  test::WriteFile(dir / "blocker", "x");
  auto unwritable = Sh(Feedrate("iobench --path " + file + " --rw read --bs 4k --qd 1 --runtime 0.1 --results-dir " +
                                dir / "blocker/sub"));
  EXPECT_EQ(unwritable.code, 2);
  EXPECT_NE(unwritable.output.find("blocker"), std::string::npos) << unwritable.output;
  auto posix_qd = Sh(Feedrate("iobench --path " + file + " --rw read --bs 4k --qd 8 --engine posix --runtime 0.1"
                              " --results-dir " + dir / "r"));
  EXPECT_EQ(posix_qd.code, 2);
  EXPECT_NE(posix_qd.output.find("one I/O per thread"), std::string::npos) << posix_qd.output;
}

TEST(Iobench, MpiRanksAggregate) {
  test::TempDir dir;
  auto w = Sh(MpiFeedrate(2, "iobench --path " + dir.path() + " --rw randrw --rwmixread 70 --bs 16k --qd 2 --threads 1"
                                 " --size 4m --runtime 0.3 --results-dir " + dir / "m"));
  ASSERT_EQ(w.code, 0) << w.output;
  auto j = ReadJson(dir / "m/iobench.json");
  EXPECT_EQ(j["ranks"], 2);
  ASSERT_EQ(j["cells"].size(), 1u);
  const auto& c = j["cells"][0];
  EXPECT_GT(c["read_mib_per_s"].get<double>(), c["write_mib_per_s"].get<double>());  // 70% reads
  EXPECT_GT(c["write_mib_per_s"].get<double>(), 0);
  EXPECT_TRUE(std::filesystem::exists(dir / "feedrate-iobench.0.dat"));
  EXPECT_TRUE(std::filesystem::exists(dir / "feedrate-iobench.1.dat"));
}

}  // namespace
}  // namespace feedrate::it
