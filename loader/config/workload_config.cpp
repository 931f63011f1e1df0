// Loading a DLIO-schema workload: the tree checked and overridden (workload_yaml.cpp), then typed extraction with
// range checks.
#include "loader/config/workload_config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "loader/config/workload_yaml.h"
#include "loader/util/dlio_edition.h"

namespace feedrate {
namespace {

using workload_yaml::ApplyOverride;
using workload_yaml::CheckKeys;
using workload_yaml::CheckSectionShapes;
using workload_yaml::CheckStructure;
using workload_yaml::NormalizeAliases;
using workload_yaml::RefuseSecrets;
using workload_yaml::SplitDots;
using workload_yaml::Unwrapped;

// Each batch in flight is a prefetcher slot and a batch's worth of queue cells per accelerator: beyond this a
// setting is a typo, not a loader.
constexpr uint64_t kMaxBatchesInFlight = 4096;

class Extractor {
 public:
  Extractor(const YAML::Node& root, const std::string& source) : root_(root), source_(source) {}

  YAML::Node Get(const std::string& dotted) const {
    // reset() rebinds the handle; plain assignment would write into the tree (yaml-cpp's Node semantics).
    YAML::Node cur;
    cur.reset(root_);
    for (const auto& p : SplitDots(dotted)) {
      if (!cur.IsMap() || !cur[p]) return YAML::Node();
      cur.reset(cur[p]);
    }
    return cur;
  }
  [[noreturn]] void Fail(const std::string& key, const std::string& what, const YAML::Node& n) const {
    std::string got = n.IsScalar() ? n.Scalar() : "a non-scalar value";
    throw ConfigError(source_ + ": key " + key + ": " + what + ", got '" + got + "'");
  }
  template <typename T>
  void Read(const std::string& key, T* out) const {
    YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) return;
    try {
      *out = n.as<T>();
    } catch (const YAML::Exception&) {
      Fail(key, std::string("expected ") + TypeName<T>(), n);
    }
  }
  void ReadU64(const std::string& key, uint64_t* out, uint64_t min_value,
               uint64_t max_value = static_cast<uint64_t>(INT64_MAX)) const {
    YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) return;
    int64_t v = 0;
    try {
      v = n.as<int64_t>();
    } catch (const YAML::Exception&) {
      Fail(key, "expected an integer", n);
    }
    if (v < static_cast<int64_t>(min_value)) Fail(key, "must be >= " + std::to_string(min_value), n);
    if (static_cast<uint64_t>(v) > max_value) Fail(key, "must be <= " + std::to_string(max_value), n);
    *out = static_cast<uint64_t>(v);
  }
  void ReadDouble(const std::string& key, double* out, double min_value, double max_value) const {
    YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) return;
    double v = 0;
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      Fail(key, "expected a number", n);
    }
    if (!std::isfinite(v) || v < min_value || v > max_value) {
      std::ostringstream r;
      r << "must be between " << min_value << " and " << max_value;
      Fail(key, r.str(), n);
    }
    *out = v;
  }
  void ReadChoice(const std::string& key, std::string* out, const std::set<std::string>& choices) const {
    YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) return;
    std::string v = n.IsScalar() ? n.Scalar() : "";
    // YAML 1.1 reads a bare `off` as a boolean; DLIO's Shuffle enum value is the string "off".
    if (v == "false" || v == "False" || v == "no") v = "off";
    if (!choices.contains(v)) {
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
      Fail(key, "expected one of " + list, n);
    }
    *out = v;
  }
  // A closed set (loader/util/choices.h): the key's value must be one of E's names.
  template <typename E>
  void ReadEnum(const std::string& key, E* out) const {
    std::set<std::string> choices;
    for (std::string_view n : Names<E>()) choices.insert(std::string(n));
    std::string v = Name(*out);
    ReadChoice(key, &v, choices);
    *out = *Parse<E>(v);
  }

 private:
  template <typename T>
  static const char* TypeName() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    return "a number";
  }
  const YAML::Node& root_;
  const std::string& source_;
};

