// mlpstorage's option names on Feedrate's own commands (--model/--accelerator-type, --num-accelerators as the job's
// total, --params, --client-host-memory-in-gb, --num-client-hosts, --max-accelerators, --checkpoint-folder,
// --closed/--open): each means what Feedrate's own option does, and the declared category is held before the run.
#include <gtest/gtest.h>

#include "harness.h"

namespace feedrate::it {
namespace {

const std::string kSmall = "--params dataset.num_files_train=8 dataset.record_length_bytes=20000 "
                           "dataset.record_length_bytes_stdev=5000 reader.batch_size=1 train.computation_time=0.001";

TEST(MlpstorageNames, ModelAndAcceleratorNameTheWorkloadAndTheJobTotalSplitsOverRanks) {
  test::TempDir dir;
  const std::string data = dir / "data", r = dir / "r";
  auto gen = Sh(Feedrate("datagen --model unet3d --accelerator-type h100 --data-dir " + data + " " + kSmall));
  ASSERT_EQ(gen.code, 0) << gen.output;
  // 4 accelerators in the job over 2 ranks: 2 each, as -n 2 would.
  auto run = Sh(MpiFeedrate(2, "run --model unet3d --accelerator-type h100 --num-accelerators 4 --data-dir " + data + " " +
                                   kSmall + " -q --results-dir " + r));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  const auto s = ReadJson(r + "/summary.json");
  EXPECT_EQ(s["num_accelerators"], 4);
  EXPECT_EQ(s["feedrate"]["config"]["dataset"]["num_files_train"], 8);
  // Judged by the edition emulated (--rules v3.0, the default), which has no unet3d on h100: INVALID, saying so.
  EXPECT_EQ(s["feedrate"]["validity"]["rules_edition"], "MLPerf Storage v3.0");
  EXPECT_NE(s["feedrate"]["validity"]["reasons"].dump().find("unet3d_h100 is not in v3.0's training set"),
            std::string::npos);
  auto uneven = Sh(MpiFeedrate(2, "run --model unet3d --accelerator-type h100 --num-accelerators 3 --data-dir " + data +
                                      " " + kSmall + " -q --results-dir " + dir / "r3"));
  EXPECT_EQ(uneven.code, 2) << uneven.output;
  EXPECT_NE(uneven.output.find("--num-accelerators 3 does not split evenly over 2 rank(s)"), std::string::npos) << uneven.output;
  auto both = Sh(Feedrate("run -w unet3d_h100 --model unet3d --data-dir " + data));
  EXPECT_EQ(both.code, 2) << both.output;
  auto alone = Sh(Feedrate("run --accelerator-type h100 --data-dir " + data));
  EXPECT_EQ(alone.code, 2) << alone.output;
  EXPECT_NE(alone.output.find("needs --model"), std::string::npos) << alone.output;
}

TEST(MlpstorageNames, ClosedRefusesARunTheRulesJudgeLowerBeforeItStarts) {
  test::TempDir dir;
  const std::string data = dir / "data";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + " " + kSmall)).code, 0);
  // 8 files against 1 GiB of client memory: the dataset-size rule makes it INVALID, and the overrides too.
  auto closed = Sh(Feedrate("run -w unet3d_h100 --rules v2.0 --data-dir " + data + " " + kSmall +
                            " --client-host-memory-in-gb 1 --closed -q --results-dir " + dir / "c"));
  EXPECT_EQ(closed.code, 2) << closed.output;
  EXPECT_NE(closed.output.find("--closed: the run is INVALID by the MLPerf Storage v2.0 rules"), std::string::npos) << closed.output;
  EXPECT_NE(closed.output.find("dataset.num_files_train=8 is below"), std::string::npos) << closed.output;
  const auto refused = ReadJson(dir / "c/summary.json");
  EXPECT_EQ(refused["feedrate"]["status"], "failed");
  EXPECT_FALSE(refused.contains("metric"));  // no step ran
  auto anyway = Sh(Feedrate("run -w unet3d_h100 --data-dir " + data + " " + kSmall +
                            " --client-host-memory-in-gb 1 --closed --allow-invalid-params -q --results-dir " + dir / "a"));
  EXPECT_TRUE(anyway.code == 0 || anyway.code == 3) << anyway.output;
  const auto ran = ReadJson(dir / "a/summary.json");
  EXPECT_EQ(ran["feedrate"]["validity"]["category"], "INVALID");
  EXPECT_EQ(ran["feedrate"]["validity"]["client_memory_GB_per_host"], 1.0);
  EXPECT_EQ(ran["feedrate"]["validity"]["client_memory_from"], "--client-host-memory-in-gb");
}

TEST(MlpstorageNames, DatasizeAndCheckpointTakeMlpstoragesSpellings) {
  auto ours = Sh(Feedrate("datasize -w unet3d_b200 --client-memory-gib 512 --clients 2 --num-accelerators 8 --json"));
  auto theirs = Sh(Feedrate("datasize --model unet3d --accelerator-type b200 --client-host-memory-in-gb 512 "
                            "--num-client-hosts 2 --max-accelerators 8 --json"));
  ASSERT_EQ(ours.code, 0) << ours.output;
  ASSERT_EQ(theirs.code, 0) << theirs.output;
  EXPECT_EQ(nlohmann::json::parse(ours.output), nlohmann::json::parse(theirs.output));
  test::TempDir dir("/var/tmp");
  auto ck = Sh(MpiFeedrate(2, "checkpoint --model llama3-8b --checkpoint-folder " + dir / "ck" +
                                  " --scale 0.0005 --time-between 0 -q --num-checkpoints-write 1 --num-checkpoints-read 1"
                                  " --results-dir " + dir / "r"));
  ASSERT_EQ(ck.code, 0) << ck.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "ck/global_epoch1_step1"));
  EXPECT_NE(ck.output.find("rules (MLPerf Storage v3.0): INVALID"), std::string::npos) << ck.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["model"]["mlpstorage_name"], "llama3-8b");
}

}  // namespace
}  // namespace feedrate::it
