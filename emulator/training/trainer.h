// The training loop: one thread per emulated accelerator, each with its own prefetcher, computing each
// batch for the workload's time and meeting the others at a step barrier (std::barrier within the process,
// one MPI collective per process), which also carries the stop decision (error or interrupt) to every rank.
#pragma once

#include <atomic>
#include <barrier>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "emulator/host/comm.h"
#include "emulator/training/metrics.h"
#include "emulator/training/progress.h"
#include "emulator/training/timeseries.h"
#include "loader/config/workload_config.h"
#include "loader/format/sample_table.h"
#include "loader/io/io_engine.h"
#include "loader/io/page_cache.h"
#include "loader/pipeline/prefetcher.h"
#include "loader/pipeline/sampler.h"
#include "loader/status.h"

namespace feedrate {

class BatchStaging;
struct ContentCheck;

// An accelerator's compute for one step when it is not a sleep (feedrate.compute: gpu, run_gpu.h): runs for `ns`
// and returns once it has finished. Called on that accelerator's thread only.
class StepCompute {
 public:
  virtual ~StepCompute() = default;
  virtual Status Run(int64_t ns) = 0;
};

struct AcceleratorLog {
  std::vector<StepRecord> steps;  // epochs x steps_per_epoch, preallocated
  std::vector<int64_t> block_ns;  // per epoch
  std::vector<int64_t> block_start_ns;  // per epoch: NowNs() at the block's start
  std::vector<EvalEpoch> eval;    // per epoch (ran only after evaluated epochs)
  std::vector<Residency> residency;  // per epoch: what the sampled page-cache probes saw before the reads
  uint64_t probe_failures = 0;       // page-cache probes that failed (e.g. no mmap on the file system)
  // The pre-warm passes (TrainerOptions::prewarm_batches), outside the window: batches and bytes read, time taken.
  uint64_t prewarm_batches = 0, prewarm_bytes = 0;
  int64_t prewarm_ns = 0;
};

struct TrainingResult {
  std::vector<AcceleratorLog> logs;  // local accelerators
  uint64_t steps_per_epoch = 0;
  uint64_t epochs_completed = 0;
  Status error;             // this rank's first error
  bool stopped = false;     // some rank failed or was interrupted; the run ended early everywhere
  bool lost_completion = false;  // a read never completed (--io-timeout): its engine must outlive the process
  bool interrupted = false;
};

struct TrainerOptions {
  uint64_t accelerators = 1;  // per rank
  uint32_t lanes_per_accelerator = 0;  // DlioEngine: accelerator a's batches go to lanes [a x this, (a + 1) x this)
  uint64_t batches_in_flight = 0;  // per accelerator; 0: the workload's (WorkloadConfig::batches_in_flight)
  const std::vector<uint32_t>* file_lanes = nullptr;  // DlioEngine streaming files (TensorFlow): each file's lane of
                                                      // its accelerator's (Prefetcher::set_lanes)
  bool retain_batches = false;
  uint64_t slot_reads = 0;       // samples with bytes a training batch holds at most (0: the batch size)
  uint64_t eval_slot_reads = 0;  // and an evaluation batch
  uint64_t direct_align = 0;  // O_DIRECT alignment, 0 when buffered
  const FileTable* files = nullptr;  // names files in sample-check errors
  uint64_t coalesce_bytes = 0;       // read back-to-back samples of a batch together, up to this many bytes
  std::atomic<uint64_t>* check_ns = nullptr;  // where the prefetchers add their sample-check time
  TrainProgress* progress = nullptr;          // live counters for the progress line (one add per step each)
  // Evaluation (workflow.evaluation): the sampler over the validation files, whose sample ids start at
  // eval_id_offset in the sample table.
  const Sampler* eval_sampler = nullptr;
  uint64_t eval_id_offset = 0;
  // MLPerf Storage v3.0's DLIO pre-warms its DataLoader before each epoch (ReadPlan::prewarm_batches): each
  // accelerator reads its next epoch's first this-many batches (queued at once, each lane its own in order)
  // before the barrier that starts the epoch (and its flush), and once more after the last epoch; outside the window,
  // in no step record. 0: none.
  uint64_t prewarm_batches = 0;
  // Called on rank 0's side of every rank after each epoch (inside the epoch barrier), for live progress.
  std::function<void(uint64_t epoch, const std::vector<AcceleratorLog>& logs)> on_epoch;
  // Called on every rank inside the barrier that starts each epoch, before the ranks agree to go on (so its work,
  // e.g. a page-cache drop, is over on every rank before any accelerator reads); an error stops the run.
  std::function<Status(uint64_t epoch)> before_epoch;
  // Called on every rank inside the barrier that ends each epoch's training block (device counters).
  std::function<void(uint64_t epoch)> after_block;
  uint64_t residency_every = 0;     // probe every Nth read request's page-cache residency (0: off)
  AcceleratorLive* live = nullptr;  // per local accelerator: live stall state for the time series
  ContentCheck* content = nullptr;  // run --verify (prefetcher.h); nullptr: off
  int64_t io_timeout_ns = 0;        // a batch wait with no completion for this long fails the run (0: wait forever)
  // Per local accelerator, where its training (and evaluation) batches land and move on to the device
  // (run --accelerator-memory); empty: the prefetchers' own host memory. Outlive the run.
  std::vector<BatchStaging*> staging, eval_staging;
  // Per local accelerator, its compute when not a sleep (feedrate.compute: gpu); empty: sleep. Outlive the run.
  std::vector<StepCompute*> compute;
};

class Trainer;
// The step barrier's completion step (runs on the last thread to arrive, while the others wait).
struct BarrierCompletion {
  Trainer* trainer;
  void operator()() noexcept;
};

class Trainer {
 public:
  Trainer(const WorkloadConfig& cfg, const Sampler& sampler, IoEngine& engine, const SampleTable& table,
          const Comm& comm, TrainerOptions options);
  TrainingResult Run();