// dataset.parquet and storage.storage_options.columns (MLPerf Storage v3.0's Parquet workloads).
void ExtractParquet(const Extractor& x, WorkloadConfig* c) {
  x.ReadU64("dataset.parquet.row_group_size", &c->parquet_row_group_size, 1);
  x.ReadChoice("dataset.parquet.read_mode", &c->parquet_read_mode, {"row_group"});
  x.ReadChoice("feedrate.parquet_group_reads", &c->parquet_group_reads, {"split", "whole"});
  static const std::set<std::string> kDtypes = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                                "uint64", "float16", "float32", "float64", "bool"};
  YAML::Node cols = x.Get("dataset.parquet.columns");
  if (cols.IsDefined() && !cols.IsNull()) {
    if (!cols.IsSequence()) x.Fail("dataset.parquet.columns", "expected a list of {name, dtype, size, read}", cols);
    std::set<std::string> seen;
    for (size_t i = 0; i < cols.size(); ++i) {
      const std::string key = "dataset.parquet.columns[" + std::to_string(i) + "]";
      const YAML::Node n = cols[i];
      if (!n.IsMap() || !n["name"] || !n["name"].IsScalar()) x.Fail(key, "expected a map with a name", n);
      ParquetColumn col;
      col.name = n["name"].Scalar();
      try {
        if (n["dtype"]) col.dtype = n["dtype"].as<std::string>();
        if (n["size"]) col.size = n["size"].as<uint64_t>();
        if (n["read"]) col.read = n["read"].as<bool>();
      } catch (const YAML::Exception&) {
        x.Fail(key, "dtype must be a string, size a positive integer, read true or false", n);
      }
      if (!kDtypes.contains(col.dtype)) x.Fail(key + ".dtype", "expected a numeric dtype (int8..uint64, float16..float64, bool)", n["dtype"]);
      if (col.size == 0) x.Fail(key + ".size", "must be >= 1", n["size"]);
      if (!seen.insert(col.name).second) x.Fail(key + ".name", "names a column twice", n["name"]);
      c->parquet_columns.push_back(col);
    }
  }
  YAML::Node sc = x.Get("storage.storage_options.columns");
  if (sc.IsDefined() && !sc.IsNull()) {
    if (!sc.IsSequence()) x.Fail("storage.storage_options.columns", "expected a list of column names", sc);
    for (const auto& v : sc) {
      if (!v.IsScalar()) x.Fail("storage.storage_options.columns", "expected a list of column names", v);
      c->storage_columns.push_back(v.Scalar());
    }
  }
}

// The model, framework, workflow, checkpoint schedule and storage (S3 or files).
void ExtractWorkflowAndStorage(const YAML::Node& root, const Extractor& x, WorkloadConfig* c) {
  // (A const yaml-cpp node yields an invalid node for a missing key: test before use.)
  if (root["model"] && root["model"].IsScalar()) c->model_name = root["model"].Scalar();
  x.Read("model.name", &c->model_name);
  x.ReadChoice("framework", &c->framework, {"pytorch", "tensorflow", "jax"});
  c->data_loader = c->framework == "tensorflow" ? DataLoader::kTensorFlow : DataLoader::kPyTorch;
  x.Read("workflow.train", &c->do_train);
  x.Read("workflow.evaluation", &c->do_eval);
  x.Read("workflow.checkpoint", &c->do_checkpoint);
  x.ReadU64("checkpoint.checkpoint_after_epoch", &c->checkpoint_after_epoch, 0);
  x.ReadU64("checkpoint.epochs_between_checkpoints", &c->epochs_between_checkpoints, 1);
  x.Read("checkpoint.steps_between_checkpoints", &c->steps_between_checkpoints);
  x.ReadChoice("storage.storage_type", &c->storage_type, {"local_fs", "s3"});
  x.Read("storage.storage_root", &c->storage_root);
  x.Read("storage.storage_options.endpoint_url", &c->s3_endpoint);
  if (RedactSecrets(c->s3_endpoint) != c->s3_endpoint) {
    throw ConfigError(c->source + ": key storage.storage_options.endpoint_url: carries a user:password, which looks like "
                      "a credential; Feedrate takes S3 credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or "
                      "~/.aws/credentials only (the value is not shown)");
  }
  x.Read("storage.storage_options.region", &c->s3_region);
  x.Read("storage.storage_options.s3_force_path_style", &c->s3_path_style);
  if (c->on_s3() && c->storage_root.empty()) {
    throw ConfigError(c->source + ": storage.storage_type is s3 but storage.storage_root (the bucket) is not set");
  }

}

