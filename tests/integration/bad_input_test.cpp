// Bad input is refused before it is used (issue 36 item 7): each case exits 2 with one line naming the file, key or
// option and the cause, builds nothing it would not need, and never ends in a success-shaped record.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

struct Refusals : ::testing::Test {
  test::TempDir dir;
  std::string data() const { return dir / "data"; }
  static std::string Shape() {
    return "--param dataset.num_files_train=8 --param dataset.record_length_bytes=20000 "
           "--param dataset.record_length_bytes_stdev=5000 --param reader.batch_size=1 --param train.computation_time=0.001";
  }
  void SetUp() override {
    auto r = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data() + " " + Shape()));
    ASSERT_EQ(r.code, 0) << r.output;
  }
  // Runs `args` and expects exit 2 with every one of `words` in what it printed.
  static void Refused(const std::string& args, const std::vector<std::string>& words, int timeout_s = 60) {
    SCOPED_TRACE(args);
    const auto r = Sh(Feedrate(args), timeout_s);
    EXPECT_EQ(r.code, 2) << r.output;
    for (const auto& w : words) EXPECT_NE(r.output.find(w), std::string::npos) << "'" << w << "' not in: " << r.output;
  }
  std::string Workload(const std::string& name, const std::string& body) const {
    const std::string path = dir / name;
    test::WriteFile(path, body);
    return path;
  }
};

// A 600-byte alias bomb (9.4 GB and a 1.8 GB summary.json before) is refused at once; a key given twice in one
// mapping is refused naming both places (it ran with the first and recorded the second).
TEST_F(Refusals, YamlAliasBombsAndDuplicateKeysAreRefused) {
  const std::string bomb = Workload("bomb.yaml",
      "model: {name: unet3d}\nframework: pytorch\noutput:\n  folder: [&a [l,l,l,l,l,l,l,l,l], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a],"
      " &c [*b,*b,*b,*b,*b,*b,*b,*b,*b], &d [*c,*c,*c,*c,*c,*c,*c,*c,*c], &e [*d,*d,*d,*d,*d,*d,*d,*d,*d],"
      " &f [*e,*e,*e,*e,*e,*e,*e,*e,*e], &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]]\n"
      "dataset: {format: npz, num_files_train: 8, record_length_bytes: 20000}\n");
  Refused("run -w " + bomb + " --data-dir " + data() + " --results-dir " + (dir / "r1"), {bomb, "aliases are expanded"}, 20);
  EXPECT_FALSE(fs::exists(dir / "r1/summary.json"));
  const std::string dup = Workload("dup.yaml",
      "model: {name: unet3d}\nframework: pytorch\n"
      "dataset: {format: npz, num_files_train: 8, record_length_bytes: 20000, record_length_bytes_stdev: 5000}\n"
      "reader: {batch_size: 1,\n         batch_size: 2, read_threads: 1}\ntrain: {epochs: 1, computation_time: 0.001}\n");
  Refused("run -w " + dup + " --data-dir " + data(), {dup, "'batch_size' is given twice", "lines 4 and 5"});
  Refused("run -w unet3d_h100 --data-dir " + data() + " " + Shape() + " --param 'train.computation_time={a: 1, a: 2}'",
          {"'a' is given twice"});
  const std::string section = Workload("section.yaml", "model: {name: unet3d}\nframework: pytorch\ndataset: 5\n");
  Refused("run -w " + section + " --data-dir " + data(), {section, "'dataset'", "must be a mapping"});
  Refused("run -w " + section, {section, "'dataset'", "must be a mapping"});  // (not "--data-dir ... is required")
  Refused("run -w unet3d_h100 --data-dir " + data() + " " + Shape() + " --param 'output.folder=[a, b]'",
          {"key output.folder: expected one value, not a YAML list"});
}

