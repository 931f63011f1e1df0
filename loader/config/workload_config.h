// Workload configuration in DLIO's YAML schema (model, framework, workflow, dataset, reader, train,
// checkpoint, metric, ...): loading, v1.0 key aliases, --param/Hydra overrides and validation.
// Setup code: errors are thrown as ConfigError naming the file, the key and the cause.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "loader/util/choices.h"
#include "loader/util/time_draw.h"

namespace feedrate {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// dataset.parquet.columns[]: one column of a Parquet dataset (MLPerf Storage v3.0's schema: name, dtype, size >1
// for a fixed-size list of `size` values, read: whether training reads it).
struct ParquetColumn {
  std::string name;
  std::string dtype = "float32";  // int8..int64, uint8..uint64, float16, float32, float64, bool
  uint64_t size = 1;
  bool read = true;
};

struct WorkloadConfig {
  std::string source;      // the file it came from ("built-in workload <name>" for built-ins)
  bool builtin = false;    // one of Feedrate's built-in (MLPerf) workloads
  std::vector<std::string> overridden_keys;  // canonical keys set by overrides, in order (rule checks)
  std::string name;        // workload name: built-in name or file stem
  std::string model_name;  // model.name
  std::string framework = "pytorch";

  // workflow
  bool do_train = true;
  bool do_eval = false;
  bool do_checkpoint = false;
  // DLIO's schedule of checkpoints during training: after epoch checkpoint_after_epoch, then every
  // epochs_between_checkpoints epochs; or, when steps_between_checkpoints >= 0, every that many steps instead.
  uint64_t checkpoint_after_epoch = 1;
  uint64_t epochs_between_checkpoints = 1;
  int64_t steps_between_checkpoints = -1;

  // storage (DLIO's storage section): local_fs, or s3 with storage_root = the bucket and data_folder the prefix
  std::string storage_type = "local_fs";
  std::string storage_root;     // s3: the bucket
  std::string s3_endpoint;      // storage.storage_options.endpoint_url ("": AWS's)
  std::string s3_region = "us-east-1";
  bool s3_path_style = true;    // storage.storage_options.s3_force_path_style
  bool on_s3() const { return storage_type == "s3"; }
  // The dataset's location as results name it: the folder, or s3://bucket/prefix.
  std::string DataLocation() const;
  // s3: the key prefix dataset.data_folder names ("./data/" -> "data"; "" = the bucket root).
  std::string S3DataPrefix() const;

  // dataset
  std::string data_folder = "./data/";
  DataFormat format = DataFormat::kTfRecord;
  std::string file_prefix = "img";
  uint64_t num_files_train = 8;
  uint64_t num_files_eval = 0;
  uint64_t num_samples_per_file = 1;
  uint64_t num_subfolders_train = 0;
  uint64_t num_subfolders_eval = 0;
  double record_length = 65536;        // bytes (may be fractional, e.g. resnet50)
  bool record_length_given = false;    // dataset.record_length_bytes is in the config (else DLIO's default above)
  double record_length_stdev = 0;
  std::string compression = "none";
  // dataset.parquet (format: parquet): the columns (empty: DLIO's legacy single `data` column of record_length
  // uint8 values), rows per row group, and the read mode (row_group: each row group's selected-column span).
  std::vector<ParquetColumn> parquet_columns;
  uint64_t parquet_row_group_size = 1024;
  std::string parquet_read_mode = "row_group";
  // feedrate.parquet_group_reads: "split" (a row group's span split among its rows) or "whole" (its first row
  // reads the span in one request, as DLIO's reader; page headers checked). feedrate.decode reads whole.
  std::string parquet_group_reads = "split";
  bool ParquetWholeGroups() const { return parquet_group_reads == "whole" || decode; }
  std::vector<std::string> storage_columns;  // storage.storage_options.columns
  // The columns training reads: those marked read (all when none is marked false), or
  // storage.storage_options.columns when set (DLIO_local_changes' reader option). Empty: all.
  std::vector<std::string> ParquetSelectedColumns() const;

  // reader
  DataLoader data_loader = DataLoader::kPyTorch;
  uint64_t batch_size = 1;
  uint64_t batch_size_eval = 1;        // reader.batch_size_eval (DLIO default 1)
  uint64_t read_threads = 1;
  // Batches one accelerator has in flight, as DLIO's loader for these settings keeps them (DlioBatchesInFlight), or
  // feedrate.batches_in_flight: the Prefetcher's batches in flight, and the slots of retained or staged batches.
  uint64_t batches_in_flight = 2;
  uint64_t prefetch_size = 2;            // reader.prefetch_size (DLIO's default): shapes batches_in_flight only
  bool batches_in_flight_given = false;  // feedrate.batches_in_flight set: DLIO's depth no longer applies
  uint64_t transfer_size = 1 << 20;    // DLIO default is None; Feedrate reads in 1 MiB transfers
  uint64_t tf_buffer_size = 256 << 10; // TFRecordDataset's buffer_size: reader.transfer_size when set (DLIO passes
                                       // it), else TensorFlow's default for None, 256 KiB
  std::string file_shuffle = "off";
  // reader.file_shuffle given at all: DLIO compares the raw YAML value with its Shuffle.OFF enum (utils/config.py
  // LoadConfig does not convert it), so any value given, "off" included, shuffles its files.
  bool file_shuffle_given = false;
  bool main_process_reads = false;     // reader.read_threads 0: DLIO reads in the main process (read_threads then 1)
  std::string sample_shuffle = "off";
  uint64_t shuffle_size = 1024;        // reader.shuffle_size: TensorFlow path record shuffle buffer
  std::string read_type = "on_demand";
  bool odirect = false;                // reader.odirect: O_DIRECT reads (aligned windows)
  // reader.preprocess_time: seconds each DataLoader worker sleeps after each sample's reads (DLIO's
  // FormatReader.preprocess), before its next sample; PyTorch's loader only (DLIO's TFReader does not call it).
  TimeDistribution preprocess_time;