void ExtractDataset(const Extractor& x, WorkloadConfig* c) {
  x.Read("dataset.data_folder", &c->data_folder);
  x.ReadEnum("dataset.format", &c->format);
  x.Read("dataset.file_prefix", &c->file_prefix);
  x.ReadU64("dataset.num_files_train", &c->num_files_train, 1);
  x.ReadU64("dataset.num_files_eval", &c->num_files_eval, 0);
  x.ReadU64("dataset.num_samples_per_file", &c->num_samples_per_file, 1);
  x.ReadU64("dataset.num_subfolders_train", &c->num_subfolders_train, 0);
  x.ReadU64("dataset.num_subfolders_eval", &c->num_subfolders_eval, 0);
  x.ReadDouble("dataset.record_length_bytes", &c->record_length, 1, 1e15);
  c->record_length_given = x.Get("dataset.record_length_bytes").IsDefined();
  x.ReadDouble("dataset.record_length_bytes_stdev", &c->record_length_stdev, 0, 1e15);
  x.ReadChoice("dataset.compression", &c->compression, {"none", "gzip", "lzf", "bz2", "zip", "xz", "snappy", "lz4", "zstd"});

}

// The reader and the evaluation: batches, DataLoader workers and the batches they keep in flight, shuffles.
void ExtractReader(const Extractor& x, WorkloadConfig* c) {
  x.ReadEnum("reader.data_loader", &c->data_loader);
  x.ReadU64("reader.batch_size", &c->batch_size, 1);
  x.ReadU64("reader.batch_size_eval", &c->batch_size_eval, 1);
  x.ReadDouble("evaluation.eval_time", &c->eval_time, 0, 86400);
  x.ReadDouble("evaluation.eval_time_stdev", &c->eval_time_stdev, 0, 86400);
  x.ReadU64("evaluation.eval_after_epoch", &c->eval_after_epoch, 0);
  x.ReadU64("evaluation.epochs_between_evals", &c->epochs_between_evals, 1);
  x.ReadU64("reader.read_threads", &c->read_threads, 0);
  uint64_t& prefetch_size = c->prefetch_size;  // (DLIO's default 2; it only shapes the batches in flight)
  x.ReadU64("reader.prefetch_size", &prefetch_size, 0, kMaxBatchesInFlight);
  c->batches_in_flight = DlioBatchesInFlight(c->data_loader, c->read_threads, prefetch_size);
  if (c->batches_in_flight > kMaxBatchesInFlight) {
    throw ConfigError(c->source + ": reader.read_threads " + std::to_string(c->read_threads) + " and reader.prefetch_size " +
                      std::to_string(prefetch_size) + " keep " + std::to_string(c->batches_in_flight) +
                      " batches in flight per accelerator in DLIO's loader; Feedrate keeps at most " +
                      std::to_string(kMaxBatchesInFlight));
  }
  c->main_process_reads = c->read_threads == 0;
  if (c->read_threads == 0) c->read_threads = 1;  // DLIO: 0 means "read in the main process"
  x.ReadU64("reader.transfer_size", &c->transfer_size, 512);
  if (x.Get("reader.transfer_size").IsDefined() && !x.Get("reader.transfer_size").IsNull()) c->tf_buffer_size = c->transfer_size;
  x.ReadChoice("reader.file_shuffle", &c->file_shuffle, {"off", "seed", "random"});
  c->file_shuffle_given = x.Get("reader.file_shuffle").IsDefined() && !x.Get("reader.file_shuffle").IsNull();
  x.ReadChoice("reader.sample_shuffle", &c->sample_shuffle, {"off", "seed", "random"});
  x.ReadU64("reader.shuffle_size", &c->shuffle_size, 1);
  x.ReadChoice("reader.read_type", &c->read_type, {"on_demand", "memory"});
  x.Read("reader.odirect", &c->odirect);

}

