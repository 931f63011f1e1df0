// Sampler orders: DLIO v2.0 PyTorch shards, TensorFlow round-robin, seeded shuffles, step counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "loader/pipeline/sampler.h"

namespace feedrate {
namespace {

SamplerConfig Cfg(uint64_t files, uint64_t batch, uint64_t world) {
  SamplerConfig c;
  c.num_files = files;
  c.batch_size = batch;
  c.world = world;
  return c;
}

TEST(Sampler, DlioPytorchContiguousShardSameEveryEpoch) {
  auto s = Sampler::Create(Cfg(168, 7, 8));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->steps_per_epoch(), 3u);  // floor(168 / 7 / 8)
  std::vector<uint64_t> a, b;
  s->EpochSamples(1, 2, &a);
  s->EpochSamples(4, 2, &b);
  EXPECT_EQ(a, b);  // DLIO v2.0 ignores sample_shuffle on this path
  ASSERT_EQ(a.size(), 21u);
  EXPECT_EQ(a.front(), 42u);  // 2 * ceil(168 / 8)
  EXPECT_EQ(a.back(), 62u);
}

TEST(Sampler, DropLastAndCeilShards) {
  auto s = Sampler::Create(Cfg(100, 4, 3));  // ceil(100/3) = 34 per shard, floor(100/4/3) = 8 steps
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->steps_per_epoch(), 8u);
  std::vector<uint64_t> v;
  s->EpochSamples(1, 1, &v);
  EXPECT_EQ(v.front(), 34u);
  EXPECT_TRUE(s->warnings().empty());
}

TEST(Sampler, ShortLastShardFallsBackToBalanced) {
  auto s = Sampler::Create(Cfg(10, 1, 4));  // ceil shards 3,3,3,1 but 2 steps each
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->warnings().empty());
  std::set<uint64_t> seen;
  for (uint64_t a = 0; a < 4; ++a) {
    std::vector<uint64_t> v;
    s->EpochSamples(1, a, &v);
    ASSERT_EQ(v.size(), 2u);
    for (auto x : v) EXPECT_TRUE(seen.insert(x).second) << "sample read twice: " << x;
  }
}

TEST(Sampler, TensorflowRoundRobinFiles) {
  auto c = Cfg(10, 2, 3);
  c.data_loader = DataLoader::kTensorFlow;
  c.samples_per_file = 2;
  auto s = Sampler::Create(c);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->steps_per_epoch(), 3u);  // floor(20 / 2 / 3)
  std::vector<uint64_t> v;
  s->EpochSamples(1, 1, &v);
  EXPECT_EQ(v, (std::vector<uint64_t>{2, 3, 8, 9, 14, 15}));  // files 1, 4, 7
}

// TFRecordDataset(num_parallel_reads = 2): two files at once, one record of each in turn (ParallelInterleave,
// block_length 1), then the next two; each file's stream is a lane of its own among an accelerator's.
TEST(Sampler, TensorflowInterleavesReadThreadsFiles) {
  auto c = Cfg(8, 2, 2);
  c.data_loader = DataLoader::kTensorFlow;
  c.samples_per_file = 3;
  c.tf_cycle = 2;
  auto s = Sampler::Create(c);
  ASSERT_TRUE(s.ok());
  std::vector<uint64_t> v;
  s->EpochSamples(1, 1, &v);  // files 1, 3, 5, 7
  EXPECT_EQ(v, (std::vector<uint64_t>{3, 9, 4, 10, 5, 11, 15, 21, 16, 22, 17, 23}));
  std::vector<uint32_t> lanes(10, 99);
  s->TfFileLanes(3, 2, &lanes);  // place in the accelerator's list (position / 2) mod 3, from entry 2 on
  EXPECT_EQ(lanes, (std::vector<uint32_t>{99, 99, 0, 0, 1, 1, 2, 2, 0, 0}));
  c.num_files = 1;  // fewer files than accelerators: the interleaved records round-robin
  c.samples_per_file = 8;
  auto few = Sampler::Create(c);
  ASSERT_TRUE(few.ok());
  few->EpochSamples(1, 1, &v);
  EXPECT_EQ(v, (std::vector<uint64_t>{1, 3, 5, 7}));
}

// DLIO's reconfigure(1): np.random.seed(123 + 1); np.random.shuffle(file_list), then round-robin shards.
// numpy 1.24: seed 124 shuffles arange(10) to [6, 8, 3, 5, 4, 0, 9, 2, 7, 1].
TEST(Sampler, TensorflowFileShuffleIsNumpysPermutation) {
  auto c = Cfg(10, 1, 2);
  c.data_loader = DataLoader::kTensorFlow;
  c.file_shuffle = true;
  auto s = Sampler::Create(c);
  ASSERT_TRUE(s.ok());
  std::vector<uint64_t> a0, a1, again;
  s->EpochSamples(1, 0, &a0);
  s->EpochSamples(1, 1, &a1);
  EXPECT_EQ(a0, (std::vector<uint64_t>{6, 3, 4, 9, 7}));
  EXPECT_EQ(a1, (std::vector<uint64_t>{8, 5, 0, 2, 1}));
  s->EpochSamples(3, 0, &again);  // the tf.data pipeline is built once: the same files every epoch
  EXPECT_EQ(again, a0);
  c.seed_change_epoch = false;  // np.random.seed(123): [4, 0, 7, 5, 8, 3, 1, 6, 9, 2]
  auto fixed = Sampler::Create(c);
  fixed->EpochSamples(1, 0, &a0);
  EXPECT_EQ(a0, (std::vector<uint64_t>{4, 7, 8, 1, 9}));
}