  // The barrier's completion step: agrees on stop across ranks; reports finished epochs.
  void OnBarrier() noexcept;

 private:
  void AcceleratorMain(uint64_t local);
  PrefetcherPtr MakePrefetcher(uint64_t local, uint64_t batch, uint64_t slot_reads, const std::vector<BatchStaging*>& staging);
  void RecordError(const Status& st);
  // A training step's compute from t1 (its batch's arrival) for `secs`; returns when the compute ends. A device
  // compute runs here; a sleep is left to the step barrier (OnBarrier) and its end returned at once.
  int64_t ComputeUntilBarrier(StepCompute* device, int64_t t1, double secs);
  bool IsEvalEpoch(uint64_t epoch) const;
  // One pre-warm pass over `samples` (an epoch's order), counted in `log` (TrainerOptions::prewarm_batches).
  void PreWarm(Prefetcher& prefetcher, const SampleSequence& samples, AcceleratorLog& log);
  // One evaluation pass (DLIO's _eval): batch_size_eval batches, eval_time each, no step barrier.
  EvalEpoch Evaluate(uint64_t epoch, uint64_t global, Prefetcher& prefetcher, SampleSequence* ids,
                     StepCompute* device);

  const WorkloadConfig& cfg_;
  const Sampler& sampler_;
  IoEngine& engine_;
  const SampleTable& table_;
  const Comm& comm_;
  TrainerOptions opt_;
  TrainingResult result_;
  std::atomic<bool> local_failed_{false};
  std::atomic<bool> lost_completion_{false};  // an accelerator thread lost a read (--io-timeout)
  std::mutex error_mu_;          // error path only: guards result_.error
  bool stop_ = false;            // written only in OnBarrier, read by threads after the barrier
  uint64_t barrier_epoch_ = 1;   // OnBarrier only: the epoch and position in its barrier schedule
  uint64_t barrier_pos_ = 0;
  std::atomic<int64_t> compute_end_{0};  // the latest sleep's end among the accelerators at the next barrier
  std::barrier<BarrierCompletion>* barrier_ = nullptr;  // lives in Run()
};

}  // namespace feedrate
