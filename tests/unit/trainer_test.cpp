// Trainer against a fake engine, on every rank of the 3-rank MPI unit job (comm_test.cpp's main): each step reads
// its batch and computes; a failed read on one rank stops every accelerator of every rank at the same step with
// that rank's error; a read that never completes fails the run after the I/O timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "emulator/host/comm.h"
#include "emulator/training/trainer.h"
#include "loader/config/workload_config.h"

namespace feedrate {
extern const Comm* g_comm;  // comm_test.cpp
namespace {

// Completes requests on its own thread: after `delay_us`, with the extent's length, or an error for `fail_file`
// (on `fail_rank` only); requests for `hold_file` are kept until Release() (a read that never completes).
class FakeEngine final : public IoEngine {
 public:
  FakeEngine() : worker_([this] { Serve(); }) {}
  ~FakeEngine() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  const char* name() const override { return "fake"; }
  using IoEngine::Submit;
  void Submit(std::span<const ReadRequest> requests) override {
    if (submit_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(submit_delay_ms));
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.insert(queue_.end(), requests.begin(), requests.end());
      for (const ReadRequest& r : requests) submitted_.push_back(static_cast<int64_t>(r.extent.file));
    }
    cv_.notify_one();
  }
  uint64_t buffer_bytes() const override { return 0; }
  EngineCounters counters() const override { return {}; }
  void Release() {  // completes the held requests
    std::lock_guard<std::mutex> lock(mu_);
    for (const ReadRequest& r : held_) r.target->OnComplete(r.tag, r.extent.length, Status::Ok(), nullptr);
    held_.clear();
  }
  // The files of every request submitted so far, in order, with Mark()'s markers among them.
  std::vector<int64_t> Submitted() {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  void Mark(int64_t marker) {
    std::lock_guard<std::mutex> lock(mu_);
    submitted_.push_back(marker);
  }
  int64_t fail_file = -1;
  int64_t hold_file = -1;
  int submit_delay_ms = 0;  // each Submit takes this long (queueing the reads, or the CPU lost to what it wakes)

 private:
  void Serve() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      ReadRequest r = queue_.front();
      queue_.pop_front();
      if (static_cast<int64_t>(r.extent.file) == hold_file) {
        held_.push_back(r);
        continue;
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (static_cast<int64_t>(r.extent.file) == fail_file) {
        r.target->OnComplete(r.tag, 0, Status::IoError("img_" + std::to_string(r.extent.file) + ": injected"), nullptr);
      } else {
        r.target->OnComplete(r.tag, r.extent.length, Status::Ok(), nullptr);
      }
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ReadRequest> queue_;
  std::vector<ReadRequest> held_;
  std::vector<int64_t> submitted_;
  bool stop_ = false;
  std::thread worker_;
};

// 24 one-sample files of 1000 bytes, batch 2, 2 accelerators per rank x 3 ranks: 2 steps per epoch, 3 epochs.
struct Job {
  WorkloadConfig cfg = ParseWorkload("model:\n  name: fake\ndataset:\n  format: npz\n  num_files_train: 24\n"
                                     "  record_length_bytes: 1000\nreader:\n  batch_size: 2\n  prefetch_size: 2\n"
                                     "train:\n  epochs: 3\n  computation_time: 0.002\n",
                                     "trainer_test", "fake", {});
  SampleTable table{24, 1};
  Sampler sampler;
  Job() : sampler(*Sampler::Create(Config())) {
    for (uint32_t f = 0; f < 24; ++f) table.SetFile(f, FileSamples{0, 0, 1000, -1});
  }
  static SamplerConfig Config() {
    SamplerConfig s;
    s.num_files = 24;
    s.batch_size = 2;
    s.world = 6;
    return s;
  }
  TrainerOptions Options() const {
    TrainerOptions o;
    o.accelerators = 2;
    return o;
  }
};

TEST(Trainer, EveryStepReadsItsBatchAndComputes) {
  Job job;
  FakeEngine engine;
  Trainer trainer(job.cfg, job.sampler, engine, job.table, *g_comm, job.Options());
  TrainingResult r = trainer.Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.steps_per_epoch, 2u);
  EXPECT_EQ(r.epochs_completed, 3u);
  ASSERT_EQ(r.logs.size(), 2u);
  for (const AcceleratorLog& log : r.logs) {
    ASSERT_EQ(log.steps.size(), 6u);
    for (const StepRecord& s : log.steps) {
      EXPECT_EQ(s.bytes, 2000u);
      EXPECT_GE(s.compute_ns, 2'000'000);  // the drawn computation time, slept to an absolute deadline
    }
  }
}

// A sleeping accelerator's compute ends at its deadline, not when its thread wakes: the step barrier sleeps once to
// the latest deadline, so each step's compute is the drawn time to the nanosecond (20 ms; queueing the refill here
// takes microseconds); whatever the wake-up adds is the barrier's.
TEST(Trainer, AStepsComputeIsItsDrawnTimeNotItsWakeUp) {
  Job job;
  job.cfg.computation_time.mean = 0.02;
  FakeEngine engine;
  Trainer trainer(job.cfg, job.sampler, engine, job.table, *g_comm, job.Options());
  TrainingResult r = trainer.Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  for (const AcceleratorLog& log : r.logs) {
    ASSERT_EQ(log.steps.size(), 6u);
    for (const StepRecord& s : log.steps) {
      EXPECT_EQ(s.compute_ns, 20'000'000);
    }
  }
}

// Issue 22 item 3: queueing the next batch is the host's work during the accelerator's compute, not a stall. With
// one batch ahead, step 1's reads are queued while step 0 computes; a slow Submit (0.5 s) must land in that compute
// (1 s, slept to an absolute deadline, so it stays 1 s), and no step's stall may contain it. The bounds are half the
// delay either way: what they tell apart is whether 0.5 s moved, not how fast a loaded machine wakes up.
TEST(Trainer, QueueingTheNextBatchOverlapsTheComputeNotTheStall) {
  Job job;
  job.cfg.batches_in_flight = 1;
  job.cfg.epochs = 1;
  job.cfg.computation_time.mean = 1.0;
  FakeEngine engine;
  engine.submit_delay_ms = 500;
  Trainer trainer(job.cfg, job.sampler, engine, job.table, *g_comm, job.Options());
  TrainingResult r = trainer.Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  for (const AcceleratorLog& log : r.logs) {
    ASSERT_EQ(log.steps.size(), 2u);
    for (const StepRecord& s : log.steps) {
      EXPECT_LT(s.load_ns, 250'000'000) << "queueing the next batch was timed as stall";
      EXPECT_GE(s.compute_ns, 1'000'000'000);
      EXPECT_LT(s.compute_ns, 1'250'000'000) << "queueing the next batch lengthened the compute";
      EXPECT_EQ(s.bytes, 2000u);
    }
  }
}

// v3.0's pre-warm (TrainerOptions::prewarm_batches): before the barrier that starts each epoch (and its flush), and
// after the last, each accelerator reads its next epoch's first batches; in no step record. In a shuffled order each
// epoch's first batch differs, so the reads between the epochs' starts say whose they are.
TEST(Trainer, PreWarmReadsTheNextEpochsFirstBatchesBeforeItsStart) {
  Job job;
  SamplerConfig sc = Job::Config();
  sc.order = SampleOrder::kShuffled;
  sc.sample_shuffle = true;
  const Sampler sampler = *Sampler::Create(sc);
  FakeEngine engine;
  TrainerOptions o = job.Options();
  o.prewarm_batches = 1;
  constexpr int64_t kEpochStart = -1;
  o.before_epoch = [&engine](uint64_t) {
    engine.Mark(kEpochStart);
    return Status::Ok();
  };
  Trainer trainer(job.cfg, sampler, engine, job.table, *g_comm, std::move(o));
  TrainingResult r = trainer.Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.epochs_completed, 3u);
  // What each phase should read: epoch e's samples of both accelerators, or their first batch (2 samples) of it.
  auto expect = [&](uint64_t epoch, bool first_batch_only) {
    std::vector<int64_t> files;
    for (uint64_t a = 0; a < 2; ++a) {
      std::vector<uint64_t> ids;
      sampler.EpochSamples(epoch, static_cast<uint64_t>(g_comm->rank()) * 2 + a, &ids);
      for (size_t i = 0; i < (first_batch_only ? 2 : ids.size()); ++i) files.push_back(static_cast<int64_t>(ids[i]));
    }
    return files;
  };
  std::vector<std::vector<int64_t>> phases(1);  // the reads before epoch 1's start, then between the starts
  for (int64_t f : engine.Submitted()) {
    if (f == kEpochStart) {
      phases.emplace_back();
    } else {
      phases.back().push_back(f);
    }
  }
  ASSERT_EQ(phases.size(), 4u);
  for (uint64_t e = 0; e <= 3; ++e) {
    std::vector<int64_t> want = e == 0 ? std::vector<int64_t>{} : expect(e, false);
    for (int64_t f : expect(e + 1, true)) want.push_back(f);
    std::vector<int64_t> got = phases[e];
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << "between epoch " << e << "'s start and the next";
  }
  EXPECT_NE(expect(1, true), expect(2, true)) << "a shuffled order whose epochs start alike tells nothing";
  for (const AcceleratorLog& log : r.logs) {
    EXPECT_EQ(log.prewarm_batches, 4u);  // before each of the 3 epochs and after the last
    EXPECT_EQ(log.prewarm_bytes, 4u * 2000u);
    for (const StepRecord& s : log.steps) EXPECT_EQ(s.bytes, 2000u);
  }
}

TEST(Trainer, AFailedReadOnOneRankStopsEveryRankAtTheSameStep) {
  Job job;
  FakeEngine engine;
  // Rank 1's accelerators read files 8-15 (contiguous shards of 4 per accelerator); file 13 fails there.
  if (g_comm->rank() == 1) engine.fail_file = 13;
  Trainer trainer(job.cfg, job.sampler, engine, job.table, *g_comm, job.Options());
  TrainingResult r = trainer.Run();
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.epochs_completed, 0u) << "the failure is in the first epoch";
  if (g_comm->rank() == 1) {
    EXPECT_NE(r.error.ToString().find("img_13: injected"), std::string::npos) << r.error.ToString();
  } else {
    EXPECT_TRUE(r.error.ok()) << r.error.ToString();
  }
  EXPECT_EQ(g_comm->MaxDouble(static_cast<double>(r.epochs_completed)), 0.0);
}

TEST(Trainer, AReadThatNeverCompletesFailsAfterTheIoTimeout) {
  Job job;
  FakeEngine engine;
  if (g_comm->rank() == 2) engine.hold_file = 17;  // rank 2 reads files 16-23
  TrainerOptions o = job.Options();
  o.io_timeout_ns = 300'000'000;
  TrainingResult r;
  {
    Trainer trainer(job.cfg, job.sampler, engine, job.table, *g_comm, std::move(o));
    r = trainer.Run();
  }
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.lost_completion, g_comm->rank() == 2);
  if (g_comm->rank() == 2) {
    EXPECT_NE(r.error.ToString().find("has not completed after 0.3 s (--io-timeout)"), std::string::npos)
        << r.error.ToString();
  }
  engine.Release();  // the prefetcher it was lost into was kept (never freed), so this completion is safe
}

}  // namespace
}  // namespace feedrate