// tf.data shuffle(shuffle_size): every record read once, none emitted before it could have entered the buffer,
// none held back more than the buffer allows; a new order each epoch; shuffle_size 1 keeps file order.
TEST(Sampler, TensorflowShuffleBufferKeepsLocality) {
  auto c = Cfg(8, 4, 1);
  c.data_loader = DataLoader::kTensorFlow;
  c.samples_per_file = 25;
  c.sample_shuffle = true;
  c.shuffle_size = 6;
  auto s = Sampler::Create(c);
  ASSERT_TRUE(s.ok());
  std::vector<uint64_t> e1, e2;
  s->EpochSamples(1, 0, &e1);
  s->EpochSamples(2, 0, &e2);
  ASSERT_EQ(e1.size(), 200u);
  EXPECT_NE(e1, e2);
  std::set<uint64_t> seen(e1.begin(), e1.end());
  EXPECT_EQ(seen.size(), 200u);
  for (size_t i = 0; i < e1.size(); ++i) {
    EXPECT_LE(e1[i], i + 5) << i;  // the stream is 0, 1, 2, ... for one accelerator over all files
  }
  std::vector<uint64_t> sorted = e1;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(sorted, e1);
  c.shuffle_size = 1;
  auto plain = Sampler::Create(c);
  plain->EpochSamples(1, 0, &e1);
  EXPECT_EQ(e1, sorted);
}

TEST(Sampler, ShuffledIsSeededPerEpochPermutation) {
  auto c = Cfg(50, 5, 2);
  c.order = SampleOrder::kShuffled;
  c.sample_shuffle = true;
  auto s = Sampler::Create(c);
  ASSERT_TRUE(s.ok());
  std::vector<uint64_t> e1a, e1b, e2, other;
  s->EpochSamples(1, 0, &e1a);
  s->EpochSamples(1, 0, &e1b);
  s->EpochSamples(2, 0, &e2);
  s->EpochSamples(1, 1, &other);
  EXPECT_EQ(e1a, e1b);
  EXPECT_NE(e1a, e2);
  std::set<uint64_t> all(e1a.begin(), e1a.end());
  all.insert(other.begin(), other.end());
  EXPECT_EQ(all.size(), 50u);  // the two shards partition the epoch
  c.seed_change_epoch = false;
  auto fixed = Sampler::Create(c);
  std::vector<uint64_t> f1, f2;
  fixed->EpochSamples(1, 0, &f1);
  fixed->EpochSamples(2, 0, &f2);
  EXPECT_EQ(f1, f2);
}

TEST(Sampler, FileShuffleKeepsSamplesOfAFileTogether) {
  auto c = Cfg(6, 3, 1);
  c.samples_per_file = 3;
  c.order = SampleOrder::kShuffled;
  c.file_shuffle = true;
  auto s = Sampler::Create(c);
  std::vector<uint64_t> v;
  s->EpochSamples(1, 0, &v);
  ASSERT_EQ(v.size(), 18u);
  for (size_t i = 0; i < v.size(); i += 3) {
    EXPECT_EQ(v[i] / 3, v[i + 2] / 3);
    EXPECT_EQ(v[i] % 3, 0u);
  }
}

TEST(Sampler, StepLimitsAndErrors) {
  auto c = Cfg(100, 10, 1);
  c.total_training_steps = 4;
  EXPECT_EQ(Sampler::Create(c)->steps_per_epoch(), 4u);
  c.total_training_steps = 11;
  EXPECT_FALSE(Sampler::Create(c).ok());
  auto none = Sampler::Create(Cfg(6, 7, 1));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("fewer than one batch"), std::string::npos);
}

// MLPerf Storage v3.0's DLRM: 1,024 files of 4,718,592 rows, batch 16,384. DLIO's PyTorch order is a range, so an
// epoch of 4.8 billion samples is two numbers, not 4.8 GB of ids per accelerator.
TEST(Sampler, DlioPytorchOrderIsARangeAtDlrmScale) {
  auto c = Cfg(1024, 16384, 8);
  c.samples_per_file = 4718592;
  auto s = Sampler::Create(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps_per_epoch(), 36864u);  // 1024 * 4718592 / 16384 / 8
  SampleSequence seq;
  s->EpochSamples(1, 7, &seq);
  EXPECT_TRUE(seq.contiguous());
  EXPECT_EQ(seq.size(), 36864ull * 16384);
  EXPECT_EQ(seq.first(), 7ull * 1024 * 4718592 / 8);
  EXPECT_EQ(seq[seq.size() - 1], 8ull * 1024 * 4718592 / 8 - 1);  // the shard's last sample
  const SampleIds ids = seq.From(16384);
  EXPECT_EQ(ids[3], seq.first() + 16387);
  seq.Shift(5);
  EXPECT_EQ(seq[0], 7ull * 1024 * 4718592 / 8 + 5);
  // The listed orders keep the epoch's whole order in memory: refused with a way out, not an out-of-memory kill.
  c.order = SampleOrder::kShuffled;
  c.sample_shuffle = true;
  auto shuffled = Sampler::Create(c);
  ASSERT_FALSE(shuffled.ok());
  EXPECT_NE(shuffled.status().message().find("feedrate.order: dlio"), std::string::npos) << shuffled.status().message();
}

