// A rank's setup before training: the request checked, samplers, the files this rank reads indexed, content checks,
// the staging, the facts the read plan takes, the plan made once and its read buffers checked, the engine opened.
#include "emulator/run/run_setup.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>

#include "emulator/host/sysinfo.h"
#include "emulator/training/metrics.h"
#include "emulator/run/run_engine.h"
#include "emulator/run/run_listing.h"
#include "loader/dataset/dataset.h"
#include "loader/format/access_pattern.h"
#include "loader/format/sample_index.h"
#include "loader/io/direct_io.h"
#include "loader/pipeline/prefetcher.h"
#include "loader/util/content_pattern.h"
#include "loader/util/dlio_edition.h"
#include "loader/util/units.h"

namespace feedrate {
namespace {


// The split's paths, only those `keep` marks (the files this rank reads; the others are indices without a path):
// rank 0 lists the directory (or the S3 prefix) once and hands the listing to every rank (one listing of a
// million-file directory per job, not one per rank: on a shared file system each is load on its metadata
// servers). Collective: every rank calls it, in the same order.
Result<PathList> ListSplit(const WorkloadConfig& cfg, const Comm& comm, const std::string& split, uint64_t n,
                           uint64_t subfolders, std::span<const char> keep, Setup* s) {
  if (s->s3) return ListS3Split(cfg, comm, split, n, subfolders, keep, s->s3.get());
  if (!comm.root()) return ShareListing(comm, nullptr, keep);
  std::optional<DatasetListing>& early = split == "train" ? s->listed_train : s->listed_eval;
  auto files = early ? Result<DatasetListing>(std::move(*early)) : ListDatasetFiles(cfg.data_folder, split, cfg.format, n, subfolders);
  early.reset();
  const Result<ListingSource> src =
      files.ok() ? Result<ListingSource>(ListingSource{files->size(), [&](size_t i, std::string* out) { files->AppendPath(i, out); }, {}})
                 : Result<ListingSource>(files.status());
  return ShareListing(comm, &src, keep);
}

std::string Gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / kGiB);
  return b;
}

// The sample state a rank builds (sampler orders, sample table, the file mask), against the memory it may take:
// counts far beyond any dataset (dataset.num_files_train=1000000000000 ended in std::bad_alloc) are refused with the
// keys and the numbers. About 32 bytes a sample of the rank's share and one byte a file.
Status CheckSampleState(const WorkloadConfig& cfg, const Comm& comm) {
  const double files = static_cast<double>(cfg.num_files_train) + (cfg.do_eval ? static_cast<double>(cfg.num_files_eval) : 0);
  const double samples = files * static_cast<double>(cfg.num_samples_per_file);
  const double bytes = 32 * samples / comm.size() + files;
  const double available = static_cast<double>(ReadHostInfo().usable_available_bytes());
  if (bytes <= available / 2) return Status::Ok();
  char n[64];
  std::snprintf(n, sizeof n, "%.4g files x %llu samples each", files, static_cast<unsigned long long>(cfg.num_samples_per_file));
  return Status::InvalidArgument(cfg.source + ": dataset.num_files_train/num_files_eval and num_samples_per_file ask for " + n +
                                 ": their sample state would take " + Gib(bytes) + " per rank, more than half of the " +
                                 Gib(available) + " this host has available");
}

// A listing's files against the workload: files of two datagens refused; more files than it reads, said.
Status CheckListing(const WorkloadConfig& cfg, const DatasetListing& l, const std::string& split, Setup* s) {
  FEEDRATE_RETURN_IF_ERROR(CheckOneGeneration(l.dir(), cfg.format, l.Generations()));
  if (l.found() > l.size()) {
    s->warnings.push_back(l.dir() + " holds " + std::to_string(l.found()) + " ." + std::string(Name(cfg.format)) +
                          " files; the run reads the first " + std::to_string(l.size()) + " in DLIO's order (dataset.num_files_" +
                          split + ")");
  }
  return Status::Ok();
}