// A time in DLIO's forms (train.computation_time, reader.preprocess_time): a constant (with `<key>_stdev`: normal)
// or a distribution map, its mean known for each type.
void ExtractTime(const Extractor& x, const std::string& key, TimeDistribution* out, const WorkloadConfig& c) {
  YAML::Node ct = x.Get(key);
  TimeDistribution& t = *out;
  if (ct.IsMap()) {
    t.type = "normal";
    x.ReadChoice(key + ".type", &t.type, {"normal", "uniform", "gamma", "exponential", "poisson"});
    x.ReadDouble(key + ".mean", &t.mean, 0, 86400);
    x.ReadDouble(key + ".stdev", &t.stdev, 0, 86400);
    x.ReadDouble(key + ".min", &t.min, 0, 86400);
    x.ReadDouble(key + ".max", &t.max, 0, 86400);
    x.ReadDouble(key + ".shape", &t.shape, 0, 1e6);
    x.ReadDouble(key + ".scale", &t.scale, 0, 86400);
    x.ReadDouble(key + ".lam", &t.lam, 0, 86400);
    const std::string where = c.source + ": key " + key + ": ";
    if (t.type == "uniform") {
      if (t.max < t.min) throw ConfigError(where + "uniform needs min <= max");
      t.mean = (t.min + t.max) / 2;
    } else if (t.type == "gamma") {
      if (t.shape <= 0 || t.scale <= 0) throw ConfigError(where + "gamma needs shape > 0 and scale > 0");
      t.mean = t.shape * t.scale;
    } else if (t.type == "exponential") {
      if (t.scale <= 0) throw ConfigError(where + "exponential needs scale > 0");
      t.mean = t.scale;
    } else if (t.type == "poisson") {
      t.mean = t.lam;
    }
  } else {
    x.ReadDouble(key, &t.mean, 0, 86400);
  }
  x.ReadDouble(key + "_stdev", &t.stdev, 0, 86400);
  if (t.type == "constant" && t.stdev > 0) t.type = "normal";
}

void Extract(const YAML::Node& root, WorkloadConfig* c) {
  Extractor x(root, c->source);
  ExtractWorkflowAndStorage(root, x, c);
  ExtractDataset(x, c);
  ExtractReader(x, c);
  x.ReadU64("train.epochs", &c->epochs, 1);
  YAML::Node steps = x.Get("train.total_training_steps");
  if (steps.IsDefined() && !steps.IsNull()) {
    x.Read("train.total_training_steps", &c->total_training_steps);
    if (c->total_training_steps == 0 || c->total_training_steps < -1) {
      x.Fail("train.total_training_steps", "must be a positive step count or -1", steps);
    }
  }
  x.Read("train.seed_change_epoch", &c->seed_change_epoch);
  x.Read("train.seed", &c->seed);
  ExtractTime(x, "train.computation_time", &c->computation_time, *c);
  ExtractTime(x, "reader.preprocess_time", &c->preprocess_time, *c);
  x.ReadU64("output.metric.exclude_start_steps", &c->metric_exclude_start_steps, 0);
  x.ReadU64("output.metric.exclude_end_steps", &c->metric_exclude_end_steps, 0);
  x.ReadDouble("metric.au", &c->au, 0, 1);

  x.Read("feedrate.keep_files_open", &c->keep_files_open);
  x.Read("feedrate.worker_collate", &c->worker_collate);
  x.ReadU64("dataset.record_length_bytes_resize", &c->record_length_resize, 0);
  x.ReadChoice("feedrate.access_pattern", &c->access_pattern, {"dlio", "coalesced"});
  x.ReadU64("feedrate.s3_part_size", &c->s3_part_size, 4096);
  x.ReadU64("feedrate.s3_reader_window", &c->s3_reader_window, 1, 1024);
  x.ReadEnum("feedrate.rules", &c->rules);
  x.ReadEnum("feedrate.order", &c->order);
  x.ReadEnum("feedrate.engine", &c->engine);
  x.ReadU64("feedrate.queue_depth", &c->queue_depth, 0);
  x.Read("feedrate.verify_crc", &c->verify_crc);
  x.Read("feedrate.coalesce_reads", &c->coalesce_reads);
  x.Read("feedrate.decode", &c->decode);
  x.ReadEnum("feedrate.compute", &c->compute);
  x.ReadU64("feedrate.compute_memory_bytes", &c->compute_memory_bytes, 0);
  const YAML::Node depth = x.Get("feedrate.batches_in_flight");
  c->batches_in_flight_given = depth.IsDefined() && !depth.IsNull();
  x.ReadU64("feedrate.batches_in_flight", &c->batches_in_flight, 1, kMaxBatchesInFlight);  // replaces DLIO's depth
  ExtractParquet(x, c);
}