// Counts checked against the folder and the memory before any per-sample state: a trillion files is refused with
// the numbers (it was std::bad_alloc), a hundred million against a folder of 8 is answered from the listing.
TEST_F(Refusals, CountsAreCheckedBeforeAnySampleStateIsBuilt) {
  Refused("run -w unet3d_h100 --data-dir " + data() + " " + Shape() + " --param dataset.num_files_train=1000000000000",
          {"1e+12 files", "GiB per rank", "available"});
  Refused("run -w unet3d_h100 --data-dir " + data() + " " + Shape() + " --param train.epochs=1000000000000",
          {"train.epochs=1000000000000", "per-step record would take", "available"});  // (it was std::bad_alloc)
  const auto r = Sh("/usr/bin/time -f 'peak-rss-kib=%M' " +
                    Feedrate("run -w unet3d_h100 --data-dir " + data() + " " + Shape() + " --param dataset.num_files_train=100000000"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("found 8 .npz files"), std::string::npos) << r.output;
  const size_t at = r.output.find("peak-rss-kib=");
  ASSERT_NE(at, std::string::npos) << r.output;
  // 1.2 GB before the fix (release); a sanitized binary's allocator and shadow add a few hundred MB of their own.
#ifdef FEEDRATE_SANITIZED
  const uint64_t limit_kib = 900'000;
#else
  const uint64_t limit_kib = 400'000;
#endif
  EXPECT_LT(std::stoull(r.output.substr(at + 13)), limit_kib) << "per-sample state built before the listing's answer";
}

// A dataset that disagrees with the configuration: samples far from record_length_bytes (835 TB/s was printed), a
// folder holding two datagens' files (a smaller dataset generated over a bigger one trained on the old files).
TEST_F(Refusals, ADatasetThatDisagreesWithTheWorkloadIsNamed) {
  Refused("run -w unet3d_h100 --data-dir " + data() + " " + Shape() + " --param dataset.record_length_bytes=1e15 --results-dir " +
              (dir / "r"),
          {data(), "average", "dataset.record_length_bytes is 1000000000000000"});
  Refused("datagen -w unet3d_h100 --data-dir " + data() + " " + Shape() + " --param dataset.num_files_train=4",
          {data() + "/train", "8 named *_of_8.npz", "nothing was written"});
  EXPECT_FALSE(fs::exists(data() + "/train/img_0_of_4.npz"));
  fs::copy_file(data() + "/train/img_1_of_8.npz", data() + "/train/img_1_of_9.npz");
  Refused("run -w unet3d_h100 --data-dir " + data() + " " + Shape(), {"files of 2 datagens", "1 named *_of_9.npz"});
  fs::remove(data() + "/train/img_1_of_9.npz");
  const auto subset = Sh(Feedrate("run -w unet3d_h100 --data-dir " + data() + " " + Shape() +
                                  " --param dataset.num_files_train=4 --results-dir " + (dir / "subset")));
  EXPECT_TRUE(subset.code == 0 || subset.code == 3) << subset.output;  // it runs; its AU is not the point
  EXPECT_NE(subset.output.find("holds 8 .npz files; the run reads the first 4"), std::string::npos) << subset.output;
  // Records smaller than the format's own headers (npy's 128 bytes) are what datagen wrote, not other settings.
  for (const char* rules : {"v3.0", "upstream"}) {
    const std::string tiny = " --param dataset.num_files_train=8 --param dataset.record_length_bytes=64"
                             " --param dataset.record_length_bytes_stdev=0 --param reader.batch_size=1"
                             " --param train.epochs=1 --param train.computation_time=0.001 --rules " + std::string(rules);
    ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + (dir / "tiny") + tiny)).code, 0);
    const auto run = Sh(Feedrate("run -w unet3d_h100 --data-dir " + (dir / "tiny") + tiny + " --results-dir " + (dir / ("t" + std::string(rules)))));
    EXPECT_TRUE(run.code == 0 || run.code == 3) << rules << "\n" << run.output;
  }
}

// Every number on the command line through one rule: no text, NaN, infinity, negative or overflow gets in.
TEST_F(Refusals, NumericOptionsAreParsedByOneRule) {
  Refused("datagen -w unet3d_h100 --data-dir " + data() + " --s3-part-size abc", {"--s3-part-size", "cannot read 'abc'"});
  Refused("iobench --path " + (dir / "f") + " --bs abc", {"--bs", "cannot read 'abc'"});
  Refused("iobench --path " + (dir / "f") + " --size 99999999999t", {"--size", "too large"});
  Refused("run -w unet3d_h100 --data-dir " + data() + " --verify nan", {"--verify", "'nan' is not a finite number"});
  Refused("run -w unet3d_h100 --data-dir " + data() + " --io-timeout inf", {"--io-timeout", "'inf' is not a finite number"});
  Refused("run -w unet3d_h100 --data-dir " + data() + " --timeseries-interval 1x", {"--timeseries-interval", "not a number"});
  Refused("checkpoint -w llama3_8b --dir " + (dir / "ck") + " --num-checkpoints-write -3", {"--num-checkpoints-write", "negative"});
  Refused("datasize -w unet3d_h100 --client-memory-gib 1e300 --clients 1 --num-accelerators 1", {"--client-memory-gib", "too large"});
  Refused("iobench --path " + (dir / "f") + " --seed 18446744073709551616", {"--seed", "too large"});
}

// Files that are not what they are given as: inspect refuses a FIFO (it waited for a writer forever), a symlink loop
// is named as one, `report` refuses a summary that lacks what it reads ("0 accelerators, AU 0.00%", exit 0).
TEST_F(Refusals, FilesThatAreNotWhatTheyAreGivenAsAreNamed) {
  const std::string fifo = dir / "fifo.npz";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Refused("inspect " + fifo, {fifo, "not a regular file (a FIFO)"}, 20);
  fs::create_symlink(dir / "loop2", dir / "loop1");
  fs::create_symlink(dir / "loop1", dir / "loop2");
  Refused("run -w unet3d_h100 --data-dir " + (dir / "loop1") + " " + Shape(), {"loop1/train", "symbolic links"});
  fs::create_directories(dir / "empty");
  test::WriteFile(dir / "empty/summary.json", "{}");
  Refused("report " + (dir / "empty") + " -o " + (dir / "rep.html"), {dir / "empty/summary.json", "num_accelerators"});
  EXPECT_FALSE(fs::exists(dir / "rep.html"));
  test::WriteFile(dir / "empty/summary.json", R"({"num_accelerators": 1, "feedrate": {"status": "success", "workload": "x"}})");
  Refused("report " + (dir / "empty") + " -o " + (dir / "rep.html"), {"metric.train_au_mean_percentage"});
}

}  // namespace
}  // namespace feedrate::it