  // train
  uint64_t epochs = 1;
  int64_t total_training_steps = -1;
  bool seed_change_epoch = true;
  int64_t seed = 123;
  TimeDistribution computation_time;  // seconds per batch

  // evaluation (workflow.evaluation): after epoch eval_after_epoch, then every epochs_between_evals epochs
  double eval_time = 0;                // seconds per evaluation batch
  double eval_time_stdev = 0;
  uint64_t eval_after_epoch = 1;
  uint64_t epochs_between_evals = 1;

  // output.metric and metric
  uint64_t metric_exclude_start_steps = 1;
  uint64_t metric_exclude_end_steps = 0;
  double au = 0.90;

  // feedrate extensions (section "feedrate:")
  // feedrate.access_pattern: "dlio" replays each sample's DLIO reader calls (open, fstat, its reads in order, close)
  // with one lane per DataLoader worker (docs/dlio-compatibility.md); "coalesced" reads each extent in
  // reader.transfer_size reads, the storage's best case (OPEN).
  std::string access_pattern = "dlio";
  // feedrate.rules (the commands' --rules): the MLPerf Storage rules edition whose DLIO the run emulates: how it
  // reads, orders, restarts, flushes and counts (loader/util/dlio_edition.h). Default v3.0, the round rehearsed now.
  DlioEdition rules = DlioEdition::kV3_0;
  // feedrate.s3_part_size: DLIO's S3 readers (s3torchconnector over the AWS CRT) fetch an object larger than this as
  // a first ranged GET of this many bytes, then the rest in GETs of this many at once; s3torchconnector's
  // S3ClientConfig.part_size default, which DLIO does not change.
  uint64_t s3_part_size = 8 << 20;
  // feedrate.s3_reader_window: whole-object GETs each DataLoader worker keeps in flight on an S3 dataset under the
  // DLIO pattern. 1: DLIO e1919d7's S3 readers (one sample at a time, its parts as the CRT fetches them); more: the
  // iterable S3 readers of newer DLIO (DLIO_local_changes `_s3_iterable_mixin.py`: a window of 64 whole-object GETs
  // per worker with s3dlio, mlpstorage v3.0's default library), each sample one GET.
  uint64_t s3_reader_window = 1;
  bool keep_files_open = false;        // default: open/close per sample, like DLIO's on_demand reader
  uint64_t record_length_resize = 0;   // dataset.record_length_bytes_resize: DLIO's resized_image is its square root,
                                       // squared (else the record length's)
  // feedrate.worker_collate: each DataLoader worker's lane copies its batch's resized images into fresh memory
  // after the batch's reads, as DLIO's PyTorch worker collates (DlioEngineOptions::collate_sample_bytes); false:
  // the storage's best case, the lanes read on at once.
  bool worker_collate = true;
  SampleOrder order = SampleOrder::kDlio;  // DLIO v2.0 order, or a seeded per-epoch shuffle
  EngineKind engine = EngineKind::kAuto;   // io_uring, else POSIX; uring; posix
  uint64_t queue_depth = 0;            // reads in flight per I/O thread (uring); 0 = 1 buffered, 16 O_DIRECT
  bool verify_crc = true;              // TFRecord: check each record's payload CRC-32C (TensorFlow's reader does)
  bool coalesce_reads = true;          // read back-to-back samples (TFRecord records) in reader.transfer_size reads
  bool decode = false;                 // feedrate.decode (alias decode_images): JPEG/PNG decoded on the I/O threads,
                                       // as DLIO's PIL reader does (Parquet pages: not yet)
  ComputeKind compute = ComputeKind::kSleep;  // feedrate.compute: sleep (DLIO's), or a kernel on the GPU (docs/gpu.md)
  uint64_t compute_memory_bytes = 0;   // feedrate.compute_memory_bytes: device memory each accelerator's kernel
                                       // streams through while it spins (loads HBM); 0: spin only

