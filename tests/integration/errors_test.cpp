// Bad input: each case ends with one clear line naming the file or key and the cause, exit code 2, and no
// summary.json that claims success. A file truncated mid-run stops every rank with its path and offset.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness.h"

namespace feedrate::it {
namespace {

struct ErrorCase {
  test::TempDir dir;
  std::string data() const { return dir / "data"; }
  std::string results() const { return dir / "results"; }
  void Generate(int files) {
    auto r = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data() + " " + SmallDatasetParams(files, 20000)));
    ASSERT_EQ(r.code, 0) << r.output;
  }
  CmdResult Run(const std::string& extra, int ranks = 1, int files = 8) const {
    std::string args = "run -w unet3d_h100 --data-dir " + data() + " " + SmallDatasetParams(files, 20000) +
                       " --param reader.batch_size=1 --param train.computation_time=0.001 --results-dir " + results() +
                       " " + extra;
    return Sh(ranks > 1 ? MpiFeedrate(ranks, args) : Feedrate(args));
  }
  // Exit 2, an error line that contains every `needle`, and no success-shaped summary.
  void ExpectCleanFailure(const CmdResult& r, std::initializer_list<std::string> needles) const {
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("feedrate: error: "), std::string::npos) << r.output;
    for (const auto& n : needles) EXPECT_NE(r.output.find(n), std::string::npos) << "missing '" << n << "' in\n" << r.output;
    auto s = ReadJson(results() + "/summary.json");
    if (!s.is_null()) {
      EXPECT_EQ(s["feedrate"]["status"], "failed") << s.dump(2);
      EXPECT_FALSE(s.contains("metric"));
    }
  }
};

TEST(BadInput, MissingDataDirectory) {
  ErrorCase c;
  c.ExpectCleanFailure(c.Run(""), {c.data() + "/train", "not found"});
}

TEST(BadInput, FewerFilesThanTheWorkloadNeeds) {
  ErrorCase c;
  c.Generate(4);
  c.ExpectCleanFailure(c.Run("", 1, 8), {"found 4 .npz files", "num_files_train=8"});
}

// Upstream DLIO's np.load parses each npz (Feedrate's set-up indexes it, and names what is wrong before training);
// v3.0's DLIO reads the bytes whatever they are, as Feedrate does under --rules v3.0.
TEST(BadInput, TruncatedNpz) {
  ErrorCase c;
  c.Generate(8);
  std::string victim = c.data() + "/train/img_3_of_8.npz";
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) / 2);
  c.ExpectCleanFailure(c.Run("--rules upstream"), {victim});
}

TEST(BadInput, NotAZipFile) {
  ErrorCase c;
  c.Generate(8);
  std::string victim = c.data() + "/train/img_5_of_8.npz";
  test::WriteFile(victim, "plain text pretending to be an npz archive, long enough to look for a directory");
  c.ExpectCleanFailure(c.Run("--rules upstream", 2), {victim, "not a valid zip"});
}

TEST(BadInput, NpzWithoutX) {
  ErrorCase c;
  c.Generate(8);
  std::string victim = c.data() + "/train/img_1_of_8.npz";
  if (!HaveNumpy()) GTEST_SKIP() << "python3-numpy not installed";
  std::string py = std::string(FEEDRATE_PYTHON3) + " -c \"import numpy as np; np.savez(\\\"" + victim +
                   "\\\", y=np.zeros(1, dtype=np.int64))\"";
  ASSERT_EQ(Sh(py).code, 0);
  c.ExpectCleanFailure(c.Run("--rules upstream"), {victim, "no 'x' array"});
}

TEST(BadInput, UnknownKeyInWorkloadFile) {
  ErrorCase c;
  std::string wl = c.dir / "mine.yaml";
  test::WriteFile(wl, "dataset:\n  format: npz\n  num_file_train: 8\nreader:\n  batch_size: 1\n");
  auto r = Sh(Feedrate("run -w " + wl + " --data-dir " + c.data()));
  c.ExpectCleanFailure(r, {wl, "dataset.num_file_train", "did you mean 'dataset.num_files_train'"});
}

TEST(BadInput, NegativeBatchSize) {
  ErrorCase c;
  c.Generate(8);
  c.ExpectCleanFailure(c.Run("--param reader.batch_size=-4"), {"reader.batch_size", "-4"});
}

