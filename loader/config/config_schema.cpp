// The keys DLIO's LoadConfig accepts (dlio_benchmark utils/config.py, v2.0 and later), and how Feedrate
// treats each: used, accepted without effect in a C++ emulator, or not implemented yet (warned about).
#include <algorithm>
#include <unordered_map>

#include "loader/config/workload_config.h"

namespace feedrate {
namespace {

using K = KeySupport;

const std::unordered_map<std::string, KeySupport>& Schema() {
  static const std::unordered_map<std::string, KeySupport> kSchema = {
      {"framework", K::kUsed},
      {"model", K::kNoEffect},  // v0.5/v1.0 spelling: a plain model name
      {"model.name", K::kUsed},
      {"model.type", K::kNoEffect},
      {"model.model_size", K::kNoEffect},  // v2.0 unet3d files put it here; DLIO ignores it too
      {"model.model_size_bytes", K::kNotYet},
      {"model.optimization_groups", K::kNotYet},
      {"model.num_layers", K::kNotYet},
      {"model.layer_parameters", K::kNotYet},
      {"model.model_datatype", K::kNotYet},
      {"model.optimizer_datatype", K::kNotYet},
      {"model.parallelism.tensor", K::kNotYet},
      {"model.parallelism.pipeline", K::kNotYet},
      {"model.parallelism.data", K::kNotYet},
      {"model.parallelism.zero_stage", K::kNotYet},
      {"model.transformer.vocab_size", K::kNotYet},
      {"model.transformer.hidden_size", K::kNotYet},
      {"model.transformer.ffn_hidden_size", K::kNotYet},
      {"model.transformer.num_attention_heads", K::kNotYet},
      {"model.transformer.num_kv_heads", K::kNotYet},
      {"workflow.generate_data", K::kNoEffect},  // Feedrate generates with `feedrate datagen`
      {"workflow.train", K::kUsed},
      {"workflow.evaluation", K::kUsed},
      {"workflow.checkpoint", K::kUsed},
      {"workflow.profiling", K::kNoEffect},
      {"storage.storage_type", K::kUsed},
      {"storage.storage_root", K::kUsed},
      {"storage.storage_options", K::kUsed},
      {"dataset.record_length_bytes", K::kUsed},
      {"dataset.record_length_bytes_stdev", K::kUsed},
      {"dataset.record_length_bytes_resize", K::kUsed},  // DLIO's resized_image: what each worker collates per sample
      {"dataset.num_files_train", K::kUsed},
      {"dataset.num_files_eval", K::kUsed},
      {"dataset.generation_buffer_size", K::kNoEffect},
      {"dataset.num_samples_per_file", K::kUsed},
      {"dataset.data_folder", K::kUsed},
      {"dataset.num_subfolders_train", K::kUsed},
      {"dataset.num_subfolders_eval", K::kUsed},
      {"dataset.enable_chunking", K::kNotYet},
      {"dataset.chunk_size", K::kNotYet},
      {"dataset.compression", K::kUsed},
      {"dataset.compression_level", K::kNotYet},
      {"dataset.file_prefix", K::kUsed},
      {"dataset.format", K::kUsed},
      {"dataset.keep_files", K::kNoEffect},
      {"dataset.record_element_bytes", K::kNotYet},
      {"dataset.record_element_type", K::kNotYet},
      {"dataset.record_dims", K::kNotYet},
      {"dataset.hdf5.chunk_dims", K::kNotYet},
      {"dataset.hdf5.num_dset_per_record", K::kNotYet},
      {"dataset.hdf5.max_shape", K::kNotYet},
      {"dataset.parquet.columns", K::kUsed},
      {"dataset.parquet.row_group_size", K::kUsed},
      {"dataset.parquet.read_mode", K::kUsed},
      {"dataset.parquet.partition_by", K::kNotYet},
      {"dataset.parquet.generation_batch_size", K::kNoEffect},  // DLIO's generator memory bound; files are the same
      {"reader.dont_use_mmap", K::kNoEffect},
      {"reader.reader_classname", K::kNoEffect},
      {"reader.multiprocessing_context", K::kNoEffect},
      {"reader.data_loader", K::kUsed},
      {"reader.data_loader_classname", K::kNoEffect},
      {"reader.data_loader_sampler", K::kNotYet},
      {"reader.read_threads", K::kUsed},
      {"reader.computation_threads", K::kNoEffect},
      {"reader.batch_size", K::kUsed},
      {"reader.batch_size_eval", K::kUsed},
      {"reader.prefetch_size", K::kUsed},
      {"reader.file_shuffle", K::kUsed},
      {"reader.file_access", K::kNotYet},
      {"reader.shuffle_size", K::kUsed},
      {"reader.sample_shuffle", K::kUsed},
      {"reader.read_type", K::kUsed},
      {"reader.transfer_size", K::kUsed},
      {"reader.odirect", K::kUsed},
      {"reader.preprocess_time", K::kUsed},  // a sleep per sample in each DataLoader worker (reader_handler.py)
      {"reader.preprocess_time.mean", K::kUsed},
      {"reader.preprocess_time.stdev", K::kUsed},
      {"reader.preprocess_time.type", K::kUsed},
      {"reader.preprocess_time.min", K::kUsed},
      {"reader.preprocess_time.max", K::kUsed},
      {"reader.preprocess_time.shape", K::kUsed},
      {"reader.preprocess_time.scale", K::kUsed},
      {"reader.preprocess_time.lam", K::kUsed},
      {"reader.preprocess_time_stdev", K::kUsed},
      {"reader.pin_memory", K::kNoEffect},
      {"reader.transformed_record_dims", K::kNotYet},
      {"reader.transformed_record_element_type", K::kNotYet},
      {"train.epochs", K::kUsed},
      {"train.total_training_steps", K::kUsed},
      {"train.seed_change_epoch", K::kUsed},
      {"train.computation_time", K::kUsed},
      {"train.computation_time.mean", K::kUsed},
      {"train.computation_time.stdev", K::kUsed},
      {"train.computation_time.type", K::kUsed},
      {"train.computation_time.min", K::kUsed},
      {"train.computation_time.max", K::kUsed},
      {"train.computation_time.shape", K::kUsed},
      {"train.computation_time.scale", K::kUsed},
      {"train.computation_time.lam", K::kUsed},
      {"train.computation_time_stdev", K::kUsed},
      {"train.seed", K::kUsed},
      {"evaluation.eval_time", K::kUsed},
      {"evaluation.eval_time_stdev", K::kUsed},
      {"evaluation.eval_after_epoch", K::kUsed},
      {"evaluation.epochs_between_evals", K::kUsed},
      {"checkpoint.checkpoint_folder", K::kNotYet},
      {"checkpoint.checkpoint_after_epoch", K::kUsed},
      {"checkpoint.epochs_between_checkpoints", K::kUsed},
      {"checkpoint.steps_between_checkpoints", K::kUsed},
      {"checkpoint.model_size", K::kNotYet},  // v0.5/v1.0 spelling
      {"checkpoint.type", K::kNotYet},
      {"checkpoint.checkpoint_mechanism_classname", K::kNoEffect},
      {"checkpoint.fsync", K::kNotYet},
      {"checkpoint.time_between_checkpoints", K::kNotYet},
      {"checkpoint.num_checkpoints_write", K::kNotYet},
      {"checkpoint.num_checkpoints_read", K::kNotYet},
      {"checkpoint.recovery_rank_shift", K::kNotYet},
      {"checkpoint.rank_sync", K::kNotYet},
      {"checkpoint.mode", K::kNotYet},
      {"checkpoint.randomize_tensor", K::kNotYet},
      {"checkpoint.ksm.madv_mergeable_id", K::kNoEffect},
      {"checkpoint.ksm.high_ram_trigger", K::kNoEffect},
      {"checkpoint.ksm.low_ram_exit", K::kNoEffect},
      {"checkpoint.ksm.await_time", K::kNoEffect},
      {"output.folder", K::kNoEffect},  // Feedrate uses --results-dir
      {"output.log_file", K::kNoEffect},
      {"output.metric.exclude_start_steps", K::kUsed},
      {"output.metric.exclude_end_steps", K::kUsed},
      {"profiling.profiler", K::kNoEffect},
      {"profiling.iostat_devices", K::kNoEffect},
      {"metric.au", K::kUsed},
      {"feedrate.keep_files_open", K::kUsed},
      {"feedrate.order", K::kUsed},
      {"feedrate.engine", K::kUsed},
      {"feedrate.queue_depth", K::kUsed},
      {"feedrate.batches_in_flight", K::kUsed},
      {"feedrate.access_pattern", K::kUsed},
      {"feedrate.rules", K::kUsed},
      {"feedrate.worker_collate", K::kUsed},
      {"feedrate.s3_part_size", K::kUsed},
      {"feedrate.s3_reader_window", K::kUsed},
      {"feedrate.verify_crc", K::kUsed},
      {"feedrate.coalesce_reads", K::kUsed},
      {"feedrate.decode", K::kUsed},
      {"feedrate.parquet_group_reads", K::kUsed},
      {"feedrate.compute", K::kUsed},
      {"feedrate.compute_memory_bytes", K::kUsed},
  };
  return kSchema;
}

// Sections whose whole subtree is free-form (Hydra's own settings, S3 options).
bool IsFreeForm(const std::string& dotted) {
  return dotted == "hydra" || dotted.starts_with("hydra.") || dotted == "defaults" ||
         dotted.starts_with("storage.storage_options.") || dotted.starts_with("checkpoint.ksm");
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const KeySupport* LookupKey(const std::string& dotted) {
  static const KeySupport kFree = KeySupport::kNoEffect;
  if (IsFreeForm(dotted)) return &kFree;
  auto it = Schema().find(dotted);
  return it == Schema().end() ? nullptr : &it->second;
}

bool IsKnownSection(const std::string& dotted) {
  std::string prefix = dotted + ".";
  for (const auto& [key, support] : Schema()) {
    if (key.starts_with(prefix)) return true;
  }
  return false;
}

std::string SuggestKey(const std::string& dotted) {
  std::string best;
  size_t best_d = std::max<size_t>(3, dotted.size() / 3) + 1;
  for (const auto& [key, support] : Schema()) {
    size_t d = EditDistance(dotted, key);
    // Also compare the last component alone, so "reader.batchsize" finds "reader.batch_size" and
    // "dataset.batch_size" finds "reader.batch_size".
    auto last = [](const std::string& s) { return s.substr(s.rfind('.') + 1); };
    size_t d_last = EditDistance(last(dotted), last(key)) + 1;
    d = std::min(d, d_last);
    if (d < best_d || (d == best_d && key < best)) {
      best_d = d;
      best = key;
    }
  }
  return best;
}

}  // namespace feedrate