std::string S3Prefix(const std::string& data_folder) {
  std::string p = data_folder;
  while (p.starts_with("./")) p.erase(0, 2);
  while (!p.empty() && p.front() == '/') p.erase(0, 1);
  while (!p.empty() && p.back() == '/') p.pop_back();
  return p == "." ? std::string() : p;
}

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot read workload file: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

uint64_t DlioBatchesInFlight(DataLoader loader, uint64_t read_threads, uint64_t prefetch_size) {
  switch (loader) {
    case DataLoader::kPyTorch: {
      if (read_threads == 0) return 1;
      const uint64_t factor = prefetch_size == 0 ? 2 : (prefetch_size + read_threads - 1) / read_threads;
      return read_threads * factor;
    }
    case DataLoader::kDali:
    case DataLoader::kNativeDali:
      return prefetch_size == 0 ? 2 : prefetch_size;
    default:
      return std::max<uint64_t>(1, prefetch_size);
  }
}

std::string SizeReadThreadsForHost(WorkloadConfig* c, uint64_t host_cpus, uint64_t ranks_on_host, const char* cap_env) {
  if (!Traits(c->rules).auto_read_threads) return "";
  const uint64_t cap = DlioMaxAutoThreads(cap_env);  // (read whatever read_threads is, as the fork reads it)
  if (c->main_process_reads || c->read_threads != 1) return "";
  const uint64_t per_rank =
      std::max<uint64_t>(1, std::max<uint64_t>(1, host_cpus) / std::max<uint64_t>(1, ranks_on_host));
  const uint64_t sized = std::min(per_rank, std::max<uint64_t>(1, cap));
  if (sized <= 1) return "";
  c->read_threads = sized;
  if (!c->batches_in_flight_given) {
    c->batches_in_flight = std::min(DlioBatchesInFlight(c->data_loader, sized, c->prefetch_size), kMaxBatchesInFlight);
  }
  return "reader.read_threads 1 sized to " + std::to_string(sized) + " DataLoader workers per accelerator, as " +
         Traits(c->rules).dlio + " does (" + std::to_string(host_cpus) + " CPUs / " + std::to_string(ranks_on_host) +
         " accelerator(s) on this host, at most DLIO_MAX_AUTO_THREADS " + std::to_string(cap) +
         "); set it above 1 to keep one";
}

uint64_t DlioMaxAutoThreads(const char* value) {
  if (value == nullptr) return 8;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(value, &end, 10);
  if (end == value || *end != '\0' || errno != 0) {
    throw ConfigError(std::string("DLIO_MAX_AUTO_THREADS=") + value +
                      " is not an integer (v3.0's DLIO reads it as one)");
  }
  return static_cast<uint64_t>(std::max<long long>(1, v));
}

uint64_t TfRecordReadAhead(uint64_t read_threads, uint64_t shuffle_records, uint64_t batch) {
  const uint64_t records = 3 * std::max<uint64_t>(1, read_threads) * 2 + shuffle_records;
  return (records + std::max<uint64_t>(1, batch) - 1) / std::max<uint64_t>(1, batch);
}

WorkloadConfig ParseWorkload(const std::string& yaml_text, const std::string& source, const std::string& name,
                             const std::vector<std::string>& overrides) {
  WorkloadConfig c;
  c.source = source;
  c.name = name;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + ": not valid YAML: " + e.what());
  }
  uint64_t nodes = 0;
  CheckStructure(root, source, &nodes);
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError(source + ": a workload file must be a YAML mapping");
  if (YAML::Node inner = Unwrapped(root); !inner.is(root)) root = YAML::Clone(inner);  // (a clone loses line marks)
  NormalizeAliases(root, source);
  CheckSectionShapes(root, source);

  for (const auto& ov : overrides) c.overridden_keys.push_back(ApplyOverride(root, ov, &nodes));

  RefuseSecrets(root, "", source);
  CheckKeys(root, "", source, &c.warnings);
  // Keys that only shape training checkpoints are spoken for by TrainingCheckpointNote, not listed as unused.
  std::erase_if(c.warnings, [&](const std::string& k) {
    const bool shapes = k == "workflow.checkpoint" || k.starts_with("checkpoint.") || k.starts_with("model.");
    if (shapes) c.checkpoint_keys.push_back(k);
    return shapes;
  });
  Extract(root, &c);
  if (c.name.empty()) c.name = c.model_name.empty() ? "workload" : c.model_name;
  c.tree = root;
  return c;
}