  YAML::Node tree;                     // resolved tree after aliases and overrides (written to config.yaml)
  std::vector<std::string> warnings;   // keys present that Feedrate accepts but does not implement yet, except...
  std::vector<std::string> checkpoint_keys;  // ...those that shape training checkpoints (workflow.checkpoint,
                                             // checkpoint.*, model.*): TrainingCheckpointNote speaks for them
};

// Loads a built-in workload by name (e.g. "unet3d_h100") or a DLIO workload YAML file by path, applies
// overrides ("dataset.num_files_train=16", "++workload.train.epochs=2", "++reader.batch_size=4"), validates.
WorkloadConfig LoadWorkload(const std::string& name_or_path, const std::vector<std::string>& overrides);
// True when `name_or_path` is a workload file (not a built-in) that sets dataset.data_folder itself, as DLIO's
// workload files do: the dataset's location then needs no --data-dir. Also true for a file that cannot be read
// or parsed (LoadWorkload reports that).
bool WorkloadFileNamesItsData(const std::string& name_or_path);
// Same from YAML text (used by tests and for built-ins); `source` names it in errors.
WorkloadConfig ParseWorkload(const std::string& yaml_text, const std::string& source, const std::string& name,
                             const std::vector<std::string>& overrides);

// The checkpoints DLIO would write during this training run (`feedrate run` writes none): empty when it writes
// none (workflow.checkpoint off, or the first falls after the last epoch); otherwise one line saying when, what
// Feedrate does instead and what to run to measure them, naming the keys that shape them.
std::string TrainingCheckpointNote(const WorkloadConfig& c);

// Batches DLIO's loader keeps in flight per accelerator for these reader settings (raw key values, 0 included):
// PyTorch's DataLoader holds read_threads x prefetch_factor, DLIO setting prefetch_factor = ceil(prefetch_size /
// read_threads), or 2 when that is 0; TensorFlow's prefetch(prefetch_size); DALI's prefetch_queue_depth
// (prefetch_size, 2 when 0). At least 1: with read_threads 0 DLIO's PyTorch loader reads a batch only when the step
// asks for it, which Feedrate does not emulate (it overlaps one batch with the compute).
uint64_t DlioBatchesInFlight(DataLoader loader, uint64_t read_threads, uint64_t prefetch_size);
// MLPerf Storage v3.0's DLIO turns reader.read_threads 1 (its default) into the node's CPUs per rank, at most
// DLIO_MAX_AUTO_THREADS (8 when unset) (utils/config.py LoadConfig, "PR-5"): `host_cpus` the node's online CPUs,
// `ranks_on_host` DLIO's ranks there (the accelerators emulated on this host), `cap_env` that variable's value (nullptr
// when unset; read only under an edition that sizes, and refused there when not an integer, as DlioMaxAutoThreads
// says). Sets read_threads and the batches in flight that follow from it (unless feedrate.batches_in_flight sets them)
// where the edition does this, and returns the line that says so ("" where nothing changed).
std::string SizeReadThreadsForHost(WorkloadConfig* c, uint64_t host_cpus, uint64_t ranks_on_host, const char* cap_env);
// DLIO_MAX_AUTO_THREADS as v3.0's DLIO reads it: 8 when unset, at least 1; a value that is not an integer throws
// ConfigError (the fork's int() fails on it too).
uint64_t DlioMaxAutoThreads(const char* value);
// The batches TensorFlow's TFRecord pipeline reads ahead of its prefetch(prefetch_size): ParallelInterleave's
// read_threads current and 2 x read_threads prefetched files buffer 2 records each, and shuffle(shuffle_size) fills
// its buffer (0 when sample_shuffle is off), in batches of `batch` records. Added where TensorFlow's stream is
// replayed (run_engine.cpp), where the requests' waits make it count and the bytes need no batch memory.
uint64_t TfRecordReadAhead(uint64_t read_threads, uint64_t shuffle_records, uint64_t batch);

// Built-in workload YAML texts, embedded at build time from workloads/*.yaml.
const std::map<std::string, std::string_view>& BuiltinWorkloads();

// Schema of DLIO's configuration keys (dotted paths), used for validation and suggestions.
enum class KeySupport { kUsed, kNoEffect, kNotYet };
// Returns the support level for a dotted key, or nullptr if DLIO does not know it.
const KeySupport* LookupKey(const std::string& dotted);
// True when some known key lives below `dotted` (e.g. "reader", "model.parallelism").
bool IsKnownSection(const std::string& dotted);
// The known key closest to `dotted` (edit distance), or "" if nothing is close.
std::string SuggestKey(const std::string& dotted);

// The one rule for credential-bearing names (config keys, --param keys, Hydra overrides), case-insensitive:
// *access_key*, *private_key*, *api_key*, *secret*, *password*, *passwd*, *credential*, and the words token, auth,
// authorization. Workload settings with such keys are refused (ConfigError, the value never printed).
bool IsSecretKey(std::string_view key);
// `text` (a command line) with the value of every key=value whose key IsSecretKey and the user:password of every
// URL replaced by "<redacted>": what results record of a command line.
std::string RedactSecrets(std::string_view text);

}  // namespace feedrate
