// Workload loading: built-ins, v1.0 aliases, the three override spellings, unknown keys, bad values.
#include <gtest/gtest.h>

#include "loader/config/workload_config.h"
#include "test_util.h"

namespace feedrate {
namespace {

WorkloadConfig Parse(const std::string& yaml, const std::vector<std::string>& ov = {}) {
  return ParseWorkload(yaml, "test.yaml", "test", ov);
}

std::string ErrorOf(const std::string& yaml, const std::vector<std::string>& ov = {}) {
  try {
    Parse(yaml, ov);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, BuiltinUnet3dH100) {
  auto c = LoadWorkload("unet3d_h100", {});
  EXPECT_EQ(c.format, DataFormat::kNpz);
  EXPECT_EQ(c.num_files_train, 168u);
  EXPECT_EQ(c.batch_size, 7u);
  EXPECT_DOUBLE_EQ(c.computation_time.mean, 0.323);
  EXPECT_DOUBLE_EQ(c.record_length, 146600628);
  EXPECT_DOUBLE_EQ(c.record_length_stdev, 68341808);
  EXPECT_EQ(c.read_threads, 4u);
  EXPECT_EQ(c.epochs, 5u);
  EXPECT_DOUBLE_EQ(c.au, 0.90);
  EXPECT_EQ(c.data_loader, DataLoader::kPyTorch);
  EXPECT_EQ(c.sample_shuffle, "seed");
  EXPECT_EQ(BuiltinWorkloads().size(), 30u);  // 26 training workloads, 4 llama3 checkpoint workloads
  EXPECT_EQ(LoadWorkload("unet3d_b200", {}).num_files_train, 7200u);
  EXPECT_DOUBLE_EQ(LoadWorkload("unet3d_v100", {}).computation_time.mean, 1.3604);
  EXPECT_EQ(LoadWorkload("unet3d_a100", {}).batch_size, 7u);
}

// Batches in flight per accelerator follow DLIO's loaders: PyTorch's DataLoader holds workers x prefetch_factor
// (DLIO: ceil(prefetch_size / read_threads), 2 when 0), TensorFlow's prefetch(prefetch_size), DALI's queue depth.
TEST(Config, LoaderDepthIsDliosBatchesInFlight) {
  EXPECT_EQ(LoadWorkload("unet3d_h100", {}).batches_in_flight, 4u);  // 4 workers x ceil(2 / 4)
  EXPECT_EQ(LoadWorkload("resnet50_h100", {}).batches_in_flight, 2u);  // tf.data prefetch(2)
  // What TensorFlow's TFRecord pipeline reads ahead of that (added where its stream is replayed): the interleave's
  // 3 x read_threads files x 2 records, and the shuffle buffer: ResNet-50 one more batch of 400, CosmoFlow 26 of 1.
  EXPECT_EQ(TfRecordReadAhead(8, 0, 400), 1u);
  EXPECT_EQ(TfRecordReadAhead(4, 2, 1), 26u);
  EXPECT_EQ(DlioBatchesInFlight(DataLoader::kPyTorch, 4, 2), 4u);
  EXPECT_EQ(DlioBatchesInFlight(DataLoader::kPyTorch, 4, 9), 12u);  // 4 x ceil(9 / 4)
  EXPECT_EQ(DlioBatchesInFlight(DataLoader::kPyTorch, 1, 3), 3u);
  EXPECT_EQ(DlioBatchesInFlight(DataLoader::kPyTorch, 3, 0), 6u);  // prefetch_size 0: torch's default factor 2
  EXPECT_EQ(DlioBatchesInFlight(DataLoader::kPyTorch, 0, 2), 1u);  // no workers: DLIO reads on demand, Feedrate 1 ahead
  EXPECT_EQ(DlioBatchesInFlight(DataLoader::kTensorFlow, 8, 5), 5u);
  EXPECT_EQ(DlioBatchesInFlight(DataLoader::kTensorFlow, 8, 0), 1u);
  EXPECT_EQ(DlioBatchesInFlight(DataLoader::kDali, 8, 0), 2u);
  const std::string yaml = "model: {name: m}\nframework: pytorch\ndataset: {num_files_train: 8}\n";
  EXPECT_EQ(Parse(yaml, {"reader.read_threads=0"}).batches_in_flight, 1u);
  EXPECT_EQ(Parse(yaml, {"reader.read_threads=8", "reader.prefetch_size=0"}).batches_in_flight, 16u);
  EXPECT_EQ(Parse(yaml, {"framework=tensorflow", "reader.read_threads=8"}).batches_in_flight, 2u);
  EXPECT_EQ(Parse(yaml, {"reader.read_threads=8", "feedrate.batches_in_flight=3"}).batches_in_flight, 3u);
  EXPECT_NE(ErrorOf(yaml, {"feedrate.batches_in_flight=0"}).find("feedrate.batches_in_flight"), std::string::npos);
  EXPECT_NE(ErrorOf(yaml, {"feedrate.batches_in_flight=5000"}).find("must be <= 4096"), std::string::npos);
  EXPECT_NE(ErrorOf(yaml, {"reader.read_threads=5000"})
                .find("reader.read_threads 5000 and reader.prefetch_size 2 keep 5000 batches in flight"),
            std::string::npos);
}

// The TensorFlow-path workloads: numbers from the MLPerf Storage v2.0 / DLIO tables (reference spec 1.1).
// v3.0's DLIO turns reader.read_threads 1 (its default) into the node's CPUs per rank, at most
// DLIO_MAX_AUTO_THREADS (utils/config.py "PR-5"); the batches in flight follow as its prefetch factor does.
TEST(Config, V3SizesOneReadThreadToTheHostsCpusPerRank) {
  const std::string yaml = "model: {name: m}\nframework: pytorch\ndataset: {num_files_train: 8}\n";
  WorkloadConfig c = Parse(yaml, {"reader.read_threads=1"});
  const std::string note = SizeReadThreadsForHost(&c, 16, 2, "8");
  EXPECT_EQ(c.read_threads, 8u) << "16 CPUs / 2 ranks, at most 8";
  EXPECT_EQ(c.batches_in_flight, 8u) << "8 workers x ceil(2 / 8)";
  EXPECT_NE(note.find("reader.read_threads 1 sized to 8 DataLoader workers per accelerator"), std::string::npos)
      << note;
  EXPECT_NE(note.find("16 CPUs / 2 accelerator(s) on this host, at most DLIO_MAX_AUTO_THREADS 8"), std::string::npos)
      << note;
  WorkloadConfig few = Parse(yaml, {"reader.read_threads=1", "reader.prefetch_size=9"});
  SizeReadThreadsForHost(&few, 6, 2, "8");
  EXPECT_EQ(few.read_threads, 3u);
  EXPECT_EQ(few.batches_in_flight, 9u) << "3 x ceil(9 / 3)";
  WorkloadConfig asked = Parse(yaml, {"reader.read_threads=1", "feedrate.batches_in_flight=5"});
  SizeReadThreadsForHost(&asked, 4, 1, "8");
  EXPECT_EQ(asked.read_threads, 4u);
  EXPECT_EQ(asked.batches_in_flight, 5u) << "feedrate.batches_in_flight stands";
  // What it leaves: other values, the main process (0), one CPU a rank, a cap of 1, the other editions.
  for (const auto& ov : std::vector<std::vector<std::string>>{{"reader.read_threads=2"},
                                                              {"reader.read_threads=0"},
                                                              {"reader.read_threads=1", "feedrate.rules=upstream"},
                                                              {"reader.read_threads=1", "feedrate.rules=v2.0"}}) {
    WorkloadConfig same = Parse(yaml, ov);
    const uint64_t threads = same.read_threads, depth = same.batches_in_flight;
    EXPECT_EQ(SizeReadThreadsForHost(&same, 16, 1, "8"), "") << ov.back();
    EXPECT_EQ(same.read_threads, threads) << ov.back();
    EXPECT_EQ(same.batches_in_flight, depth) << ov.back();
  }
  WorkloadConfig one = Parse(yaml, {"reader.read_threads=1"});
  EXPECT_EQ(SizeReadThreadsForHost(&one, 4, 4, "8"), "");
  EXPECT_EQ(SizeReadThreadsForHost(&one, 16, 1, "1"), "");
  EXPECT_EQ(one.read_threads, 1u);
  EXPECT_EQ(DlioMaxAutoThreads(nullptr), 8u);
  EXPECT_EQ(DlioMaxAutoThreads("2"), 2u);
  EXPECT_EQ(DlioMaxAutoThreads("0"), 1u);
  EXPECT_THROW(DlioMaxAutoThreads("two"), ConfigError);
  // The variable is read where the edition sizes, whatever read_threads is (the fork's int() comes first); never
  // under the others.
  WorkloadConfig four = Parse(yaml, {"reader.read_threads=4"});
  EXPECT_THROW(SizeReadThreadsForHost(&four, 16, 1, "two"), ConfigError);
  WorkloadConfig up = Parse(yaml, {"reader.read_threads=1", "feedrate.rules=upstream"});
  EXPECT_EQ(SizeReadThreadsForHost(&up, 16, 1, "two"), "");
}

TEST(Config, BuiltinTfRecordWorkloads) {
  auto r = LoadWorkload("resnet50_h100", {});
  EXPECT_EQ(r.format, DataFormat::kTfRecord);
  EXPECT_EQ(r.data_loader, DataLoader::kTensorFlow);
  EXPECT_EQ(r.num_files_train, 1024u);
  EXPECT_EQ(r.num_samples_per_file, 1251u);
  EXPECT_DOUBLE_EQ(r.record_length, 114660.07);
  EXPECT_EQ(r.batch_size, 400u);
  EXPECT_DOUBLE_EQ(r.computation_time.mean, 0.224);
  EXPECT_EQ(r.read_threads, 8u);
  EXPECT_DOUBLE_EQ(LoadWorkload("resnet50_a100", {}).computation_time.mean, 0.435);
  EXPECT_EQ(LoadWorkload("resnet50_v100", {}).batch_size, 64u);
  auto c = LoadWorkload("cosmoflow_h100", {});
  EXPECT_EQ(c.num_files_train, 524288u);
  EXPECT_DOUBLE_EQ(c.record_length, 2828486);
  EXPECT_DOUBLE_EQ(c.record_length_stdev, 71311);
  EXPECT_DOUBLE_EQ(c.computation_time.mean, 0.0035);
  EXPECT_DOUBLE_EQ(c.au, 0.70);
  EXPECT_DOUBLE_EQ(LoadWorkload("cosmoflow_a100", {}).computation_time.mean, 0.00551);
  EXPECT_DOUBLE_EQ(LoadWorkload("cosmoflow_v100", {}).computation_time.mean, 0.00936);
  auto b = LoadWorkload("bert_v100", {});
  EXPECT_EQ(b.file_prefix, "part");
  EXPECT_EQ(b.num_samples_per_file, 313532u);
  EXPECT_DOUBLE_EQ(b.record_length, 2500);
  EXPECT_EQ(b.batch_size, 48u);
  EXPECT_EQ(b.total_training_steps, 1000);
  EXPECT_EQ(b.transfer_size, 262144u);
  EXPECT_TRUE(b.verify_crc);
}

TEST(Config, OverrideSpellingsAllSetTheSameKey) {
  for (const char* ov : {"dataset.num_files_train=16", "++workload.dataset.num_files_train=16",
                         "++dataset.num_files_train=16", "+dataset.num_files_train=16"}) {
    auto c = LoadWorkload("unet3d_h100", {ov});
    EXPECT_EQ(c.num_files_train, 16u) << ov;
    EXPECT_EQ(c.tree["dataset"]["num_files_train"].as<int>(), 16) << ov;
  }
}

TEST(Config, V1SpellingsAreAliases) {
  auto c = Parse("dataset:\n  record_length: 1000\n  record_length_stdev: 10\ndata_reader:\n  batch_size: 3\n");
  EXPECT_DOUBLE_EQ(c.record_length, 1000);
  EXPECT_DOUBLE_EQ(c.record_length_stdev, 10);
  EXPECT_EQ(c.batch_size, 3u);
  auto o = LoadWorkload("unet3d_h100", {"dataset.record_length=2048"});
  EXPECT_DOUBLE_EQ(o.record_length, 2048);
  EXPECT_NE(ErrorOf("dataset:\n  record_length: 1\n  record_length_bytes: 2\n").find("both"), std::string::npos);
}

TEST(Config, UnknownKeysFailWithSuggestion) {
  std::string e = ErrorOf("reader:\n  batchsize: 4\n");
  EXPECT_NE(e.find("test.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("reader.batchsize"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'reader.batch_size'"), std::string::npos) << e;
  e = ErrorOf("", {"train.epoch=3"});
  EXPECT_NE(e.find("did you mean 'train.epochs'"), std::string::npos) << e;
  EXPECT_NE(ErrorOf("bogus_section:\n  x: 1\n").find("unknown key 'bogus_section'"), std::string::npos);
  // YAML's "? key" form (found by fuzz_workload): a map used as a key is refused, not a crash.
  e = ErrorOf("dataset:\n  format: npz\n? num_samples_per_file: 1\n");
  EXPECT_NE(e.find("is a YAML map, not a name (line 3)"), std::string::npos) << e;
}

TEST(Config, DlioKeysNotImplementedAreWarnedNotRejected) {
  auto c = Parse("dataset:\n  format: npz\n  compression_level: 4\n");
  EXPECT_NE(std::find(c.warnings.begin(), c.warnings.end(), "dataset.compression_level"), c.warnings.end());
  // Python-only knobs are accepted silently; Hydra's own section is free-form.
  auto p = Parse("reader:\n  pin_memory: True\n  multiprocessing_context: spawn\nhydra:\n  run:\n    dir: x\n");
  EXPECT_TRUE(p.warnings.empty());
}

// Training checkpoints follow DLIO's schedule (main.py): a note only when one falls within the run, naming when,
// what to run instead and the keys that have no effect; the checkpoint keys are not listed as unimplemented.
TEST(Config, TrainingCheckpointNoteOnlyWhenDlioWouldWriteOne) {
  auto c = LoadWorkload("unet3d_h100", {"train.epochs=3"});  // after epoch 5, every 2: none in 3 epochs
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  EXPECT_EQ(TrainingCheckpointNote(c), "");
  c = LoadWorkload("unet3d_h100", {});  // 5 epochs
  std::string note = TrainingCheckpointNote(c);
  EXPECT_NE(note.find("a checkpoint after epoch 5 of this run"), std::string::npos) << note;
  EXPECT_NE(note.find("`feedrate checkpoint`"), std::string::npos) << note;
  EXPECT_NE(note.find("checkpoint.checkpoint_folder"), std::string::npos) << note;
  c = LoadWorkload("unet3d_h100", {"train.epochs=9"});
  EXPECT_NE(TrainingCheckpointNote(c).find("after epochs 5, 7, 9 of"), std::string::npos) << TrainingCheckpointNote(c);
  c = LoadWorkload("unet3d_h100", {"train.epochs=20", "checkpoint.epochs_between_checkpoints=1"});
  EXPECT_NE(TrainingCheckpointNote(c).find("after epochs 5, 6, 7, 8, ... (16 in all) of"), std::string::npos)
      << TrainingCheckpointNote(c);
  c = LoadWorkload("unet3d_h100", {"train.epochs=1", "checkpoint.steps_between_checkpoints=50"});
  EXPECT_NE(TrainingCheckpointNote(c).find("every 50 steps"), std::string::npos) << TrainingCheckpointNote(c);
  c = LoadWorkload("unet3d_h100", {"workflow.checkpoint=False"});
  EXPECT_EQ(TrainingCheckpointNote(c), "");
  c = LoadWorkload("unet3d_b200", {});  // checkpoint off: its model.* keys are no one's business
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  EXPECT_EQ(TrainingCheckpointNote(c), "");
}

TEST(Config, BadValuesNameKeyAndValue) {
  std::string e = ErrorOf("reader:\n  batch_size: -1\n");
  EXPECT_NE(e.find("reader.batch_size"), std::string::npos) << e;
  EXPECT_NE(e.find("-1"), std::string::npos) << e;
  EXPECT_NE(ErrorOf("dataset:\n  format: zarr\n").find("expected one of"), std::string::npos);
  EXPECT_NE(ErrorOf("metric:\n  au: 1.5\n").find("metric.au"), std::string::npos);
  EXPECT_NE(ErrorOf("train:\n  epochs: lots\n").find("train.epochs"), std::string::npos);
  EXPECT_NE(ErrorOf("{not: [valid").find("not valid YAML"), std::string::npos);
  EXPECT_NE(ErrorOf("", {"novalue"}).find("key.path=value"), std::string::npos);
}

// The closed sets are parsed once, where the workload is read: every name parses back to its value, the overrides
// reach the typed fields, and a name outside a set is an error that lists the set.
TEST(Config, ClosedSetsParseOnceIntoEnums) {
  for (std::string_view n : Names<DataFormat>()) EXPECT_EQ(Name(*feedrate::Parse<DataFormat>(n)), n);
  for (std::string_view n : Names<DataLoader>()) EXPECT_EQ(Name(*feedrate::Parse<DataLoader>(n)), n);
  for (std::string_view n : Names<SampleOrder>()) EXPECT_EQ(Name(*feedrate::Parse<SampleOrder>(n)), n);
  for (std::string_view n : Names<EngineKind>()) EXPECT_EQ(Name(*feedrate::Parse<EngineKind>(n)), n);
  EXPECT_EQ(Names<DataFormat>().size(), 11u);
  EXPECT_FALSE(feedrate::Parse<DataFormat>("jpg").has_value());  // DLIO's FormatType spells it jpeg
  EXPECT_FALSE(feedrate::Parse<EngineKind>("").has_value());
  auto c = Parse("dataset: {format: indexed_binary}\nreader: {data_loader: dali}\n",
                 {"feedrate.engine=posix", "feedrate.order=shuffled"});
  EXPECT_EQ(c.format, DataFormat::kIndexedBinary);
  EXPECT_EQ(c.data_loader, DataLoader::kDali);
  EXPECT_EQ(c.engine, EngineKind::kPosix);
  EXPECT_EQ(c.order, SampleOrder::kShuffled);
  EXPECT_EQ(Parse("framework: tensorflow\n").data_loader, DataLoader::kTensorFlow);
  const std::string e = ErrorOf("feedrate:\n  engine: spdk\n");
  EXPECT_NE(e.find("feedrate.engine"), std::string::npos) << e;
  EXPECT_NE(e.find("expected one of auto, posix, uring"), std::string::npos) << e;
}

TEST(Config, ComputationTimeForms) {
  EXPECT_DOUBLE_EQ(Parse("train:\n  computation_time: 0.5\n").computation_time.mean, 0.5);
  auto d = Parse("train:\n  computation_time:\n    mean: 0.2\n    stdev: 0.01\n");
  EXPECT_DOUBLE_EQ(d.computation_time.mean, 0.2);
  EXPECT_DOUBLE_EQ(d.computation_time.stdev, 0.01);
  auto s = Parse("train:\n  computation_time: 0.2\n  computation_time_stdev: 0.03\n");
  EXPECT_DOUBLE_EQ(s.computation_time.stdev, 0.03);
}

// reader.preprocess_time takes DLIO's forms (config.py: a number, a map, a typed distribution; _stdev beside it).
TEST(Config, PreprocessTimeForms) {
  EXPECT_DOUBLE_EQ(Parse("reader:\n  preprocess_time: 0.004\n").preprocess_time.mean, 0.004);
  EXPECT_TRUE(TimeDraw(Parse("train:\n  computation_time: 0.1\n").preprocess_time, 1).zero());  // none by default
  auto d = Parse("reader:\n  preprocess_time:\n    mean: 0.2\n    stdev: 0.01\n");
  EXPECT_DOUBLE_EQ(d.preprocess_time.stdev, 0.01);
  EXPECT_EQ(d.preprocess_time.type, "normal");
  auto s = Parse("reader:\n  preprocess_time: 0.2\n  preprocess_time_stdev: 0.03\n");
  EXPECT_EQ(s.preprocess_time.type, "normal");
  EXPECT_DOUBLE_EQ(s.preprocess_time.stdev, 0.03);
  auto u = Parse("reader:\n  preprocess_time: {type: uniform, min: 0.1, max: 0.3}\n");
  EXPECT_DOUBLE_EQ(u.preprocess_time.mean, 0.2);
  const std::string e = ErrorOf("reader:\n  preprocess_time: {type: gamma, shape: 0, scale: 1}\n");
  EXPECT_NE(e.find("reader.preprocess_time"), std::string::npos) << e;
  EXPECT_NE(ErrorOf("reader:\n  preprocess_time: {mean: 0.1, sigma: 2}\n").find("reader.preprocess_time.sigma"),
            std::string::npos);
}

TEST(Config, ShuffleOffReadsAsOffNotBoolean) {
  // YAML 1.1 turns a bare `off` into false; DLIO's value is the string "off".
  auto c = Parse("reader:\n  sample_shuffle: off\n  file_shuffle: seed\n");
  EXPECT_EQ(c.sample_shuffle, "off");
  EXPECT_EQ(c.file_shuffle, "seed");
}

TEST(Config, MissingFileIsAClearError) {
  try {
    LoadWorkload("/no/such/workload.yaml", {});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unet3d_h100"), std::string::npos);  // lists the built-ins
  }
}

}  // namespace
}  // namespace feedrate

namespace feedrate {
namespace {

// DLIO's storage section: s3 with the bucket in storage_root and the prefix in data_folder.
TEST(Config, S3StorageSection) {
  const std::string yaml = "dataset: {format: npz, data_folder: ./sets/unet3d/}\n"
                           "storage: {storage_type: s3, storage_root: bkt, storage_options: {endpoint_url: "
                           "'http://127.0.0.1:7480', region: eu-west-1, s3_force_path_style: false}}\n";
  auto c = Parse(yaml);
  EXPECT_TRUE(c.on_s3());
  EXPECT_EQ(c.storage_root, "bkt");
  EXPECT_EQ(c.s3_endpoint, "http://127.0.0.1:7480");
  EXPECT_EQ(c.s3_region, "eu-west-1");
  EXPECT_FALSE(c.s3_path_style);
  EXPECT_EQ(c.S3DataPrefix(), "sets/unet3d");
  EXPECT_EQ(c.DataLocation(), "s3://bkt/sets/unet3d");
  EXPECT_EQ(Parse(yaml, {"dataset.data_folder=./"}).DataLocation(), "s3://bkt");
  EXPECT_EQ(Parse("dataset: {data_folder: /d}\n").DataLocation(), "/d");
  EXPECT_FALSE(Parse("dataset: {data_folder: /d}\n").on_s3());
  EXPECT_NE(ErrorOf("storage: {storage_type: s3}\n").find("storage.storage_root (the bucket) is not set"), std::string::npos);
  EXPECT_NE(ErrorOf("storage: {storage_type: s3, storage_root: b, storage_options: {access_key_id: AKIA}}\n")
                .find("storage.storage_options.access_key_id: looks like a credential; Feedrate takes S3 credentials from"),
            std::string::npos);
  EXPECT_NE(ErrorOf("storage: {storage_type: gcs}\n").find("storage.storage_type"), std::string::npos);
}

// Whether a workload names its dataset's location itself (then run/datagen need no --data-dir).
TEST(Config, WorkloadFileNamesItsDataOnlyWhenItSetsDataFolder) {
  test::TempDir dir;
  const std::string own = dir / "own.yaml", wrapped = dir / "wrapped.yaml", bare = dir / "bare.yaml";
  test::WriteFile(own, "dataset: {data_folder: /mnt/d, format: npz}\n");
  test::WriteFile(wrapped, "workload:\n  dataset: {data_folder: /mnt/d}\n");
  test::WriteFile(bare, "dataset: {format: npz}\n");
  EXPECT_TRUE(WorkloadFileNamesItsData(own));
  EXPECT_TRUE(WorkloadFileNamesItsData(wrapped));
  EXPECT_FALSE(WorkloadFileNamesItsData(bare));
  EXPECT_FALSE(WorkloadFileNamesItsData("unet3d_h100"));  // built-ins name a default folder, not the user's
  EXPECT_EQ(LoadWorkload(wrapped, {}).data_folder, "/mnt/d");
}

}  // namespace
}  // namespace feedrate

namespace feedrate {
namespace {

TEST(Config, ParquetColumnsReadFlagsAndStorageOptionColumns) {
  WorkloadConfig d = LoadWorkload("dlrm_b200", {});
  ASSERT_EQ(d.parquet_columns.size(), 200u);
  EXPECT_EQ(d.parquet_row_group_size, 6144u);
  EXPECT_EQ(d.parquet_columns[11].name, "feature_011");
  EXPECT_TRUE(d.parquet_columns[11].read);
  EXPECT_EQ(d.parquet_columns[7].dtype, "int8");
  EXPECT_EQ(d.ParquetSelectedColumns().size(), 40u);
  uint64_t bytes = 0;
  for (const auto& c : d.parquet_columns) bytes += c.dtype == "int8" ? 1 : c.dtype == "float16" ? 2 : c.dtype == "float32" ? 4 : 8;
  EXPECT_EQ(bytes, 761u);  // the config's record_length_bytes: the 200 columns as transcribed add up to it
  WorkloadConfig f = LoadWorkload("flux_b200", {});
  EXPECT_TRUE(f.ParquetSelectedColumns().empty());  // none marked read: false: every column
  EXPECT_EQ(f.parquet_columns[0].size, 524328u);
  WorkloadConfig s = LoadWorkload("flux_b200", {"storage.storage_options.columns=[mean,logvar]"});
  EXPECT_EQ(s.ParquetSelectedColumns(), (std::vector<std::string>{"mean", "logvar"}));
  auto bad = [](const std::string& column) {
    return "dataset: {format: parquet, parquet: {columns: [" + column + "]}}\n";
  };
  for (const auto& [yaml, cause] : std::vector<std::pair<std::string, std::string>>{
           {bad("{name: a, dtype: complex64}"), "dataset.parquet.columns[0].dtype"},
           {bad("{name: a}, {name: a}"), "names a column twice"},
           {bad("{dtype: float32}"), "expected a map with a name"},
           {bad("{name: a, size: 0}"), "must be >= 1"}}) {
    try {
      ParseWorkload(yaml, "w.yaml", "w", {});
      ADD_FAILURE() << yaml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(cause), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("w.yaml"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace feedrate