WorkloadConfig LoadWorkload(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  const auto& builtins = BuiltinWorkloads();
  auto it = builtins.find(name_or_path);
  if (it != builtins.end()) {
    WorkloadConfig c = ParseWorkload(std::string(it->second), "built-in workload " + name_or_path, name_or_path, overrides);
    c.builtin = true;
    return c;
  }
  std::filesystem::path p(name_or_path);
  if (!std::filesystem::exists(p)) {
    std::string names;
    for (const auto& [n, text] : builtins) names += (names.empty() ? "" : ", ") + n;
    throw ConfigError("workload '" + name_or_path + "' is neither a built-in workload (" + names +
                      ") nor an existing YAML file");
  }
  return ParseWorkload(ReadFileText(name_or_path), name_or_path, p.stem().string(), overrides);
}

bool WorkloadFileNamesItsData(const std::string& name_or_path) {
  if (BuiltinWorkloads().count(name_or_path) != 0) return false;
  try {
    const YAML::Node root = Unwrapped(YAML::Load(ReadFileText(name_or_path)));
    // A section of the wrong shape (`dataset: 5`): loading it says so, before asking for a location.
    if (root.IsMap() && root["dataset"] && !root["dataset"].IsMap()) return true;
    return !root.IsMap() || (root["dataset"] && root["dataset"].IsMap() && root["dataset"]["data_folder"]);
  } catch (const std::exception&) {
    return true;  // not readable or not YAML: loading it says so, which is more use than "--data-dir required"
  }
}

std::string WorkloadConfig::DataLocation() const {
  if (!on_s3()) return data_folder;
  const std::string p = S3Prefix(data_folder);
  return "s3://" + storage_root + (p.empty() ? "" : "/" + p);
}

std::string WorkloadConfig::S3DataPrefix() const { return S3Prefix(data_folder); }

std::string TrainingCheckpointNote(const WorkloadConfig& c) {
  if (!c.do_checkpoint) return "";
  std::string when;
  if (c.steps_between_checkpoints > 0) {
    when = "every " + std::to_string(c.steps_between_checkpoints) + " steps (checkpoint.steps_between_checkpoints)";
  } else if (c.steps_between_checkpoints < 0 && c.checkpoint_after_epoch >= 1 && c.checkpoint_after_epoch <= c.epochs) {
    // DLIO (main.py): after epoch e when e == next, next starting at checkpoint_after_epoch.
    std::string epochs;
    int listed = 0;
    for (uint64_t e = c.checkpoint_after_epoch; e <= c.epochs && listed < 4; e += c.epochs_between_checkpoints, ++listed) {
      epochs += (epochs.empty() ? "" : ", ") + std::to_string(e);
      if (c.epochs_between_checkpoints == 0) break;
    }
    const uint64_t count = c.epochs_between_checkpoints == 0 ? 1
                           : (c.epochs - c.checkpoint_after_epoch) / c.epochs_between_checkpoints + 1;
    if (count > 4) epochs += ", ... (" + std::to_string(count) + " in all)";
    when = "after epoch" + std::string(count > 1 ? "s " : " ") + epochs;
  } else {
    return "";  // the schedule falls after this run's last epoch (or steps_between_checkpoints is 0): DLIO writes none
  }
  std::string keys;
  for (const auto& k : c.checkpoint_keys) keys += (keys.empty() ? "" : ", ") + k;
  return "workflow.checkpoint is on: DLIO would write a checkpoint " + when + " of this run; `feedrate run` writes "
         "none during training (the AU leaves checkpoint time out, as DLIO's does, but the storage does not see "
         "their writes): measure checkpoint writes and reads with `feedrate checkpoint`" +
         (keys.empty() ? "" : " (keys without effect here: " + keys + ")");
}

std::vector<std::string> WorkloadConfig::ParquetSelectedColumns() const {
  std::vector<std::string> out;
  if (!storage_columns.empty()) return storage_columns;
  bool any_unread = false;
  for (const auto& col : parquet_columns) any_unread = any_unread || !col.read;
  if (!any_unread) return out;
  for (const auto& col : parquet_columns) {
    if (col.read) out.push_back(col.name);
  }
  return out;
}

}  // namespace feedrate