// Rank 0 lists the dataset before any per-sample state is built, and every rank learns at once whether the folder
// holds the files the workload asks for (dataset.num_files_train=100000000 of a folder of 8 built 1.2 GB of sampler
// state before the answer), and whether each can hold the sample state. Collective; S3 lists later, with its sizes.
Status ListDatasetFirst(const WorkloadConfig& cfg, const Comm& comm, Setup* s) {
  Status st = CheckSampleState(cfg, comm);  // (on every rank: hosts differ in memory)
  if (st.ok() && comm.root() && !s->s3) {
    auto train = ListDatasetFiles(cfg.data_folder, "train", cfg.format, cfg.num_files_train, cfg.num_subfolders_train);
    st = train.ok() ? CheckListing(cfg, *train, "train", s) : train.status();
    if (train.ok()) s->listed_train = std::move(*train);
    if (st.ok() && cfg.do_eval && cfg.num_files_eval > 0) {
      auto eval = ListDatasetFiles(cfg.data_folder, "valid", cfg.format, cfg.num_files_eval, cfg.num_subfolders_eval);
      st = eval.ok() ? CheckListing(cfg, *eval, "eval", s) : eval.status();
      if (eval.ok()) s->listed_eval = std::move(*eval);
    }
  }
  const std::string agreed = comm.AgreeFirstError(st);
  return !st.ok() || agreed.empty() ? st : Status::InvalidArgument(agreed);  // rank 0's own words win the next agreement
}

}  // namespace

CacheChoice ChooseCache(const WorkloadConfig& cfg, const RunOptions& opt) {
  CacheChoice c;
  if (opt.cache) {
    c.mode = *opt.cache;
  } else if (Traits(cfg.rules).flush_rank0_each_epoch && !cfg.odirect && !cfg.on_s3() &&
             !IsMemoryFileSystem(FileSystemType(cfg.data_folder))) {
    c.mode = CacheMode::kDrop;
    c.rank0_host_only = true;
  }
  return c;
}

