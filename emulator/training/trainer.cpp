// Training loop implementation.
#include "emulator/training/trainer.h"

#include <algorithm>
#include <system_error>
#include <cmath>
#include <memory>
#include <random>
#include <thread>

#include "emulator/training/compute_clock.h"
#include "loader/util/time_draw.h"
#include "emulator/training/interrupt.h"
#include "loader/pipeline/prefetcher.h"

namespace feedrate {
void BarrierCompletion::operator()() noexcept { trainer->OnBarrier(); }

Trainer::Trainer(const WorkloadConfig& cfg, const Sampler& sampler, IoEngine& engine,
                 const SampleTable& table, const Comm& comm, TrainerOptions options)
    : cfg_(cfg), sampler_(sampler), engine_(engine), table_(table), comm_(comm), opt_(std::move(options)) {}

void Trainer::RecordError(const Status& st) {
  std::lock_guard<std::mutex> lock(error_mu_);
  if (result_.error.ok()) result_.error = st;
  local_failed_.store(true, std::memory_order_relaxed);
}

bool Trainer::IsEvalEpoch(uint64_t epoch) const {
  // DLIO: evaluate once epoch >= next_eval_epoch (eval_after_epoch first), then every epochs_between_evals.
  if (opt_.eval_sampler == nullptr || epoch < cfg_.eval_after_epoch) return false;
  return (epoch - cfg_.eval_after_epoch) % std::max<uint64_t>(1, cfg_.epochs_between_evals) == 0;
}

void Trainer::OnBarrier() noexcept {
  // Every accelerator has arrived: the step ends when the last one's compute does (ComputeUntilBarrier).
  if (const int64_t end = compute_end_.exchange(0, std::memory_order_relaxed); end > 0) SleepUntilUnlessInterrupted(end);
  // Barrier schedule per epoch: one at the start, one per step, one at the end, one after an evaluation pass.
  const uint64_t per_epoch = result_.steps_per_epoch + 2 + (IsEvalEpoch(barrier_epoch_) ? 1 : 0);
  const uint64_t pos = barrier_pos_;
  const uint64_t epoch = barrier_epoch_;
  if (++barrier_pos_ == per_epoch) {
    barrier_pos_ = 0;
    ++barrier_epoch_;
  }
  if (pos == 0 && opt_.before_epoch && !local_failed_.load(std::memory_order_relaxed)) {
    Status st = opt_.before_epoch(epoch);
    if (!st.ok()) RecordError(st);
  }
  if (pos == result_.steps_per_epoch + 1 && opt_.after_block) opt_.after_block(epoch);
  bool local_stop = local_failed_.load(std::memory_order_relaxed) || Interrupted();
  if (Interrupted()) result_.interrupted = true;
  stop_ = comm_.AnyTrue(local_stop);
  if (stop_) result_.stopped = true;
  if (pos == 0 && opt_.progress != nullptr) {  // an epoch's start: every accelerator waits here, none is adding
    TrainProgress& p = *opt_.progress;
    p.steps.store(0, std::memory_order_relaxed);
    p.bytes.store(0, std::memory_order_relaxed);
    p.compute_ns.store(0, std::memory_order_relaxed);
    p.epoch_start_ns.store(NowNs(), std::memory_order_relaxed);
    p.epoch.store(barrier_epoch_, std::memory_order_relaxed);  // pos 0 never ends a schedule, so still this epoch
  }
  if (pos == result_.steps_per_epoch + 1 && !stop_) {  // the training block's end
    ++result_.epochs_completed;
    if (opt_.on_epoch) opt_.on_epoch(result_.epochs_completed, result_.logs);
  }
}

namespace {

// A step's compute from t1 (when its batch arrived): a sleep to t1 + secs, or the accelerator's kernel for what
// is left of that after the refill (the refill happens inside the compute either way).
Status ComputeStep(StepCompute* device, int64_t t1, double secs) {
  if (secs <= 0) return Status::Ok();
  const int64_t deadline = t1 + static_cast<int64_t>(secs * 1e9);
  if (device == nullptr) {
    SleepUntilUnlessInterrupted(deadline);
    return Status::Ok();
  }
  return device->Run(deadline - NowNs());
}

}  // namespace

int64_t Trainer::ComputeUntilBarrier(StepCompute* device, int64_t t1, double secs) {
  if (device != nullptr) {
    if (Status st = ComputeStep(device, t1, secs); !st.ok()) RecordError(st);
    return NowNs();
  }
  // A sleep ends at a known instant: hand it to the step barrier, whose completion sleeps once to the latest
  // accelerator's end. One timer wake-up a step instead of one per accelerator, whose spread (this host's wake-up
  // latency, not the storage) the barrier would otherwise add to every step (results/2026-12-03/step_wake.md).
  // A refill that took longer than the compute has already ended it: that time stays compute, as before.
  const int64_t end = std::max(t1 + static_cast<int64_t>(std::max(0.0, secs) * 1e9), NowNs());
  int64_t latest = compute_end_.load(std::memory_order_relaxed);
  while (latest < end && !compute_end_.compare_exchange_weak(latest, end, std::memory_order_relaxed)) {
  }
  return end;
}

EvalEpoch Trainer::Evaluate(uint64_t epoch, uint64_t global, Prefetcher& prefetcher, SampleSequence* ids,
                            StepCompute* device) {
  opt_.eval_sampler->EpochSamples(epoch, global, ids);
  ids->Shift(opt_.eval_id_offset);
  TimeDistribution t;
  t.type = cfg_.eval_time_stdev > 0 ? "normal" : "constant";
  t.mean = cfg_.eval_time;
  t.stdev = cfg_.eval_time_stdev;
  TimeDraw draw(t, 0xe7a1ULL * 7919 + global * 131 + epoch);
  const uint64_t steps = opt_.eval_sampler->steps_per_epoch();
  EvalEpoch r;
  r.ran = true;
  const int64_t start = NowNs();
  int64_t compute_ns = 0;
  prefetcher.StartEpoch(ids, steps);
  for (uint64_t s = 0; s < steps; ++s) {
    BatchResult batch = prefetcher.WaitBatch(s);
    if (!batch.status.ok()) {
      if (!batch.status.stopped()) RecordError(batch.status);
      prefetcher.Drain();
      break;
    }
    const int64_t t1 = NowNs();
    prefetcher.Refill();  // inside the compute, as in training
    if (Status st = ComputeStep(device, t1, draw.Next()); !st.ok()) RecordError(st);
    compute_ns += NowNs() - t1;
    r.bytes += batch.bytes;
    r.samples += cfg_.batch_size_eval;
    if (Interrupted()) {
      prefetcher.Drain();
      break;
    }
  }
  r.seconds = static_cast<double>(NowNs() - start) / 1e9;
  r.compute_seconds = static_cast<double>(compute_ns) / 1e9;
  return r;
}

// The pre-warm iterator of v3.0's DLIO (main.py: next(iter(loader)), then del): its workers each begin their first
// batch, batch 0 arrives (worker 0 then begins its next at once), the iterator goes and every batch begun is
// finished. The pass's batches (ReadPlan::prewarm_batches: a worker's first each, worker 0's second) are queued at
// once; each lane reads its own in order, as the fork's workers do where storage, not their start-up, is slow
// (docs/dlio-compatibility.md).
void Trainer::PreWarm(Prefetcher& prefetcher, const SampleSequence& samples, AcceleratorLog& log) {
  const uint64_t n = std::min(opt_.prewarm_batches, result_.steps_per_epoch);
  if (n == 0) return;
  const int64_t start = NowNs();
  prefetcher.StartEpoch(&samples, n);
  for (uint64_t s = 0; s < n; ++s) {
    BatchResult batch = prefetcher.WaitBatch(s);
    if (!batch.status.ok()) {  // the barrier that follows stops every rank
      if (!batch.status.stopped()) RecordError(batch.status);
      prefetcher.Drain();
      break;
    }
    prefetcher.Refill();
    ++log.prewarm_batches;
    log.prewarm_bytes += batch.bytes;
  }
  (void)prefetcher.TakeResidency();  // the epoch's sample is of its own reads
  log.prewarm_ns += NowNs() - start;
}

TrainingResult Trainer::Run() {
  result_.steps_per_epoch = sampler_.steps_per_epoch();
  result_.logs.resize(opt_.accelerators);
  for (auto& log : result_.logs) {
    log.steps.assign(cfg_.epochs * result_.steps_per_epoch, StepRecord{});
    log.block_ns.assign(cfg_.epochs, 0);
    log.block_start_ns.assign(cfg_.epochs, 0);
    log.eval.assign(cfg_.epochs, EvalEpoch{});
    log.residency.assign(cfg_.epochs, Residency{});
  }
  std::barrier<BarrierCompletion> barrier(static_cast<std::ptrdiff_t>(opt_.accelerators), BarrierCompletion{this});
  barrier_ = &barrier;
  // Every accelerator thread waits at a gate until all of them exist: a thread the system refuses (a pids cgroup,
  // an address-space limit) ends the run with the cause named instead of leaving the others at the step barrier
  // (and a joinable std::thread to terminate the process).
  std::atomic<int> gate{0};  // 1: all started, run; 2: one could not start, return
  std::vector<std::thread> threads;
  threads.reserve(opt_.accelerators);
  try {
    for (uint64_t a = 0; a < opt_.accelerators; ++a) {
      threads.emplace_back([this, a, &gate] {
        gate.wait(0);
        if (gate.load() == 1) AcceleratorMain(a);
      });
    }
    gate.store(1);
  } catch (const std::system_error& e) {
    RecordError(Status::Errno("cannot start accelerator thread " + std::to_string(threads.size() + 1) + " of " +
                                  std::to_string(opt_.accelerators) + " (a pids, thread or memory limit?)",
                              e.code().value()));
    gate.store(2);
  }
  gate.notify_all();
  for (auto& t : threads) t.join();
  barrier_ = nullptr;
  result_.lost_completion = lost_completion_.load(std::memory_order_relaxed);
  return std::move(result_);
}

// An accelerator's prefetcher (training or evaluation) with the run's settings: its lanes (DLIO's workers), check
// time counter, content check, completion timeout, the interrupt flag, and its staging slots when there are any.
PrefetcherPtr Trainer::MakePrefetcher(uint64_t local, uint64_t batch, uint64_t slot_reads,
                                      const std::vector<BatchStaging*>& staging) {
  const uint64_t depth = opt_.batches_in_flight > 0 ? opt_.batches_in_flight : cfg_.batches_in_flight;
  PrefetcherPtr p(new Prefetcher(engine_, table_, batch, depth, opt_.retain_batches, opt_.direct_align,
                                 opt_.files, opt_.coalesce_bytes, slot_reads));
  const uint32_t lanes = opt_.lanes_per_accelerator;
  if (lanes > 0) p->set_lanes(static_cast<uint32_t>(local) * lanes, lanes, opt_.file_lanes);
  p->set_check_time_counter(opt_.check_ns);
  p->set_content_check(opt_.content);
  p->set_completion_timeout(opt_.io_timeout_ns);
  p->set_stop_flag(InterruptFlag());
  if (!staging.empty()) {
    if (Status st = p->set_staging(staging[local]); !st.ok()) RecordError(st);
  }
  return p;
}

void Trainer::AcceleratorMain(uint64_t local) {
  auto& barrier = *barrier_;
  const uint64_t global = static_cast<uint64_t>(comm_.rank()) * opt_.accelerators + local;
  const uint64_t steps = result_.steps_per_epoch;
  AcceleratorLog& log = result_.logs[local];
  // Heap-held so that a prefetcher a read was lost into stays allocated (KeepIfLost); once per thread, not per sample.
  PrefetcherPtr owned = MakePrefetcher(local, cfg_.batch_size, opt_.slot_reads, opt_.staging);
  Prefetcher& prefetcher = *owned;
  prefetcher.set_residency_sampling(opt_.residency_every);
  AcceleratorLive* live = opt_.live != nullptr ? &opt_.live[local] : nullptr;
  SampleSequence samples;
  TimeDraw compute(cfg_.computation_time, 0x6a177e2ULL + global);
  StepCompute* device = opt_.compute.empty() ? nullptr : opt_.compute[local];
  PrefetcherPtr eval_prefetcher;
  SampleSequence eval_ids;
  if (opt_.eval_sampler != nullptr) {
    eval_prefetcher = MakePrefetcher(local, cfg_.batch_size_eval, opt_.eval_slot_reads, opt_.eval_staging);
  }
  // When the thread leaves: a read lost into either prefetcher means the engine must outlive the process too.
  struct ReportLost {
    Trainer* trainer;
    const PrefetcherPtr& train;
    const PrefetcherPtr& eval;
    ~ReportLost() {
      if (train->lost() || (eval && eval->lost())) trainer->lost_completion_.store(true, std::memory_order_relaxed);
    }
  } report_lost{this, owned, eval_prefetcher};

  sampler_.EpochSamples(1, global, &samples);
  PreWarm(prefetcher, samples, log);
  for (uint64_t epoch = 1; epoch <= cfg_.epochs; ++epoch) {
    if (epoch > 1 && opt_.prewarm_batches == 0) sampler_.EpochSamples(epoch, global, &samples);
    barrier.arrive_and_wait();  // epoch start (DLIO HEAD also aligns ranks before the epoch)
    if (stop_) return;
    const int64_t block_start = NowNs();
    prefetcher.StartEpoch(&samples, steps);
    StepRecord* rec = log.steps.data() + (epoch - 1) * steps;
    for (uint64_t s = 0; s < steps; ++s) {
      const int64_t t0 = NowNs();
      if (live != nullptr) live->wait_start_ns.store(t0, std::memory_order_relaxed);
      BatchResult batch = prefetcher.WaitBatch(s);
      const int64_t t1 = NowNs();
      if (live != nullptr) {
        live->wait_start_ns.store(0, std::memory_order_relaxed);
        live->stall_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
      }
      int64_t t2 = t1;
      if (batch.status.ok()) {
        // The compute starts now; queueing the next reads happens inside it, as a real host thread queues loads
        // while the accelerator computes, so neither the queueing nor the I/O threads it wakes count as stall.
        prefetcher.Refill();
        t2 = ComputeUntilBarrier(device, t1, compute.Next());
      } else if (!batch.status.stopped()) {  // a stop is an interrupt: the barrier below sees the flag
        RecordError(batch.status);
      }
      barrier.arrive_and_wait();  // the emulated all-reduce (its completion sleeps to the last compute's end)
      const int64_t t3 = NowNs();
      rec[s] = {t1 - t0, t2 - t1, t3 - t2, batch.bytes};
      if (opt_.progress != nullptr) {
        opt_.progress->compute_ns.fetch_add(static_cast<uint64_t>(t2 - t1), std::memory_order_relaxed);
        opt_.progress->bytes.fetch_add(batch.bytes, std::memory_order_relaxed);
        opt_.progress->steps.fetch_add(1, std::memory_order_relaxed);
        opt_.progress->total_compute_ns.fetch_add(static_cast<uint64_t>(t2 - t1), std::memory_order_relaxed);
        opt_.progress->total_bytes.fetch_add(batch.bytes, std::memory_order_relaxed);
        opt_.progress->total_steps.fetch_add(1, std::memory_order_relaxed);
      }
      if (stop_) {
        prefetcher.Drain();
        return;
      }
    }
    log.block_ns[epoch - 1] = NowNs() - block_start;
    log.block_start_ns[epoch - 1] = block_start;
    log.residency[epoch - 1] = prefetcher.TakeResidency();
    log.probe_failures = prefetcher.probe_failures();
    barrier.arrive_and_wait();  // epoch end
    if (stop_) return;
    if (IsEvalEpoch(epoch)) {
      log.eval[epoch - 1] = Evaluate(epoch, global, *eval_prefetcher, &eval_ids, device);
      barrier.arrive_and_wait();  // evaluation end (DLIO: a barrier after _eval)
      if (stop_) return;
    }
    if (opt_.prewarm_batches > 0) {  // the next epoch's (after the last one too, as v3.0's DLIO does)
      sampler_.EpochSamples(epoch + 1, global, &samples);
      PreWarm(prefetcher, samples, log);
    }
  }
}

}  // namespace feedrate
