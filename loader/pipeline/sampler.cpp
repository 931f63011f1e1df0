// Sampling orders. DLIO v2.0 references: dlio_benchmark data_loader/torch_data_loader.py (dlio_sampler),
// utils/config.py (get_global_map_index), data_loader/tf_data_loader.py (shard by file).
#include "loader/pipeline/sampler.h"

#include <algorithm>
#include <numeric>

#include "loader/util/numpy_random.h"

namespace feedrate {

uint64_t Sampler::EpochSteps(const SamplerConfig& cfg) {
  if (cfg.world == 0 || cfg.batch_size == 0) return 0;
  const bool presharded = cfg.presharded && cfg.order == SampleOrder::kDlio && cfg.data_loader != DataLoader::kTensorFlow;
  return presharded ? cfg.num_files / cfg.world * cfg.samples_per_file / cfg.batch_size
                    : cfg.num_files * cfg.samples_per_file / cfg.batch_size / cfg.world;
}

Result<Sampler> Sampler::Create(const SamplerConfig& cfg) {
  Sampler s(cfg);
  if (cfg.world == 0 || cfg.batch_size == 0 || cfg.samples_per_file == 0) {
    return Status::InvalidArgument("sampler: world, batch size and samples per file must be positive");
  }
  s.total_ = cfg.num_files * cfg.samples_per_file;
  // DLIO: steps_per_epoch = floor(num_samples / batch_size / comm_size) (drop_last); presharded, floor(N/W) files
  // each (main.py trims every rank's share to it), floor(those samples / batch_size).
  s.files_per_acc_ = cfg.num_files / cfg.world;
  s.steps_ = EpochSteps(cfg);
  if (s.steps_ == 0) {
    return Status::InvalidArgument(
        "the dataset has " + std::to_string(s.total_) + " samples, fewer than one batch of " +
        std::to_string(cfg.batch_size) + " for each of the " + std::to_string(cfg.world) +
        " accelerators: raise dataset.num_files_train or lower the accelerator count");
  }
  if (cfg.total_training_steps > 0) {
    if (static_cast<uint64_t>(cfg.total_training_steps) > s.steps_) {
      return Status::InvalidArgument("train.total_training_steps=" + std::to_string(cfg.total_training_steps) +
                                     " exceeds the " + std::to_string(s.steps_) + " steps an epoch has");
    }
    s.steps_ = static_cast<uint64_t>(cfg.total_training_steps);
  }
  if (s.Presharded()) s.DealFiles();
  if (cfg.order == SampleOrder::kDlio && cfg.data_loader != DataLoader::kTensorFlow && !s.Presharded()) {
    uint64_t per = (s.total_ + cfg.world - 1) / cfg.world;
    uint64_t last_begin = per * (cfg.world - 1);
    uint64_t last_len = last_begin >= s.total_ ? 0 : s.total_ - last_begin;
    if (last_len < s.steps_ * cfg.batch_size) {
      s.balanced_shards_ = true;
      s.warnings_.push_back(
          "DLIO's ceil-sized shards leave the last accelerator fewer samples than the others' " +
          std::to_string(s.steps_) + " steps (DLIO would hang at the step barrier, dlio_benchmark#339); "
          "using balanced contiguous shards instead");
    }
  }
  // Listed orders hold the epoch's global order while an accelerator's share is taken from it.
  constexpr uint64_t kMaxListed = uint64_t{1} << 30;
  if (cfg.order == SampleOrder::kShuffled && s.total_ > kMaxListed) {
    return Status::InvalidArgument("feedrate.order: shuffled keeps the epoch's whole order in memory, " +
                                   std::to_string(s.total_) + " sample ids (" + std::to_string(s.total_ * 8 >> 30) +
                                   " GiB) for this dataset: use DLIO's order (feedrate.order: dlio), whose contiguous "
                                   "shards cost no memory per sample");
  }
  if (cfg.data_loader == DataLoader::kTensorFlow) {
    // DLIO's reconfigure(epoch 1) before the dataset is built: np.random.seed(seed [+ 1]); np.random.shuffle(files).
    // The tf.data pipeline is built once and repeated, so this order holds for every epoch.
    s.tf_files_.resize(cfg.num_files);
    std::iota(s.tf_files_.begin(), s.tf_files_.end(), 0);
    if (cfg.file_shuffle) {
      NumpyRandomState rng(cfg.seed + (cfg.seed_change_epoch ? 1u : 0u));
      rng.Shuffle(&s.tf_files_);
    }
  }
  return s;
}

void Sampler::EpochSamples(uint64_t epoch, uint64_t acc, SampleSequence* out) const {
  const uint64_t need = steps_ * cfg_.batch_size;
  if (contiguous()) {
    DlioPytorch(acc, out);
    return;
  }
  std::vector<uint64_t>& list = out->StartList();
  if (Presharded()) {
    PreshardedSamples(epoch, acc, &list);
  } else if (cfg_.order == SampleOrder::kShuffled) {
    Shuffled(epoch, acc, &list);
  } else {
    DlioTensorflow(epoch, acc, &list);
  }
  list.resize(need);
  out->Seal(need);
}

// DLIO v2.0 PyTorch: accelerator r reads the contiguous, unshuffled range [r*ceil(N/W), ...) every epoch
// (sample_shuffle does not change the read order there).
void Sampler::DlioPytorch(uint64_t acc, SampleSequence* out) const {
  uint64_t begin = balanced_shards_ ? acc * total_ / cfg_.world : acc * ((total_ + cfg_.world - 1) / cfg_.world);
  out->AssignRange(begin, steps_ * cfg_.batch_size);
}

// DLIO TensorFlow: the (file_shuffle-permuted) file list is sharded round-robin (list position i to accelerator
// i mod W); TFRecordDataset(num_parallel_reads = read_threads) reads tf_cycle files at once, one record of each in
// turn (ParallelInterleave, block_length 1, deterministic), the next tf_cycle files when they end (DLIO's files hold
// equal record counts). With fewer files than accelerators, the interleaved records are sharded round-robin instead.
// sample_shuffle adds tf.data's shuffle(shuffle_size, seed): a buffer of shuffle_size records from which each
// output is drawn uniformly and refilled from the stream, reshuffled every epoch. TensorFlow's own RNG is not
// reproduced (numpy's MT19937 seeded with seed+epoch draws instead), so the order has the same locality, not
// the same permutation.
void Sampler::DlioTensorflow(uint64_t epoch, uint64_t acc, std::vector<uint64_t>* out) const {
  const uint64_t need = steps_ * cfg_.batch_size;
  std::vector<uint64_t> stream;
  const bool buffered = cfg_.sample_shuffle && cfg_.shuffle_size > 1;
  std::vector<uint64_t>& dst = buffered ? stream : *out;
  // The shuffle buffer reads at most shuffle_size - 1 records past what it emits.
  const uint64_t want = buffered ? need + cfg_.shuffle_size - 1 : need;
  dst.reserve(std::min(want, total_));
  const bool by_file = cfg_.num_files >= cfg_.world;
  std::vector<uint64_t> files;
  for (uint64_t i = by_file ? acc : 0; i < cfg_.num_files; i += by_file ? cfg_.world : 1) files.push_back(tf_files_[i]);
  const uint64_t cycle = std::max<uint64_t>(1, cfg_.tf_cycle), spf = cfg_.samples_per_file;
  uint64_t index = 0;  // place in the interleaved stream (sharded round-robin when by_file is false)
  for (size_t g = 0; g < files.size() && dst.size() < want; g += cycle) {
    const size_t n = std::min<size_t>(cycle, files.size() - g);
    for (uint64_t k = 0; k < spf && dst.size() < want; ++k) {
      for (size_t j = 0; j < n && dst.size() < want; ++j, ++index) {
        if (by_file || index % cfg_.world == acc) dst.push_back(files[g + j] * spf + k);
      }
    }
  }
  if (!buffered) return;
  NumpyRandomState rng(cfg_.seed + static_cast<uint32_t>(epoch));
  std::vector<uint64_t> buffer;
  buffer.reserve(cfg_.shuffle_size);
  size_t next = 0;
  out->reserve(need);
  while (out->size() < need) {
    while (buffer.size() < cfg_.shuffle_size && next < stream.size()) buffer.push_back(stream[next++]);
    if (buffer.empty()) break;
    const size_t j = static_cast<size_t>(rng.Interval(buffer.size() - 1));
    out->push_back(buffer[j]);
    buffer[j] = buffer.back();
    buffer.pop_back();
  }
}

// DLIO f16fe43's deal (main.py, utils/config.py _reshard_files). Epoch 0's: rank 0's sorted listing round-robin,
// file i to accelerator i mod W, each keeping its first floor(N/W). With file_shuffle, before epoch e (reconfigure(e),
// chained from the epoch before): Redeal.
void Sampler::DealFiles() {
  const uint64_t w = cfg_.world, per = files_per_acc_;
  deals_ = std::make_unique<Deals>();
  deals_->first.resize(w * per);
  for (uint64_t a = 0; a < w; ++a) {
    for (uint64_t k = 0; k < per; ++k) deals_->first[a * per + k] = static_cast<uint32_t>(a + k * w);
  }
}

// Epoch `epoch`'s deal from the one before: every accelerator shuffles its list with np.random.seed(seed + epoch)
// (seed alone without seed_change_epoch), sends its i-th file to accelerator (i + a) mod W (alltoall, received in
// sender order), then shuffles what it received with np.random.seed(seed + epoch + 31 a).
void Sampler::Redeal(uint64_t epoch, const std::vector<uint32_t>& from, std::vector<uint32_t>* to) const {
  const uint64_t w = cfg_.world, per = files_per_acc_;
  std::vector<uint64_t>& perm = deals_->perm;
  perm.resize(per);
  // Every list has `per` entries and the same seed: one permutation, applied to each.
  for (uint64_t i = 0; i < per; ++i) perm[i] = i;
  NumpyRandomState(static_cast<uint32_t>(cfg_.seed + (cfg_.seed_change_epoch ? epoch : 0))).Shuffle(&perm);
  to->assign(w * per, 0);
  std::vector<uint64_t> filled(w, 0);
  for (uint64_t src = 0; src < w; ++src) {
    for (uint64_t i = 0; i < per; ++i) {
      const uint64_t dst = (i + src) % w;
      (*to)[dst * per + filled[dst]++] = from[src * per + perm[i]];
    }
  }
  std::vector<uint32_t> mine(per);
  for (uint64_t a = 0; a < w; ++a) {
    std::copy_n(to->begin() + static_cast<std::ptrdiff_t>(a * per), per, mine.begin());
    NumpyRandomState(static_cast<uint32_t>(cfg_.seed + epoch + a * 31)).Shuffle(&mine);
    std::copy(mine.begin(), mine.end(), to->begin() + static_cast<std::ptrdiff_t>(a * per));
  }
}

// Accelerator `acc`'s samples in epoch `epoch`: its files in order, each file's samples in order (the map-style
// DataLoader reads local sample i from local file i / samples_per_file).
void Sampler::PreshardedSamples(uint64_t epoch, uint64_t acc, std::vector<uint64_t>* out) const {
  Deals& d = *deals_;
  std::lock_guard<std::mutex> lock(d.mu);
  if (!cfg_.file_shuffle) epoch = 0;  // the round-robin deal, every epoch
  if (cfg_.first_deal_only) epoch = std::min<uint64_t>(epoch, 1);
  if (epoch > 0 && epoch + 1 < d.epoch) {  // older than the two kept: from the first again
    d.epoch = 0;
    d.cur.clear();
  }
  while (epoch > d.epoch) {
    d.prev.swap(d.cur);
    Redeal(d.epoch + 1, d.epoch == 0 ? d.first : d.prev, &d.cur);
    ++d.epoch;
  }
  const std::vector<uint32_t>& deal = epoch == 0 ? d.first : epoch == d.epoch ? d.cur : d.prev;
  const uint64_t spf = cfg_.samples_per_file, need = steps_ * cfg_.batch_size;
  out->reserve(need);
  for (uint64_t k = 0; k < files_per_acc_ && out->size() < need; ++k) {
    const uint64_t file = deal[acc * files_per_acc_ + k];
    for (uint64_t s = 0; s < spf && out->size() < need; ++s) out->push_back(file * spf + s);
  }
}

void Sampler::TfFileLanes(uint32_t lanes, uint64_t offset, std::vector<uint32_t>* out) const {
  const bool by_file = cfg_.num_files >= cfg_.world;
  for (uint64_t pos = 0; pos < tf_files_.size(); ++pos) {
    const uint64_t place = by_file ? pos / cfg_.world : pos;  // its place in its accelerator's list
    (*out)[offset + tf_files_[pos]] = static_cast<uint32_t>(place % std::max<uint32_t>(1, lanes));
  }
}

// Feedrate's shuffled order: one global permutation per epoch (numpy-compatible, seeded with seed or
// seed+epoch), of samples (sample_shuffle) or of files keeping samples together (file_shuffle), then a
// balanced contiguous shard per accelerator.
void Sampler::Shuffled(uint64_t epoch, uint64_t acc, std::vector<uint64_t>* out) const {
  uint32_t seed = static_cast<uint32_t>(cfg_.seed + (cfg_.seed_change_epoch ? epoch : 0));
  NumpyRandomState rng(seed);
  std::vector<uint64_t> order;
  if (cfg_.sample_shuffle) {
    order.resize(total_);
    std::iota(order.begin(), order.end(), 0);
    rng.Shuffle(&order);
  } else {
    std::vector<uint64_t> files(cfg_.num_files);
    std::iota(files.begin(), files.end(), 0);
    if (cfg_.file_shuffle) rng.Shuffle(&files);
    order.reserve(total_);
    for (uint64_t f : files) {
      for (uint64_t k = 0; k < cfg_.samples_per_file; ++k) order.push_back(f * cfg_.samples_per_file + k);
    }
  }
  uint64_t begin = acc * total_ / cfg_.world;
  uint64_t need = steps_ * cfg_.batch_size;
  out->assign(order.begin() + static_cast<std::ptrdiff_t>(begin),
              order.begin() + static_cast<std::ptrdiff_t>(begin + need));
}

}  // namespace feedrate