TEST(Sampler, ListedOrdersAreSequencesToo) {
  auto c = Cfg(6, 3, 2);
  c.order = SampleOrder::kShuffled;
  c.sample_shuffle = true;
  auto s = Sampler::Create(c);
  ASSERT_TRUE(s.ok());
  SampleSequence seq;
  s->EpochSamples(2, 1, &seq);
  EXPECT_FALSE(seq.contiguous());
  std::vector<uint64_t> v;
  s->EpochSamples(2, 1, &v);
  EXPECT_EQ(seq.ToVector(), v);
  ASSERT_EQ(v.size(), 3u);
  seq.Shift(100);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(seq[i], v[i] + 100);
  std::vector<uint64_t> mine{9, 4, 2};
  SampleSequence view = SampleSequence::View(mine.data(), mine.size());
  EXPECT_EQ(view.From(1)[1], 2u);
  SampleSequence moved = std::move(seq);  // a move keeps the owned list valid
  EXPECT_EQ(moved[0], v[0] + 100);
}

// MLPerf Storage v3.0's DLIO (f16fe43) deals files round-robin and re-deals them before every epoch; the files its
// DataLoader workers opened, per rank and epoch (strace, tests/fixtures/dlio_v3/regenerate.sh), are the oracle.
TEST(Sampler, PreshardedOrderIsTheOneDlioV3Opens) {
  std::ifstream in(std::string(FEEDRATE_FIXTURES_DIR) + "/dlio_v3/order.json");
  ASSERT_TRUE(in) << "tests/fixtures/dlio_v3/order.json";
  const nlohmann::json fx = nlohmann::json::parse(in);
  ASSERT_GE(fx["cases"].size(), 2u);
  for (const auto& c : fx["cases"]) {
    SamplerConfig cfg = Cfg(fx["files"], fx["batch"], c["ranks"]);
    cfg.presharded = true;
    cfg.file_shuffle = true;  // (DLIO: any file_shuffle value given, "off" included, shuffles: the "off" case)
    cfg.seed = fx["seed"];
    auto s = Sampler::Create(cfg);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_FALSE(s->contiguous());
    for (uint64_t acc = 0; acc < c["ranks"].get<uint64_t>(); ++acc) {
      const auto& epochs = c["epochs"][acc];
      for (uint64_t e = 1; e <= epochs.size(); ++e) {
        std::vector<uint64_t> got;
        s->EpochSamples(e, acc, &got);
        EXPECT_EQ(got, epochs[e - 1].get<std::vector<uint64_t>>()) << c["ranks"] << " ranks, accelerator " << acc << ", epoch " << e;
      }
    }
  }
}

// Without file_shuffle the round-robin deal holds every epoch; reading in DLIO's main process (read_threads 0) keeps
// epoch 1's deal; steps are floor(floor(N / W) x samples per file / batch).
TEST(Sampler, PreshardedStepsAndUnshuffledDeal) {
  SamplerConfig cfg = Cfg(13, 2, 3);
  cfg.presharded = true;
  auto s = Sampler::Create(cfg);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->steps_per_epoch(), 2u);  // 4 files each
  std::vector<uint64_t> v;
  s->EpochSamples(3, 1, &v);
  EXPECT_EQ(v, (std::vector<uint64_t>{1, 4, 7, 10}));
  cfg.file_shuffle = true;
  cfg.first_deal_only = true;
  auto first = Sampler::Create(cfg);
  ASSERT_TRUE(first.ok());
  std::vector<uint64_t> e1, e3;
  first->EpochSamples(1, 0, &e1);
  first->EpochSamples(3, 0, &e3);
  EXPECT_EQ(e1, e3);
  cfg = Cfg(3, 3, 2);  // 3 files of 4 samples over 2 accelerators: 1 file each, 4 samples, 1 step of 3
  cfg.samples_per_file = 4;
  cfg.presharded = true;
  auto spf = Sampler::Create(cfg);
  ASSERT_TRUE(spf.ok());
  EXPECT_EQ(spf->steps_per_epoch(), 1u);
  spf->EpochSamples(1, 1, &v);
  EXPECT_EQ(v, (std::vector<uint64_t>{4, 5, 6}));
}

}  // namespace
}  // namespace feedrate
