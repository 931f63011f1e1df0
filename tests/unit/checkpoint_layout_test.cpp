// DLIO v2.0's checkpoint layout: parameter counts, per-rank files and sizes for the four llama3 workloads at their
// CLOSED world sizes (against the MLPerf Storage v2.0 rules table) and hand-checked small worlds.
#include <gtest/gtest.h>

#include "emulator/checkpoint/checkpoint_layout.h"
#include "loader/util/units.h"

namespace feedrate {
namespace {


LlmModel Load(const std::string& name, std::vector<std::string> overrides = {}) {
  auto m = LlmModelFromConfig(LoadWorkload(name, overrides));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

TEST(CheckpointLayout, ParameterCounts) {
  EXPECT_EQ(NumParameters(Load("llama3_8b")), 8030261248u);    // Llama 3 8B: 8.03 B
  EXPECT_EQ(NumParameters(Load("llama3_70b")), 69882617856u);  // with DLIO's 128 heads (64-wide KV)
}

// The MLPerf Storage v2.0 rules' checkpoint sizes, recomputed with DLIO's formulas (reference spec 2.1): model /
// optimizer / total GiB and the largest rank's GiB, at the CLOSED world sizes.
TEST(CheckpointLayout, ClosedSizesMatchTheRules) {
  struct Row {
    const char* name;
    uint64_t world;
    double model, optimizer, total, per_rank_max;
  };
  for (const Row& r : {Row{"llama3_8b", 8, 15.0, 89.7, 104.7, 13.09}, Row{"llama3_70b", 64, 130.2, 781.0, 911.2, 14.24},
                       Row{"llama3_405b", 512, 756.0, 4536.2, 5292.2, 12.32}, Row{"llama3_1t", 1024, 2203.7, 13222.9, 15426.6, 17.97}}) {
    const CheckpointTotals t = CheckpointTotalsFor(Load(r.name), r.world);
    EXPECT_NEAR(static_cast<double>(t.model_bytes) / kGiB, r.model, 0.1) << r.name;
    EXPECT_NEAR(static_cast<double>(t.optimizer_bytes) / kGiB, r.optimizer, 0.1) << r.name;
    EXPECT_NEAR(static_cast<double>(t.bytes()) / kGiB, r.total, 0.1) << r.name;
    EXPECT_NEAR(static_cast<double>(t.largest_rank_bytes) / kGiB, r.per_rank_max, 0.01) << r.name;
  }
}

TEST(CheckpointLayout, ZeroThreeFilesPerRank) {
  const LlmModel m = Load("llama3_8b");
  const RankLayout r = CheckpointLayoutForRank(m, 8, 5);
  EXPECT_EQ(r.dp_rank, 5u);
  EXPECT_EQ(r.mp_rank, 0u);
  EXPECT_EQ(r.first_layer, 0u);
  EXPECT_EQ(r.last_layer, 34u);  // one stage: embedding, 32 layers, lm_head, final norm
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].name, "zero_pp_rank_5_mp_rank_0_model_states.pt");
  EXPECT_EQ(r.files[1].name, "zero_pp_rank_5_mp_rank_0_optim_states.pt");
  // Hand-checked: params / 8 = 1,003,782,656; optimizer = (3 x that + 15 x 4096) x 4 bytes.
  EXPECT_EQ(r.files[1].bytes, (3ull * 1003782656 + 15 * 4096) * 4);
  // Model: each tensor / 8 x 2 bytes: 2 x (4096 x 128256 / 8) + 32 x (4096/8 + 4096 x 6144/8 + 4096 x 4096/8 +
  // 4096/8 + 4096 x 28672/8 + 4096 x 14336/8) + 4096/8, times 2 bytes.
  const uint64_t layer = 512 + 3145728 + 2097152 + 512 + 14680064 + 7340032;
  EXPECT_EQ(r.files[0].bytes, (2ull * 65667072 + 32 * layer + 512) * 2);
}

TEST(CheckpointLayout, ZeroOneWithPipelineWritesLayerFilesOnDataRankZero) {
  const LlmModel m = Load("llama3_405b");  // TP 8, PP 32, ZeRO 1
  const RankLayout first = CheckpointLayoutForRank(m, 512, 0);
  EXPECT_EQ(first.first_layer, 0u);
  EXPECT_EQ(first.last_layer, 4u);  // 126 = 30 x 4 + 6: the first 30 stages take 4 layers, stage 0 also the embedding
  ASSERT_EQ(first.files.size(), 6u);
  EXPECT_EQ(first.files[0].name, "layer_0-model_0_model_states.pt");
  EXPECT_EQ(first.files[4].name, "layer_4-model_0_model_states.pt");
  EXPECT_EQ(first.files[5].name, "zero_pp_rank_0_mp_rank_0_optim_states.pt");
  const RankLayout last = CheckpointLayoutForRank(m, 512, 255);  // TP rank 7 of the last stage, DP rank 0
  EXPECT_EQ(last.pp_rank, 31u);
  EXPECT_EQ(last.mp_rank, 255u);
  EXPECT_EQ(last.first_layer, 124u);
  EXPECT_EQ(last.last_layer, 128u);  // layers 124-126, lm_head (127), final norm (128)
  EXPECT_EQ(last.files.front().name, "layer_124-model_255_model_states.pt");
  const RankLayout replica = CheckpointLayoutForRank(m, 512, 256);  // DP rank 1: optimizer only
  EXPECT_EQ(replica.dp_rank, 1u);
  ASSERT_EQ(replica.files.size(), 1u);
  EXPECT_EQ(replica.files[0].name, "zero_pp_rank_1_mp_rank_0_optim_states.pt");
  EXPECT_EQ(replica.model_bytes, 0u);
}

TEST(CheckpointLayout, ZeroOneWithoutPipelineAndZeroZero) {
  LlmModel m = Load("llama3_8b", {"model.parallelism.zero_stage=1"});
  RankLayout r0 = CheckpointLayoutForRank(m, 4, 0), r1 = CheckpointLayoutForRank(m, 4, 1);
  ASSERT_EQ(r0.files.size(), 2u);
  EXPECT_EQ(r0.files[0].name, "model_0_model_states.pt");
  EXPECT_EQ(r0.model_bytes, NumParameters(m) * 2);  // unsharded: every parameter, fp16
  ASSERT_EQ(r1.files.size(), 1u);
  m.zero_stage = 0;
  EXPECT_TRUE(CheckpointLayoutForRank(m, 4, 1).files.empty());  // only the first data-parallel instance saves
  EXPECT_EQ(CheckpointLayoutForRank(m, 4, 0).optimizer_bytes, (3 * NumParameters(m) + 15 * 4096) * 4);
}

TEST(CheckpointLayout, WorldsAndRefusals) {
  const LlmModel m70 = Load("llama3_70b");  // TP 8
  EXPECT_EQ(*LayoutWorld(m70, 16), 16u);
  EXPECT_FALSE(LayoutWorld(m70, 4).ok());  // not a multiple of TP x PP
  const LlmModel sub = Load("llama3_70b", {"checkpoint.mode=subset"});
  EXPECT_EQ(*LayoutWorld(sub, 4), 64u);  // the ranks write the shards of the first 4 ranks of the CLOSED job
  EXPECT_FALSE(LayoutWorld(sub, 128).ok());
  EXPECT_FALSE(LlmModelFromConfig(LoadWorkload("llama3_8b", {"model.parallelism.pipeline=2"})).ok());  // ZeRO 3 + PP
  EXPECT_FALSE(LlmModelFromConfig(LoadWorkload("unet3d_h100", {})).ok());  // no transformer
}

}  // namespace
}  // namespace feedrate