namespace {

// Refuses what cannot run before any work; `mode` is the page-cache mode this rank uses.
Status CheckRequest(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, CacheMode* mode) {
  if (opt.accelerators == 0) return Status::InvalidArgument("--accelerators must be at least 1");
  if (!cfg.do_train) {
    const bool checkpointing = cfg.tree["workflow"] && cfg.tree["workflow"]["checkpoint"];
    return Status::InvalidArgument(cfg.source + ": key workflow.train is False: nothing to run" +
                                   std::string(checkpointing ? " (a checkpointing workload? `feedrate checkpoint` runs those)" : ""));
  }
  const CacheChoice cache = ChooseCache(cfg, opt);
  CacheMode cache_mode = cache.mode;
  if (cfg.odirect && (cache_mode == CacheMode::kDrop || cache_mode == CacheMode::kDropOnce)) {
    return Status::InvalidArgument("--cache " + std::string(CacheModeName(cache.mode)) + " with O_DIRECT reads (reader.odirect): O_DIRECT already "
                                   "bypasses the page cache; use --cache direct");
  }
  if (cache.rank0_host_only && comm.hostname(comm.rank()) != comm.hostname(0)) cache_mode = CacheMode::kKeep;
  if (cache_mode == CacheMode::kDirect && !cfg.odirect) {
    return Status::InvalidArgument("--cache direct needs O_DIRECT reads (reader.odirect: true)");
  }
  *mode = cfg.odirect ? CacheMode::kDirect : cache_mode;
  if (!TrainingFormatSupported(cfg.format)) {
    return Status::Unsupported(cfg.source + ": key dataset.format: '" + Name(cfg.format) +
                               "' training reads are not supported yet (npz, npy, tfrecord, hdf5, indexed_binary, jpeg, png "
                               "and parquet are)");
  }
  return Status::Ok();
}

// The training (and evaluation) samplers: they need the files' counts, not their names (listed after them, so that
// a rank keeps only the paths of the files its samplers read).
Status BuildSamplers(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, Setup* s) {
  SamplerConfig sc;
  sc.num_files = cfg.num_files_train;
  sc.samples_per_file = cfg.num_samples_per_file;
  sc.batch_size = cfg.batch_size;
  sc.world = static_cast<uint64_t>(comm.size()) * opt.accelerators;
  sc.data_loader = cfg.data_loader;
  sc.order = cfg.order;
  sc.file_shuffle = cfg.file_shuffle != "off";
  sc.sample_shuffle = cfg.sample_shuffle != "off";
  sc.shuffle_size = cfg.shuffle_size;
  sc.seed = static_cast<uint32_t>(cfg.seed);
  sc.seed_change_epoch = cfg.seed_change_epoch;
  sc.total_training_steps = cfg.total_training_steps;
  sc.presharded = Traits(cfg.rules).presharded_round_robin;
  if (sc.presharded) sc.file_shuffle = cfg.file_shuffle_given;  // (DLIO: any value given shuffles, DlioEdition docs)
  sc.first_deal_only = cfg.main_process_reads;
  // Each accelerator's step log is preallocated for the whole run (train.epochs=10^12 ended in std::bad_alloc):
  // against the memory before it is built.
  const uint64_t per_epoch = Sampler::EpochSteps(sc);
  double state_bytes = static_cast<double>(cfg.epochs) * static_cast<double>(per_epoch) *
                       static_cast<double>(opt.accelerators) * static_cast<double>(sizeof(StepRecord));
  if (const double available = static_cast<double>(ReadHostInfo().usable_available_bytes()); state_bytes > available / 2) {
    return Status::InvalidArgument(cfg.source + ": train.epochs=" + std::to_string(cfg.epochs) + " x " + std::to_string(per_epoch) +
                                   " steps x " + std::to_string(opt.accelerators) + " accelerators: the per-step record would take " +
                                   Gib(state_bytes) + " per rank, more than half of the " + Gib(available) + " available");
  }
  auto sampler = Sampler::Create(sc);
  if (!sampler.ok()) return sampler.status().WithContext(cfg.source);
  s->sampler = std::make_unique<Sampler>(std::move(*sampler));
  for (const auto& w : s->sampler->warnings()) s->warnings.push_back(w);
  uint64_t steps = s->sampler->steps_per_epoch();
  if (steps <= cfg.metric_exclude_start_steps + cfg.metric_exclude_end_steps) {
    return Status::InvalidArgument(cfg.source + ": an epoch has " + std::to_string(steps) +
                                   " step(s) per accelerator, not more than the " +
                                   std::to_string(cfg.metric_exclude_start_steps + cfg.metric_exclude_end_steps) +
                                   " excluded from the metrics: use more files or fewer accelerators");
  }

  // Evaluation: the validation files follow the training files in the file table and the sample table.
  s->train_files = cfg.num_files_train;
  if (cfg.do_eval) {
    if (cfg.num_files_eval == 0) {
      return Status::InvalidArgument(cfg.source + ": workflow.evaluation is True but dataset.num_files_eval is 0");
    }
    SamplerConfig ec = sc;
    ec.num_files = cfg.num_files_eval;
    ec.batch_size = cfg.batch_size_eval;
    ec.total_training_steps = -1;
    auto eval_sampler = Sampler::Create(ec);
    if (!eval_sampler.ok()) return eval_sampler.status().WithContext(cfg.source + " (evaluation)");
    s->eval_sampler = std::make_unique<Sampler>(std::move(*eval_sampler));
    s->eval_id_offset = s->train_files * cfg.num_samples_per_file;
  }
  return Status::Ok();
}

// The files this rank's accelerators read (and, of them, training and validation files by table index).
struct RankFiles {
  std::vector<size_t> which, which_eval;  // indices into Setup::files (no copies of a million paths)
  std::vector<char> needed;               // per file index: whether this rank reads it (the paths to keep)
  size_t size() const { return which.size() + which_eval.size(); }
  size_t first() const { return which.empty() ? which_eval.front() : which.front(); }
};

RankFiles SelectRankFiles(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, const Setup& s) {
  RankFiles f;
  // Only the files this rank's accelerators read (the same files every epoch in DLIO order) are indexed.
  const size_t files = s.train_files + (s.eval_sampler ? cfg.num_files_eval : 0);
  f.needed.assign(files, 0);
  std::vector<char>& needed = f.needed;
  SampleSequence ids;
  auto mark = [&](uint64_t offset, uint64_t limit = UINT64_MAX) {  // the files the first `limit` of `ids` read from
    const uint64_t spf = cfg.num_samples_per_file, n = std::min<uint64_t>(ids.size(), limit);
    if (n > 0 && ids.contiguous()) {  // a range: its files, without a pass over its samples
      const uint64_t last = (ids.first() + offset + n - 1) / spf;
      for (uint64_t file = (ids.first() + offset) / spf; file <= last; ++file) needed[file] = 1;
      return;
    }
    for (uint64_t i = 0; i < n; ++i) needed[(ids[i] + offset) / spf] = 1;
  };
  // Orders that change between epochs (Feedrate's shuffle, tf.data's shuffle buffer) may touch other files later.
  const bool varies = cfg.order == SampleOrder::kShuffled ||
                      (cfg.data_loader == DataLoader::kTensorFlow && cfg.sample_shuffle != "off") ||
                      (Traits(cfg.rules).presharded_round_robin && cfg.file_shuffle_given);
  // (Past 64 epochs of a varying order every file is taken as read: a scan of 10^6 epochs would be the run's set-up.)
  const bool every_file = varies && cfg.epochs > 64;
  uint64_t epochs_to_scan = every_file ? 0 : varies ? cfg.epochs : 1;
  if (every_file) std::fill(needed.begin(), needed.end(), 1);
  // v3.0's pre-warm after the last epoch reads the first batches of the epoch after it.
  const uint64_t after_last = varies && !every_file ? PrewarmBatches(cfg, cfg.on_s3()) * cfg.batch_size : 0;
  for (uint64_t a = 0; a < opt.accelerators; ++a) {
    const uint64_t acc = static_cast<uint64_t>(comm.rank()) * opt.accelerators + a;
    for (uint64_t e = 1; e <= epochs_to_scan; ++e) {
      s.sampler->EpochSamples(e, acc, &ids);
      mark(0);
      if (s.eval_sampler) {
        s.eval_sampler->EpochSamples(e, acc, &ids);
        mark(s.eval_id_offset);
      }
    }
    if (after_last > 0) {
      s.sampler->EpochSamples(cfg.epochs + 1, acc, &ids);
      mark(0, after_last);
    }
  }
  for (size_t i = 0; i < files; ++i) {
    if (needed[i]) (i < s.train_files ? f.which : f.which_eval).push_back(i);
  }
  return f;
}

// The paths of the files this rank reads (training, then validation), by file index. Every rank lists both splits
// whatever failed (the listings are collective: a rank that skipped one would leave the others waiting).
Status ListRankFiles(const WorkloadConfig& cfg, const Comm& comm, const RankFiles& f, Setup* s) {
  const std::span<const char> needed(f.needed);
  auto train = ListSplit(cfg, comm, "train", cfg.num_files_train, cfg.num_subfolders_train, needed.first(s->train_files), s);
  Result<PathList> eval = PathList();
  if (s->eval_sampler) {
    eval = ListSplit(cfg, comm, "valid", cfg.num_files_eval, cfg.num_subfolders_eval, needed.subspan(s->train_files), s);
  }
  if (!train.ok()) return train.status();
  if (!eval.ok()) return eval.status();
  s->files = std::move(*train);
  return s->files.Append(*eval);
}

// Formats whose samples hold dataset.record_length_bytes each, as DLIO's generator writes them (images are encoded,
// Parquet columns compressed: their sizes follow other keys).
bool SampleBytesFollowRecordLength(DataFormat f) {
  return f == DataFormat::kNpz || f == DataFormat::kNpy || f == DataFormat::kHdf5 || f == DataFormat::kTfRecord ||
         f == DataFormat::kIndexedBinary;
}

// The files' samples against dataset.record_length_bytes: DLIO's throughput (samples/s x the record length) is only
// as true as the record length, so samples more than twice or under half of it, and more than 4 stdevs away, are
// refused (record_length_bytes: 1e15 over 20 KB files printed 835 TB/s). `mean`: this rank's, in bytes.
Status CheckRecordLength(const WorkloadConfig& cfg, double mean, std::string_view example) {
  const double nominal = cfg.record_length, stdev = cfg.record_length_stdev;
  // A format's own headers (npy's 128 bytes, a zip's, HDF5's metadata) are not a different record length: below
  // 4 KiB apart nothing is refused (record_length_bytes 64 made files of ~400 bytes, refused as "other settings").
  const bool far = (mean > 2 * nominal || mean < nominal / 2) && std::abs(mean - nominal) > 4096;
  if (!far || std::abs(mean - nominal) <= 4 * stdev) return Status::Ok();
  char msg[320];
  std::snprintf(msg, sizeof msg, ") average %.0f bytes, dataset.record_length_bytes is %.0f (stdev %.0f): the dataset "
                "was generated with other settings; give the record length it was generated with, or generate it again",
                mean, nominal, stdev);
  return Status::InvalidArgument(cfg.DataLocation() + ": the samples of the files this rank reads (" + std::string(example) + msg);
}

// The sizes of the files this rank reads, by stat (metadata: no sample byte is read), where a whole-file table needs
// them before the window (O_DIRECT windows, retained or staged batches); `local_bytes` their sum over training files.
Status StatRankFiles(const RankFiles& f, Setup* s, double* local_bytes) {
  for (const std::vector<size_t>* which : {&f.which, &f.which_eval}) {
    for (size_t i : *which) {
      struct stat st {};
      if (s->s3) {  // an object's size is its listing's
        const auto it = s->s3->sizes.find(std::string(s->files.view(i)));
        if (it == s->s3->sizes.end()) return Status::NotFound(std::string(s->files.view(i)) + ": not in the listing");
        st.st_size = static_cast<off_t>(it->second);
      } else if (::stat(s->files.c_str(i), &st) != 0) {
        return Status::Errno("cannot stat " + std::string(s->files.view(i)), errno);
      } else {
        ++s->setup_stats;
      }
      FileSamples fs{0, 0, static_cast<uint64_t>(st.st_size), -1, -1, 0, false, {}};
      fs.layout.size = fs.length;
      s->table.SetFile(static_cast<uint32_t>(i), fs);
      if (which == &f.which) *local_bytes += static_cast<double>(st.st_size);
    }
  }
  return Status::Ok();
}

// MLPerf Storage v3.0's DLIO reads each sample of these formats as its whole file (ReadsWholeFiles): set-up opens
// none of them. Each sample's size is then learnt by its own fstat, as DLIO's open() learns it; where a run needs the
// sizes before the window, the files are stat'ed, and one stat at most checks the record length. Said in
// summary.json (feedrate.setup_reads).
Status WholeFileTable(const WorkloadConfig& cfg, const RunOptions& opt, const RankFiles& f, Setup* s) {
  const bool sizes = cfg.odirect || RetainsBatches(opt) || s->s3;  // (S3: the listing has them)
  double local_bytes = 0;
  if (sizes) {
    s->table = SampleTable(s->files.size(), cfg.num_samples_per_file);
    FEEDRATE_RETURN_IF_ERROR(StatRankFiles(f, s, &local_bytes));
  } else {
    s->table = SampleTable::Uniform(s->files.size(), cfg.num_samples_per_file, FileSamples{0, 0, kWholeFile, -1, -1, 0, false, {}});
    s->images_unopened = IsImage(cfg.format);
    if (!f.which.empty()) {
      struct stat st {};
      if (::stat(s->files.c_str(f.first()), &st) != 0) return Status::Errno("cannot stat " + std::string(s->files.view(f.first())), errno);
      local_bytes = static_cast<double>(st.st_size) * static_cast<double>(f.which.size());
      s->setup_stats = 1;
    }
  }
  s->dataset_bytes = f.which.empty() ? 0 : local_bytes / static_cast<double>(f.which.size()) * static_cast<double>(s->train_files);
  if (f.which.empty() || !SampleBytesFollowRecordLength(cfg.format)) return Status::Ok();
  // (A file holds num_samples_per_file records and its format's few headers.)
  return CheckRecordLength(cfg, local_bytes / static_cast<double>(f.which.size() * cfg.num_samples_per_file), s->files.view(f.first()));
}

// The sample table of the rank's files, the per-sample check their format needs, the dataset size estimate.
Status IndexRankFiles(const WorkloadConfig& cfg, const RunOptions& opt, const RankFiles& f, uint64_t io_threads,
                      Setup* s) {
  const bool memory = !s->s3 && IsMemoryFileSystem(FileSystemType(cfg.data_folder));
  const bool learnt = LearnsLayoutInLanes(cfg, opt, s->s3 != nullptr, memory);  // (np.load's layout, in the window)
  if ((ReadsWholeFiles(cfg.format, cfg.rules) || learnt) && opt.verify <= 0) {
    if (cfg.decode && IsImage(cfg.format)) {
      return Status::InvalidArgument(cfg.source + ": feedrate.decode: " + Traits(cfg.rules).rules + "'s DLIO (" +
                                     Traits(cfg.rules).dlio + ") reads each image whole and never decodes it; "
                                     "--rules upstream decodes as DLIO's PIL reader does");
    }
    return WholeFileTable(cfg, opt, f, s);
  }
  IndexOptions io;
  io.format = cfg.format;
  io.samples_per_file = cfg.num_samples_per_file;
  io.parquet_columns = cfg.ParquetSelectedColumns();
  io.parquet_row_groups = cfg.format == DataFormat::kParquet && cfg.ParquetWholeGroups();
  // Images are read whole without opening a file at setup unless something needs their sizes first: decoding on
  // the I/O threads (decoding in DLIO's worker sequence does not) or checks in retained memory, content
  // verification, O_DIRECT windows (and S3, whose listing has the sizes).
  const bool image = IsImage(cfg.format);
  const bool unopened = image && (!cfg.decode || DecodesInLanes(cfg, opt, s->s3 != nullptr, memory)) && !RetainsBatches(opt) &&
                        opt.verify <= 0 && !cfg.odirect && !s->s3;
  s->images_unopened = unopened;
  io.data_folder = s->s3 ? cfg.S3DataPrefix() : cfg.data_folder;  // (S3: index keys under the normalised prefix)
  std::unique_ptr<S3SourceOpener> opener;
  if (s->s3) {
    opener = std::make_unique<S3SourceOpener>(s->s3->store, s->s3->sizes);
    io.opener = opener.get();
  }
  if (unopened) {  // nothing to look up: every sample is its whole file
    if (cfg.num_samples_per_file != 1) {
      return Status::InvalidArgument(cfg.source + ": image datasets hold one sample per file (dataset.num_samples_per_file=" +
                                     std::to_string(cfg.num_samples_per_file) + ")");
    }
    s->table = SampleTable::Uniform(s->files.size(), 1, FileSamples{0, 0, kWholeFile, -1, -1, 0, false, {}});
  } else {
    s->table = SampleTable(s->files.size(), cfg.num_samples_per_file);
    // Indexing waits on every file's header reads: where each request waits (a network or FUSE store) many threads
    // overlap them (4,096 npz files at 50 ms a request took 233 s with 8); on memory-backed storage they only copy.
    const size_t threads = s->s3 != nullptr || memory ? std::min<uint64_t>(io_threads, 16) : 64;
    SetupReadCount count;
    io.count = &count;
    FEEDRATE_RETURN_IF_ERROR(IndexTrainingFiles(s->files, f.which, io, threads, &s->table));
    io.split = "valid";
    FEEDRATE_RETURN_IF_ERROR(IndexTrainingFiles(s->files, f.which_eval, io, threads, &s->table));
    s->setup_opens += f.size();
    s->setup_reads += count.reads.load();
    s->setup_bytes += count.bytes.load();
  }
  if (cfg.format == DataFormat::kTfRecord) s->table.check = cfg.verify_crc ? SampleCheck::kTfRecordCrc : SampleCheck::kTfRecordFrame;
  if (!s->table.codecs().empty()) s->table.check = SampleCheck::kHdf5Decode;
  if (cfg.decode && image) s->table.check = SampleCheck::kImageDecode;
  if (unopened && !cfg.decode) {
    s->table.check = cfg.format == DataFormat::kPng ? SampleCheck::kPngSignature : SampleCheck::kJpegSignature;
  }
  if (io.parquet_row_groups) s->table.check = cfg.decode ? SampleCheck::kParquetDecode : SampleCheck::kParquetPages;
  if (cfg.decode && !image && cfg.format != DataFormat::kParquet) {
    s->warnings.push_back("feedrate.decode applies to jpeg, png and parquet datasets so far; '" + std::string(Name(cfg.format)) +
                          "' samples are not decoded");
  }
  double local_bytes = 0;
  for (size_t i : f.which) local_bytes += static_cast<double>(s->table.FileDataBytes(static_cast<uint32_t>(i)));
  if (unopened) local_bytes = cfg.record_length * static_cast<double>(f.which.size());  // sizes unread
  // Dataset size estimate for the page-cache check: this rank's files scaled to the whole dataset.
  s->dataset_bytes = f.which.empty() ? 0 : local_bytes / static_cast<double>(f.which.size()) * static_cast<double>(s->train_files);
  if (f.which.empty() || !SampleBytesFollowRecordLength(cfg.format)) return Status::Ok();
  return CheckRecordLength(cfg, local_bytes / static_cast<double>(f.which.size() * cfg.num_samples_per_file), s->files.view(f.first()));
}

// run --verify: the content keys of every file (the dataset's seed from its .feedrate-content marker).
Status PrepareVerify(const WorkloadConfig& cfg, const RunOptions& opt, Setup* s) {
  if (opt.verify > 0) {
    if (!ContentVerifiable(cfg.format)) {
      return Status::InvalidArgument("--verify: content checks cover npz, npy, tfrecord and indexed_binary datasets, not '" +
                                     std::string(Name(cfg.format)) + "'");
    }
    FEEDRATE_ASSIGN_OR_RETURN(const uint64_t seed,
                              s->s3 ? ReadS3ContentMarker(*s->s3) : ReadContentMarker(cfg.data_folder));
    s->content = std::make_unique<ContentCheck>();
    s->content->format = cfg.format;
    s->content->fraction = std::min(1.0, opt.verify);
    s->content->keys.assign(s->files.size(), 0);  // (files this rank does not read: no path, no key)
    for (size_t i = 0; i < s->files.size(); ++i) {
      if (!s->files.held(i)) continue;
      const std::string_view f = s->files.view(i);
      const std::string rel = s->s3 ? std::string(f.substr(s->s3->store.Key("").size()))
                                    : std::filesystem::path(f).lexically_relative(cfg.data_folder).string();
      s->content->keys[i] = ContentKey(seed, rel);
    }
  }
  return Status::Ok();
}

// --cache over the files this rank reads (the paths of those it evicts: keep mode needs none); the edition's flush on
// rank 0's host only.
void SetUpCacheControl(const WorkloadConfig& cfg, const RunOptions& opt, CacheMode mode, const RankFiles& f, Setup* s) {
  std::vector<std::string> evict;
  if (!s->s3 && mode != CacheMode::kKeep) {
    for (size_t i : f.which) evict.emplace_back(s->files.view(i));
    for (size_t i : f.which_eval) evict.emplace_back(s->files.view(i));
  }
  s->cache = std::make_unique<CacheControl>(mode, std::move(evict), s->s3 ? 0 : f.size(), opt.drop_system_caches,
                                            s->host_leader);
  if (ChooseCache(cfg, opt).rank0_host_only) s->cache->PreferSystemDrop();
}

// The read plan's facts: set-up's (FactsOf) and, where the GDS choice needs it, cuFile tried on a file of the rank.
ReadFacts GatherFacts(const WorkloadConfig& cfg, const RunOptions& opt, const RankFiles& f, uint64_t align, Setup* s) {
  ReadFacts facts = FactsOf(cfg, align, *s);
  facts.reads_files = f.size() > 0;
  if (ProbesCuFile(cfg, opt, facts)) {
    facts.cufile_probed = true;
    const Status probe = ProbeCuFile(s->files.c_str(f.first()), &s->staging);
    facts.cufile_error = probe.ok() ? "" : probe.ToString();
  }
  return facts;
}

// The read plan (its refusal and read buffers checked), then the stagings it names. Where cuFile cannot register the
// device slots (GPUDirect chosen on the probe's word), --gds on stops and auto plans again without it: the bounce
// path, its own slots, the reason said.
Status PlanAndStage(const WorkloadConfig& cfg, const RunOptions& opt, uint64_t direct_align, ReadFacts* facts,
                    Setup* s) {
  s->plan = PlanReads(cfg, opt, *facts);
  if (!s->plan.staging.refusal.empty()) return Status::InvalidArgument(s->plan.staging.refusal);
  FEEDRATE_RETURN_IF_ERROR(CheckReadBuffers(cfg, opt, *facts, s->plan));
  Status st = MakeAcceleratorSlots(cfg, s->table, direct_align, s->slot_reads, s->plan.staging, &s->staging);
  if (st.ok() || !s->plan.staging.gds) return st;
  if (opt.gds == GdsMode::kOn) return Status::IoError("--gds on: " + st.message());
  ClearAcceleratorSlots(&s->staging);
  facts->cufile_error = st.message();
  s->plan = PlanReads(cfg, opt, *facts);
  FEEDRATE_RETURN_IF_ERROR(CheckReadBuffers(cfg, opt, *facts, s->plan));
  return MakeAcceleratorSlots(cfg, s->table, direct_align, s->slot_reads, s->plan.staging, &s->staging);
}

// A container's memory limit below the host's: the page cache holds at most the limit, while the dataset-size rule
// counts the host's memory, as mlpstorage does. Said once, so a run's verdict is read with it.
void NoteCgroupLimit(Setup* s) {
  const HostInfo host = ReadHostInfo();
  if (host.cgroup_limit_bytes == 0 || host.cgroup_limit_bytes >= host.mem_total_bytes) return;
  s->warnings.push_back("this process's cgroup limits memory to " + Gib(static_cast<double>(host.cgroup_limit_bytes)) +
                        " (the host has " + Gib(static_cast<double>(host.mem_total_bytes)) +
                        "): its page cache holds at most that; the dataset-size rule counts the host's memory, as "
                        "mlpstorage does");
}

}  // namespace