TEST(BadInput, ZeroAccelerators) {
  ErrorCase c;
  c.Generate(8);
  c.ExpectCleanFailure(c.Run("--accelerators 0"), {"--accelerators"});
}

TEST(BadInput, BuffersLargerThanMemoryAreRefused) {
  ErrorCase c;
  c.Generate(8);
  c.ExpectCleanFailure(c.Run("--param reader.transfer_size=1099511627776"), {"more than half of", "reader.transfer_size"});
}

TEST(BadInput, FileSystemRefusingODirectIsNamed) {
  ErrorCase c;
  c.Generate(8);
  auto r = Sh("FEEDRATE_TEST_REFUSE_ODIRECT=1 " + Feedrate("run -w unet3d_h100 --data-dir " + c.data() + " " +
                                                           SmallDatasetParams(8, 20000) +
                                                           " --param reader.batch_size=1 --odirect --results-dir " +
                                                           c.results()));
  c.ExpectCleanFailure(r, {"refuses O_DIRECT", c.data() + "/train/"});
}

// (Upstream's readers know each sample's extent from the file's header; v3.0's DLIO reads whatever the file holds at
// each sample's open, as its DLIO does, and names only a file that shrinks under its read.)
TEST(BadInput, FileTruncatedMidRunStopsEveryRank) {
  ErrorCase c;
  c.Generate(8);
  std::string victim = c.data() + "/train/img_6_of_8.npz";
  // The file is cut once the first epoch has been reported (--json-events), so training is under way on every
  // machine, however slow (a fixed delay raced the setup under ThreadSanitizer).
  test::WriteFile(c.dir / "cut.sh",
                  "set -o pipefail\n" +
                      MpiFeedrate(2, "run -w unet3d_h100 --data-dir " + c.data() + " " + SmallDatasetParams(8, 20000) +
                                         " --param reader.batch_size=1 --param train.epochs=200 --rules upstream"
                                         " --param train.computation_time=0.02 --json-events --results-dir " +
                                         c.results()) +
                      " | while IFS= read -r line; do\n"
                      "  printf '%s\\n' \"$line\"\n"
                      "  case \"$line\" in *'\"event\":\"epoch\"'*) [ -n \"$cut\" ] || { truncate -s 4000 " + victim +
                      "; cut=1; } ;; esac\n"
                      "done\n");
  auto r = Sh("bash " + c.dir / "cut.sh", 120);
  c.ExpectCleanFailure(r, {victim, "truncated", "offset"});
}

}  // namespace
}  // namespace feedrate::it

namespace feedrate::it {
namespace {

// --hosts / --hostfile: a bad host list or hostfile is refused before mpirun starts, naming what is wrong.
TEST(BadInput, HostListsAndHostfiles) {
  ErrorCase c;
  c.Generate(8);
  c.ExpectCleanFailure(c.Run("--hosts node1:0"), {"--hosts node1:0", "slot count '0' is not a positive integer"});
  c.ExpectCleanFailure(c.Run("--hosts :2"), {"empty host name"});
  c.ExpectCleanFailure(c.Run("--hosts localhost:100000"), {"slot count '100000' is more than the 4096 ranks a host runs"});
  c.ExpectCleanFailure(c.Run("--num-accelerators 10000"), {"--num-accelerators 10000 gives 10000 accelerators per rank", "4096"});
  c.ExpectCleanFailure(c.Run("--hostfile " + (c.dir / "none")), {"--hostfile " + (c.dir / "none"), "No such file"});
  {
    std::ofstream hf(c.dir / "hostfile");
    hf << "node1 slots=2\nnode2 slots=2 cpus=4\n";
  }
  c.ExpectCleanFailure(c.Run("--hostfile " + (c.dir / "hostfile")),
                       {c.dir / "hostfile" + ":2", "unknown hostfile field 'cpus=4'"});
  // Inside an MPI job the ranks are placed already.
  c.ExpectCleanFailure(c.Run("--hosts node1:1", 2), {"already an MPI rank"});
  auto both = c.Run("--hosts node1:1 --hostfile " + (c.dir / "hostfile"));
  EXPECT_EQ(both.code, 2) << both.output;
  EXPECT_NE(both.output.find("excludes"), std::string::npos) << both.output;
}

}  // namespace
}  // namespace feedrate::it
