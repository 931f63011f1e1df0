// Rule checks (mlpstorage v2.0): overrides allowed in CLOSED / OPEN / neither, the dataset-size rule, O_DIRECT
// only for unet3d, equal accelerators per host, Feedrate's own departures; and a sweep's validity.
#include <gtest/gtest.h>

#include <cmath>

#include "emulator/results/validity.h"
#include "emulator/sweep/sweep.h"

namespace feedrate {
namespace {

RunFacts OneHost(uint64_t accelerators, double mem_gib) {
  return {accelerators, {accelerators}, mem_gib * 1073741824.0};
}

TEST(Validity, DatasetMinimumIsMlpstoragesFormula) {
  // Reference worked example: 2 x 128 GiB for unet3d is 9375.06 files from memory (mlpstorage's datasize prints
  // 9375, its submission checker needs 9376); 8 H100s 500 x 7 x 8 = 28000.
  auto c = LoadWorkload("unet3d_h100", {});
  auto m = TrainingDatasetMinimum(c, 2 * 128 * 1073741824.0, 8);
  EXPECT_EQ(m.by_memory, 9376u);
  EXPECT_EQ(m.by_steps, 28000u);
  EXPECT_EQ(m.files, 28000u);
  EXPECT_EQ(m.files_rounded_down, 28000u);
  m = TrainingDatasetMinimum(c, 2 * 1024 * 1073741824.0, 8);  // 75000.47 by memory
  EXPECT_EQ(m.files, 75001u);
  EXPECT_EQ(m.files_rounded_down, 75000u);
}

TEST(Validity, ParquetWithoutRecordLengthTakesMlpstoragesColumnBytes) {
  // mlpstorage v3.0 rules/utils.py: float64/int64 8 bytes, uint8/bool 1, any other dtype 4 (float16 and int8 too).
  auto c = LoadWorkload("dlrm_b200", {});
  ASSERT_TRUE(c.record_length_given);
  const double mem = 64 * 1073741824.0;
  const auto with_length = TrainingDatasetMinimum(c, mem, 1);
  c.record_length_given = false;
  c.parquet_columns = {{"a", "float64", 1, true}, {"b", "float16", 3, true}, {"c", "bool", 2, true}, {"d", "int8", 1, true}};
  c.num_samples_per_file = 1000;
  const auto by_columns = TrainingDatasetMinimum(c, mem, 1);  // 8 + 12 + 2 + 4 = 26 bytes a row
  EXPECT_EQ(by_columns.by_memory, static_cast<uint64_t>(std::ceil(5 * mem / (1000 * 26.0))));
  EXPECT_NE(with_length.by_memory, by_columns.by_memory);
  EXPECT_EQ(by_columns.record_length, 26.0);  // what `feedrate datasize` multiplies by for the dataset's bytes
  EXPECT_EQ(with_length.record_length, 761.0);
}

TEST(Validity, ClosedOpenAndInvalidOverrides) {
  // resnet50 (v2.0's, judged by --rules v2.0): no checkpoint or O_DIRECT rules involved. 1 GiB of client memory keeps
  // the size rule small.
  auto closed =
      LoadWorkload("resnet50_h100", {"feedrate.rules=v2.0", "dataset.num_files_train=100000", "reader.read_threads=8",
                                     "feedrate.queue_depth=8", "dataset.data_folder=/x"});
  auto v = CheckTrainingRun(closed, OneHost(1, 1));
  EXPECT_EQ(v.category, "CLOSED") << nlohmann::json(v.reasons).dump();
  EXPECT_TRUE(v.reasons.empty());
  // An explicit engine reads coalesced extents instead of TensorFlow's replayed stream: the coalesced case, OPEN.
  auto engine =
      LoadWorkload("resnet50_h100", {"feedrate.rules=v2.0", "dataset.num_files_train=100000", "feedrate.engine=posix"});
  v = CheckTrainingRun(engine, OneHost(1, 1));
  EXPECT_EQ(v.category, "OPEN");
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_NE(v.reasons[0].find("feedrate.engine=posix reads coalesced extents"), std::string::npos) << v.reasons[0];

  auto open = LoadWorkload("resnet50_h100", {"feedrate.rules=v2.0", "dataset.num_files_train=100000",
                                             "++workload.dataset.num_samples_per_file=2", "feedrate.order=shuffled"});
  v = CheckTrainingRun(open, OneHost(1, 1));
  EXPECT_EQ(v.category, "OPEN");
  ASSERT_EQ(v.reasons.size(), 2u);
  EXPECT_NE(v.reasons[0].find("dataset.num_samples_per_file"), std::string::npos) << v.reasons[0];
  EXPECT_NE(v.reasons[1].find("feedrate.order"), std::string::npos) << v.reasons[1];

  // feedrate.decode on images makes what DLIO's PIL reader makes (CLOSED); on Parquet it follows an earlier reader.
  auto decode = LoadWorkload("retinanet_b200", {"dataset.num_files_train=1000000", "feedrate.decode=true"});
  v = CheckTrainingRun(decode, OneHost(1, 1));
  EXPECT_EQ(v.category, "CLOSED") << nlohmann::json(v.reasons).dump();
  auto parquet = LoadWorkload("resnet50_h100", {"feedrate.rules=v2.0", "dataset.num_files_train=100000",
                                                "++workload.dataset.format=parquet", "feedrate.decode=true"});
  v = CheckTrainingRun(parquet, OneHost(1, 1));
  EXPECT_EQ(v.category, "OPEN");
  ASSERT_EQ(v.reasons.size(), 2u) << nlohmann::json(v.reasons).dump();
  EXPECT_NE(v.reasons[1].find("feedrate.decode"), std::string::npos) << v.reasons[1];

  auto invalid = LoadWorkload("resnet50_h100",
                              {"feedrate.rules=v2.0", "dataset.num_files_train=100000", "train.computation_time=0.01"});
  v = CheckTrainingRun(invalid, OneHost(1, 1));
  EXPECT_EQ(v.category, "INVALID");
  EXPECT_NE(v.reasons[0].find("train.computation_time"), std::string::npos) << v.reasons[0];
}

TEST(Validity, SizeRuleODirectCheckpointAndHosts) {
  auto small = LoadWorkload("resnet50_h100", {"feedrate.rules=v2.0", "dataset.num_files_train=10"});
  auto v = CheckTrainingRun(small, OneHost(2, 64));
  EXPECT_EQ(v.category, "INVALID");
  EXPECT_NE(v.reasons[0].find("dataset.num_files_train=10 is below"), std::string::npos) << v.reasons[0];

  auto odirect =
      LoadWorkload("resnet50_h100", {"feedrate.rules=v2.0", "dataset.num_files_train=100000", "reader.odirect=true"});
  v = CheckTrainingRun(odirect, OneHost(1, 1));
  EXPECT_EQ(v.category, "INVALID");
  EXPECT_NE(v.reasons.back().find("unet3d only"), std::string::npos);

  // unet3d with O_DIRECT is allowed, but its training checkpoints are not emulated yet: OPEN, saying so.
  auto unet =
      LoadWorkload("unet3d_h100", {"feedrate.rules=v2.0", "dataset.num_files_train=100000", "reader.odirect=true"});
  v = CheckTrainingRun(unet, OneHost(1, 1));
  EXPECT_EQ(v.category, "OPEN");
  EXPECT_NE(v.reasons.back().find("does not write checkpoints"), std::string::npos);
  auto no_ckpt = LoadWorkload("unet3d_h100",
                              {"feedrate.rules=v2.0", "dataset.num_files_train=100000", "workflow.checkpoint=False"});
  EXPECT_EQ(CheckTrainingRun(no_ckpt, OneHost(1, 1)).category, "INVALID");

  auto ok = LoadWorkload("resnet50_h100", {"feedrate.rules=v2.0", "dataset.num_files_train=100000"});
  EXPECT_EQ(CheckTrainingRun(ok, {6, {2, 4}, 2 * 1073741824.0}).category, "INVALID");  // unequal per host
  EXPECT_EQ(CheckTrainingRun(ok, {6, {3, 3}, 2 * 1073741824.0}).category, "CLOSED");
}

TEST(Validity, SweepTakesTheAnswersRunsAndNeedsFiveRepeats) {
  SweepResult r;
  SweepRun closed;
  closed.exit_code = 0;
  closed.validity = "CLOSED";
  SweepRun open = closed;
  open.validity = "OPEN";
  open.validity_reasons = {"OPEN: override of feedrate.order"};
  SweepRun fail;
  fail.exit_code = 3;
  fail.validity = "INVALID";  // a failing point does not decide the answer's validity
  r.points = {{2, {closed, closed, closed, closed, closed}, true}, {4, std::vector<SweepRun>(5, open), true}, {8, {fail}, false}};
  r.accelerators_supported = 4;
  auto v = SweepValidity(r, 5);
  EXPECT_EQ(v["category"], "OPEN");
  EXPECT_EQ(v["reasons"].size(), 1u);
  auto quick = SweepValidity(r, 1);
  EXPECT_EQ(quick["category"], "INVALID");
  EXPECT_NE(quick["reasons"].back().get<std::string>().find("1 run(s) per point"), std::string::npos);
}

TEST(Validity, EachTrainingWorkloadIsJudgedByTheEditionThatHasIt) {
  EXPECT_EQ(TrainingRulesEdition(LoadWorkload("unet3d_b200", {})), "v3.0");
  EXPECT_EQ(TrainingRulesEdition(LoadWorkload("retinanet_mi355", {})), "v3.0");
  EXPECT_EQ(TrainingRulesEdition(LoadWorkload("unet3d_h100", {})), "v2.0");
  EXPECT_EQ(TrainingRulesEdition(LoadWorkload("resnet50_a100", {})), "v2.0");
  EXPECT_EQ(TrainingRulesEdition(LoadWorkload("retinanet_h100", {})), "");  // v3.0's model on v2.0's accelerator
  EXPECT_EQ(TrainingRulesEdition(LoadWorkload("flux_b200", {})), "");       // in v3.0's configs, not its rules' set
  auto retina = LoadWorkload("retinanet_b200", {"dataset.num_files_train=10000000"});
  auto v = CheckTrainingRun(retina, OneHost(1, 1));
  EXPECT_EQ(v.edition, "v3.0");
  EXPECT_EQ(v.category, "CLOSED") << nlohmann::json(v.reasons).dump();
  EXPECT_EQ(retina.au, 0.85);  // retinanet's bar in v3.0
  EXPECT_EQ(v.ToJson()["rules_edition"], "MLPerf Storage v3.0");
  auto flux = LoadWorkload("flux_b200", {"dataset.num_files_train=10000000"});
  v = CheckTrainingRun(flux, OneHost(1, 1));
  EXPECT_EQ(v.category, "INVALID");
  EXPECT_NE(v.reasons.front().find("in no edition's training set"), std::string::npos) << v.reasons.front();
  EXPECT_EQ(TrainingRulesEdition(LoadWorkload("unet3d_b200", {})), "v3.0");
}

// A run is judged by the edition whose DLIO it emulates (--rules, default v3.0): a v2.0 workload under v3.0 is
// INVALID, saying --rules v2.0 judges it by v2.0's rules (and where v3.0 offers it as what-if only); a v3.0 workload
// under v2.0 likewise. --rules upstream (no edition's DLIO) is OPEN, judged by the edition that has the workload.
TEST(Validity, ARunIsJudgedByTheEditionItsRulesName) {
  const std::string many = "dataset.num_files_train=100000";
  auto v = CheckTrainingRun(LoadWorkload("resnet50_h100", {many}), OneHost(1, 1));
  EXPECT_EQ(v.edition, "v3.0");
  EXPECT_EQ(v.category, "INVALID");
  ASSERT_EQ(v.reasons.size(), 1u) << nlohmann::json(v.reasons).dump();
  EXPECT_NE(v.reasons[0].find("resnet50_h100 is not in v3.0's training set (v3.0 offers it as what-if only"),
            std::string::npos)
      << v.reasons[0];
  EXPECT_NE(v.reasons[0].find("--rules v2.0"), std::string::npos) << v.reasons[0];
  v = CheckTrainingRun(LoadWorkload("unet3d_h100", {many}), OneHost(1, 1));  // not even what-if in v3.0
  EXPECT_EQ(v.reasons[0].find("what-if"), std::string::npos) << v.reasons[0];
  v = CheckTrainingRun(LoadWorkload("resnet50_h100", {"feedrate.rules=v2.0", many}), OneHost(1, 1));
  EXPECT_EQ(v.edition, "v2.0");
  EXPECT_EQ(v.category, "CLOSED") << nlohmann::json(v.reasons).dump();  // --rules is not an override the rules see
  v = CheckTrainingRun(LoadWorkload("retinanet_b200", {"feedrate.rules=v2.0", "dataset.num_files_train=10000000"}),
                       OneHost(1, 1));
  EXPECT_EQ(v.category, "INVALID");
  EXPECT_NE(v.reasons[0].find("retinanet_b200 is not in v2.0's training set; v3.0 had it: --rules v3.0"),
            std::string::npos)
      << v.reasons[0];
  v = CheckTrainingRun(LoadWorkload("resnet50_h100", {"feedrate.rules=upstream", many}), OneHost(1, 1));
  EXPECT_EQ(v.edition, "v2.0");
  EXPECT_EQ(v.category, "OPEN");
  ASSERT_EQ(v.reasons.size(), 1u) << nlohmann::json(v.reasons).dump();
  EXPECT_NE(v.reasons[0].find("--rules upstream emulates upstream DLIO"), std::string::npos) << v.reasons[0];
  v = CheckTrainingRun(LoadWorkload("dlrm_b200", {"dataset.num_files_train=100000000"}), OneHost(1, 1));
  EXPECT_EQ(v.category, "INVALID");
  EXPECT_NE(v.reasons[0].find("in no edition's training set"), std::string::npos) << v.reasons[0];
  EXPECT_NE(v.reasons[0].find("what-if only"), std::string::npos) << v.reasons[0];
}

CheckpointFacts ClosedCheckpoint(uint64_t ranks) {
  CheckpointFacts f;
  f.ranks = ranks;
  f.num_write = f.num_read = 10;
  f.max_host_bytes_written = 1000 * 1073741824.0;  // well over 3x memory: no flush needed
  f.min_host_memory_bytes = 64 * 1073741824.0;
  return f;
}

TEST(Validity, CheckpointRanksSubsetCountsAndTheCacheRule) {
  const auto c8 = LoadWorkload("llama3_8b", {}), c70 = LoadWorkload("llama3_70b", {});
  EXPECT_EQ(MlpstorageCheckpointModel(c8), "llama3-8b");
  EXPECT_EQ(MlpstorageCheckpointModel(LoadWorkload("llama3_1t", {})), "llama3-1t");
  auto v = CheckCheckpointRun(c8, ClosedCheckpoint(8));
  EXPECT_EQ(v.category, "CLOSED") << nlohmann::json(v.reasons).dump();
  EXPECT_EQ(v.edition, "v3.0");
  EXPECT_EQ(CheckCheckpointRun(c70, ClosedCheckpoint(64)).category, "CLOSED");
  // 70b at 8 ranks: CLOSED as a subset only; the subset is refused for 8b and at any other count (4.3.5).
  EXPECT_EQ(CheckCheckpointRun(c70, ClosedCheckpoint(8)).category, "OPEN");
  auto subset = ClosedCheckpoint(8);
  subset.mode = "subset";
  EXPECT_EQ(CheckCheckpointRun(c70, subset).category, "CLOSED");
  EXPECT_EQ(CheckCheckpointRun(c8, subset).category, "INVALID");
  subset.ranks = 16;
  EXPECT_EQ(CheckCheckpointRun(c70, subset).category, "INVALID");
  EXPECT_EQ(CheckCheckpointRun(c70, ClosedCheckpoint(16)).category, "OPEN");  // 4.6.4: OPEN may scale
  // 10 and 10, or one phase of a split run; anything else is OPEN.
  auto split = ClosedCheckpoint(8);
  split.num_read = 0;
  EXPECT_EQ(CheckCheckpointRun(c8, split).category, "CLOSED");
  split.num_write = 2;
  EXPECT_EQ(CheckCheckpointRun(c8, split).category, "OPEN");
  // Checkpoints under 3x a client's memory, both phases in one invocation: the rule wants two (4.7.1).
  auto cached = ClosedCheckpoint(8);
  cached.max_host_bytes_written = 100 * 1073741824.0;
  v = CheckCheckpointRun(c8, cached);
  EXPECT_EQ(v.category, "OPEN");
  EXPECT_NE(v.reasons.front().find("4.7.1"), std::string::npos) << v.reasons.front();
  // fsync off, --scale and --inject are INVALID; a changed model key is OPEN.
  auto nofsync = ClosedCheckpoint(8);
  nofsync.fsync = false;
  EXPECT_EQ(CheckCheckpointRun(c8, nofsync).category, "INVALID");
  auto scaled = ClosedCheckpoint(8);
  scaled.scale = 0.01;
  EXPECT_EQ(CheckCheckpointRun(c8, scaled).category, "INVALID");
  v = CheckCheckpointRun(LoadWorkload("llama3_8b", {"model.num_layers=2"}), ClosedCheckpoint(8));
  EXPECT_EQ(v.category, "OPEN");
  EXPECT_NE(v.reasons.front().find("model.num_layers"), std::string::npos) << v.reasons.front();
  EXPECT_EQ(CheckCheckpointRun(LoadWorkload("unet3d_h100", {}), ClosedCheckpoint(8)).category, "INVALID");
}

}  // namespace
}  // namespace feedrate