ReadFacts StorageFactsOf(const WorkloadConfig& cfg, bool s3, uint64_t direct_align) {
  ReadFacts f;
  f.s3 = s3;
  f.memory_storage = !s3 && IsMemoryFileSystem(FileSystemType(cfg.data_folder));
  f.cpus = CpuAffinity().size();
  f.direct_align = direct_align;
  return f;
}

ReadFacts FactsOf(const WorkloadConfig& cfg, uint64_t direct_align, const Setup& s) {
  ReadFacts f = StorageFactsOf(cfg, s.s3 != nullptr, direct_align);
  f.max_sample = s.table.MaxLength();
  f.sizes_unread = s.table.WholeFilesUnsized();
  f.slot_bytes =
      Prefetcher::SlotBytes(s.table, s.slot_reads.train, cfg.odirect ? std::max<uint64_t>(1, direct_align) : 0);
  f.content = s.content != nullptr;
  f.check = s.table.check;
  f.images_unopened = s.images_unopened;
  // In a container the cgroup's limit, not the host's MemAvailable, is what the buffers can take before the OOM
  // killer ends the run without a word.
  const HostInfo host = ReadHostInfo();
  f.available_bytes = static_cast<double>(host.usable_available_bytes());
  f.available_what = host.usable_available_bytes() < host.mem_available_bytes
                         ? "what this cgroup's memory limit leaves (" +
                               Gib(static_cast<double>(host.cgroup_limit_bytes)) + " limit, " +
                               Gib(static_cast<double>(host.cgroup_usage_bytes)) + " used: " + Gib(f.available_bytes) +
                               ")"
                         : "MemAvailable (" + Gib(f.available_bytes) + ")";
  return f;
}

