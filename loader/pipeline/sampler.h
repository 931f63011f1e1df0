// Sampler: for each (epoch, accelerator), the ordered global sample ids that accelerator reads, batch by batch.
// Default order reproduces DLIO v2.0 per loader type; "shuffled" is a real seeded per-epoch shuffle.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loader/pipeline/sample_sequence.h"
#include "loader/status.h"
#include "loader/util/choices.h"

namespace feedrate {

struct SamplerConfig {
  uint64_t num_files = 0;
  uint64_t samples_per_file = 1;
  uint64_t batch_size = 1;
  uint64_t world = 1;                  // total emulated accelerators (ranks x accelerators per rank)
  DataLoader data_loader = DataLoader::kPyTorch;  // pytorch: contiguous shard; tensorflow: files round-robin
  SampleOrder order = SampleOrder::kDlio;
  bool file_shuffle = false;
  bool sample_shuffle = false;
  uint64_t shuffle_size = 1024;        // TensorFlow path: the record shuffle buffer (reader.shuffle_size)
  uint64_t tf_cycle = 1;               // TensorFlow path: files read at once (TFRecordDataset's num_parallel_reads =
                                       // read_threads, an interleave of one record from each in turn)
  uint32_t seed = 123;
  bool seed_change_epoch = true;
  int64_t total_training_steps = -1;   // caps steps per epoch when > 0
  // DLIO f16fe43 (MLPerf Storage v3.0; DlioEditionTraits::presharded_round_robin), PyTorch path: rank 0's listing
  // dealt round-robin (file i to accelerator i mod W, floor(N/W) each), re-dealt before every epoch when
  // file_shuffle is on; each accelerator reads its files in order (sample_shuffle changes nothing there).
  bool presharded = false;
  // Presharded with DLIO reading in its main process (read_threads 0): its reader keeps the index map of epoch 1's
  // deal (built once, never re-read), so every epoch reads in epoch 1's order.
  bool first_deal_only = false;
};

class Sampler {
 public:
  // The steps an epoch has for `cfg` before total_training_steps caps it (DLIO's drop_last arithmetic; presharded:
  // floor(floor(N / W) x samples per file / batch)). Create uses it; so does the sweep, to know the counts a dataset
  // can serve.
  static uint64_t EpochSteps(const SamplerConfig& cfg);
  // Validates the configuration (at least one step per epoch, cap within range).
  static Result<Sampler> Create(const SamplerConfig& cfg);

  uint64_t steps_per_epoch() const { return steps_; }
  uint64_t samples_per_epoch_per_accelerator() const { return steps_ * cfg_.batch_size; }
  // Whether every epoch's sequence is a contiguous range (DLIO's PyTorch order): a batch is consecutive samples.
  bool contiguous() const {
    return cfg_.order != SampleOrder::kShuffled && cfg_.data_loader != DataLoader::kTensorFlow && !Presharded();
  }
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Sets `out` to accelerator `acc`'s steps*batch sample ids for `epoch` (1-based), in read order: a contiguous
  // range in DLIO's PyTorch order (no memory per sample), a list otherwise.
  void EpochSamples(uint64_t epoch, uint64_t acc, SampleSequence* out) const;
  // TensorFlow path: read `cycle` files at once (SamplerConfig::tf_cycle). Call before EpochSamples.
  void set_tf_cycle(uint64_t cycle) { cfg_.tf_cycle = cycle; }
  // TensorFlow path: for each of the dataset's files, the stream (lane) of `lanes` that reads it: its place in its
  // accelerator's file list modulo `lanes` (the interleave's files at a time then never share one), written to
  // (*out)[offset + file]. REQUIRES: out has offset + num_files entries.
  void TfFileLanes(uint32_t lanes, uint64_t offset, std::vector<uint32_t>* out) const;
  // The same ids as a list (tests).
  void EpochSamples(uint64_t epoch, uint64_t acc, std::vector<uint64_t>* out) const {
    SampleSequence s;
    EpochSamples(epoch, acc, &s);
    *out = s.ToVector();
  }

 private:
  explicit Sampler(const SamplerConfig& cfg) : cfg_(cfg) {}
  bool Presharded() const { return cfg_.presharded && cfg_.order == SampleOrder::kDlio && cfg_.data_loader != DataLoader::kTensorFlow; }
  void DlioPytorch(uint64_t acc, SampleSequence* out) const;
  void DealFiles();
  void PreshardedSamples(uint64_t epoch, uint64_t acc, std::vector<uint64_t>* out) const;
  void DlioTensorflow(uint64_t epoch, uint64_t acc, std::vector<uint64_t>* out) const;
  void Shuffled(uint64_t epoch, uint64_t acc, std::vector<uint64_t>* out) const;

  SamplerConfig cfg_;
  uint64_t total_ = 0;
  uint64_t steps_ = 0;
  bool balanced_shards_ = false;  // DLIO's ceil-sized shards would leave an accelerator short of steps
  std::vector<uint64_t> tf_files_;  // TensorFlow path: the file list after DLIO's file_shuffle
  // Presharded: a deal is every accelerator's files_per_acc_ files in read order, accelerator a's at
  // [a * files_per_acc_, (a + 1) * files_per_acc_). Epoch e's comes from epoch e - 1's (DLIO re-deals what it dealt),
  // so deals are made as the epochs come, and the last two kept (an accelerator may start the next epoch while
  // another finishes this one); an older epoch is made again from the first. Locked once per epoch and accelerator,
  // never per sample. (A run of 10^6 epochs made them all up front.)
  struct Deals {
    std::mutex mu;
    std::vector<uint32_t> first;       // rank 0's listing dealt round-robin (before epoch 1's re-deal)
    uint64_t epoch = 0;                // the epoch `cur` holds (0: none yet)
    std::vector<uint32_t> prev, cur;   // epochs epoch - 1 and epoch
    std::vector<uint64_t> perm;        // scratch of the re-deal
  };
  std::unique_ptr<Deals> deals_;
  uint64_t files_per_acc_ = 0;
  void Redeal(uint64_t epoch, const std::vector<uint32_t>& from, std::vector<uint32_t>* to) const;
  std::vector<std::string> warnings_;
};

}  // namespace feedrate