Status PrepareRank(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, Setup* s) {
  CacheMode mode = CacheMode::kKeep;
  FEEDRATE_RETURN_IF_ERROR(CheckRequest(cfg, opt, comm, &mode));
  if (cfg.on_s3()) {
    s->s3 = std::make_unique<S3RunSetup>();
    PrepareS3(cfg, mode, s->s3.get());  // (its error is returned once the listing is shared)
  }
  FEEDRATE_RETURN_IF_ERROR(ListDatasetFirst(cfg, comm, s));
  FEEDRATE_RETURN_IF_ERROR(BuildSamplers(cfg, opt, comm, s));
  RankFiles f = SelectRankFiles(cfg, opt, comm, *s);
  FEEDRATE_RETURN_IF_ERROR(ListRankFiles(cfg, comm, f, s));
  f.needed = {};
  s->host_leader = comm.host_leader();
  SetUpCacheControl(cfg, opt, mode, f, s);
  if (!s->s3) s->storage = StorageCounter::For(cfg.data_folder);
  uint64_t align = 4096;
  if (cfg.odirect && f.size() > 0) {
    FEEDRATE_ASSIGN_OR_RETURN(auto a, DirectIoAlignment(s->files.c_str(f.first())));
    align = a;
  }
  // Indexing waits on the files' headers with the run's own I/O-thread count (the plan's request, before the plan).
  const uint64_t index_threads =
      ResolveEngineOptions(EngineRequestOf(cfg, opt, StorageFactsOf(cfg, s->s3 != nullptr, align))).io_threads;
  FEEDRATE_RETURN_IF_ERROR(IndexRankFiles(cfg, opt, f, index_threads, s));
  s->slot_reads.train = s->table.MaxReadsPerBatch(cfg.batch_size, s->sampler->contiguous());
  if (s->eval_sampler)
    s->slot_reads.eval = s->table.MaxReadsPerBatch(cfg.batch_size_eval, s->eval_sampler->contiguous());
  FEEDRATE_RETURN_IF_ERROR(PrepareVerify(cfg, opt, s));
  FEEDRATE_RETURN_IF_ERROR(SetUpAccelerators(cfg, opt, comm, s->table, &s->staging));
  ReadFacts facts = GatherFacts(cfg, opt, f, align, s);
  FEEDRATE_RETURN_IF_ERROR(PlanAndStage(cfg, opt, cfg.odirect ? align : 0, &facts, s));
  NoteCgroupLimit(s);
  return OpenEngine(cfg, opt, comm, facts, s);
}

}  // namespace feedrate
