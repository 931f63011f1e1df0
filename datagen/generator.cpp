// Parallel DLIO-layout dataset generation.
#include "datagen/generator.h"

#include "loader/util/content_pattern.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "datagen/background_committer.h"
#include "datagen/hdf5_writer.h"
#include "datagen/indexed_binary_writer.h"
#include "datagen/jpeg_writer.h"
#include "loader/util/dlio_edition.h"
#include "datagen/npy_writer.h"
#include "datagen/npz_writer.h"
#include "datagen/parquet_writer.h"
#include "datagen/png_writer.h"
#include "datagen/s3_upload.h"
#include "datagen/temp_file.h"
#include "datagen/tfrecord_writer.h"
#include "loader/dataset/dataset.h"
#include "loader/format/hdf5.h"
#include "loader/format/parquet_codec.h"
#include "loader/format/tfrecord.h"
#include "loader/io/unique_fd.h"
#include "loader/util/numpy_random.h"

namespace feedrate {
namespace fs = std::filesystem;

std::vector<std::pair<uint64_t, uint64_t>> DlioDimensions(double record_length, double record_length_stdev,
                                                          uint64_t total_files) {
  auto dim = static_cast<uint64_t>(std::sqrt(record_length));
  double dim_stdev = record_length_stdev / 2.0 / std::sqrt(record_length);
  std::vector<std::pair<uint64_t, uint64_t>> dims(total_files, {std::max<uint64_t>(dim, 1), std::max<uint64_t>(dim, 1)});
  if (dim_stdev > 0) {
    NumpyRandomState rng(10);
    auto draw = [&] {
      double v = rng.Normal(static_cast<double>(dim), dim_stdev);
      auto t = static_cast<int64_t>(std::trunc(v));
      return static_cast<uint64_t>(std::max<int64_t>(t, 1));
    };
    for (auto& d : dims) {
      d.first = draw();
      d.second = draw();
    }
  }
  return dims;
}

namespace {

struct Job {
  std::string path;
  std::string index_path;  // TFRecord: the .idx file written beside the dataset
  uint64_t d1, d2, samples;
  uint64_t index;
  const WorkloadConfig* cfg;  // outlives the jobs (GenerationRun's)
};

// Parquet's layout comes from the workload's columns, not only (d1, d2).
ParquetFileSpec ParquetSpecOf(const Job& j) { return DlioParquetSpec(*j.cfg, j.d1, j.d2); }

// JPEG and PNG as the emulated DLIO's generator writes them: d1 x d2 raw bytes under MLPerf Storage v3.0's.
bool RawImages(DataFormat format, const Job& j) { return IsImage(format) && Traits(j.cfg->rules).raw_image_datagen; }

uint64_t PlannedSize(DataFormat format, const Job& j) {
  if (RawImages(format, j)) return j.d1 * j.d2;
  if (format == DataFormat::kParquet) return ParquetDataBytes(ParquetSpecOf(j));
  if (format == DataFormat::kTfRecord) return DlioTfRecordFileSize({j.d1, j.d2, j.samples});
  if (format == DataFormat::kNpy) return DlioNpyFileSize({j.d1, j.d2, j.samples});
  if (format == DataFormat::kHdf5) return DlioHdf5DataBytes({j.d1, j.d2, j.samples}) + 16384;  // + metadata, 4 KiB-aligned
  if (format == DataFormat::kIndexedBinary) return IndexedBinaryFileSize({j.d1, j.d2, j.samples});
  if (format == DataFormat::kPng) return j.d1 * (j.d2 + 1) + j.d1 * j.d2 / 1000 + 4096;  // noise does not compress: ~raw
  if (format == DataFormat::kJpeg) return j.d1 * j.d2 + 4096;  // quality-75 noise stays below 1 byte/pixel
  return DlioNpzFileSize({j.d1, j.d2, j.samples});
}

// The first bytes a complete file of `format` starts with: the npy magic, a zip local header, or a TFRecord whose
// first length field carries its CRC. Other formats: true (their own checks below).
bool HeaderLooksRight(DataFormat format, const std::string& path) {
  if (format != DataFormat::kNpz && format != DataFormat::kNpy && format != DataFormat::kTfRecord) return true;
  char b[12] = {};
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0 || ::pread(fd.get(), b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) return false;
  if (format == DataFormat::kNpy) return std::memcmp(b, "\x93NUMPY", 6) == 0;
  if (format == DataFormat::kNpz) return std::memcmp(b, "PK\x03\x04", 4) == 0;
  uint32_t stored = 0;
  std::memcpy(&stored, b + 8, 4);
  return TfRecordPayloadCrc(b, 8) == stored;  // the masked CRC-32C of the length field
}

// A file --skip-existing may keep: the exact size and the right first bytes for the formats whose size is known in
// advance; for HDF5 (whose metadata the library lays out) a file that opens with `records` of the expected shape.
bool AlreadyComplete(DataFormat format, const Job& j) {
  struct stat st {};
  if (::stat(j.path.c_str(), &st) != 0) return false;
  if (!j.index_path.empty() && ::stat(j.index_path.c_str(), &st) != 0) return false;
  if (RawImages(format, j)) return static_cast<uint64_t>(st.st_size) == PlannedSize(format, j);
  if (format == DataFormat::kPng) return PngHasSize(j.path, j.d1, j.d2);
  if (format == DataFormat::kJpeg) return JpegHasSize(j.path, j.d1, j.d2);
  if (format == DataFormat::kParquet) return ParquetFileMatches(j.path, ParquetSpecOf(j));
  if (format == DataFormat::kIndexedBinary &&
      (::stat((j.path + ".off.idx").c_str(), &st) != 0 || ::stat((j.path + ".sz.idx").c_str(), &st) != 0)) {
    return false;
  }
  if (format != DataFormat::kHdf5) {
    return ::stat(j.path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == PlannedSize(format, j) &&
           HeaderLooksRight(format, j.path);
  }
  auto list = ListHdf5Datasets(j.path);
  if (!list.ok()) return false;
  for (const auto& d : *list) {
    if (d.path == "/records") return d.shape == std::vector<uint64_t>{j.samples, j.d1, j.d2};
  }
  return false;
}

Status WriteOne(DataFormat format, const Job& j, const ContentSpec& content, AlignedBuffer* scratch) {
  const uint64_t seed = 0x5eed0000ULL + j.index;
  if (format == DataFormat::kNpz) return WriteDlioNpz(j.path, {j.d1, j.d2, j.samples}, content, scratch);
  if (format == DataFormat::kNpy) return WriteDlioNpy(j.path, {j.d1, j.d2, j.samples}, content, scratch);
  if (format == DataFormat::kHdf5) return WriteDlioHdf5(j.path, {j.d1, j.d2, j.samples}, seed, scratch);
  if (format == DataFormat::kIndexedBinary) return WriteIndexedBinary(j.path, {j.d1, j.d2, j.samples}, content, scratch);
  if (format == DataFormat::kParquet) return WriteDlioParquet(j.path, ParquetSpecOf(j), seed);
  if (format == DataFormat::kPng || format == DataFormat::kJpeg) {
    if (j.samples != 1) return Status::InvalidArgument(j.path + ": image datasets hold one sample per file");
    if (RawImages(format, j)) return WriteRawImage(j.path, j.d1, j.d2, content, scratch);
    return format == DataFormat::kPng ? WritePng(j.path, j.d1, j.d2, seed, scratch)
                                      : WriteJpeg(j.path, j.d1, j.d2, seed, scratch);
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto entries, WriteDlioTfRecord(j.path, {j.d1, j.d2, j.samples}, content, scratch));
  return WriteDatasetFile(j.index_path, FormatTfRecordIndex(entries));
}

Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Errno("cannot create directory " + dir, ec.value());
  return Status::Ok();
}

// The files a job leaves (relative to the data folder they were written under): the data file, a TFRecord's
// .idx, indexed_binary's two index arrays.
std::vector<std::string> JobOutputs(DataFormat format, const Job& j) {
  std::vector<std::string> out{j.path};
  if (!j.index_path.empty()) out.push_back(j.index_path);
  if (format == DataFormat::kIndexedBinary) {
    out.push_back(j.path + ".off.idx");
    out.push_back(j.path + ".sz.idx");
  }
  return out;
}

// S3: the objects already there (for --skip-existing): a data object is kept when its size is the planned one
// and its index objects exist; formats without an exact planned size (hdf5, png, jpeg) are generated again.
bool S3AlreadyComplete(DataFormat format, const Job& j, const std::string& staging, const S3Store& store,
                       const S3SizeMap& existing) {
  if (format == DataFormat::kHdf5 || IsImage(format) || format == DataFormat::kParquet) return false;
  for (const auto& f : JobOutputs(format, j)) {
    auto it = existing.find(store.Key(fs::path(f).lexically_relative(staging).string()));
    if (it == existing.end()) return false;
    if (f == j.path && it->second != PlannedSize(format, j)) return false;
  }
  return true;
}

// One rank's share of a dataset, in phases: the request checked, the jobs planned, folders and the content marker,
// the free-space check, writer threads over the jobs (each file written, and on S3 uploaded), the figures.
class GenerationRun {
 public:
  GenerationRun(const WorkloadConfig& cfg, const DatagenOptions& opt, const S3Store* store, const S3SizeMap& existing)
      : cfg_(cfg), opt_(opt), store_(store), existing_(existing) {}

  Result<DatagenStats> Run() {
    FEEDRATE_RETURN_IF_ERROR(CheckRequest());
    FEEDRATE_RETURN_IF_ERROR(CheckNoOtherDatagen());
    PlanJobs();
    FEEDRATE_RETURN_IF_ERROR(PrepareFolders());
    FEEDRATE_RETURN_IF_ERROR(CheckFreeSpace());
    FEEDRATE_RETURN_IF_ERROR(WriteAll());
    return Collect();
  }

 private:
  // A folder that holds another datagen's files (a bigger dataset generated there before): this one would write
  // beside them and a run would read a mixture (DLIO's order puts img_00_of_64 before img_0_of_8). Refused, naming
  // both; nothing is written or removed. (S3 stages locally: its prefix is not looked at.)
  Status CheckNoOtherDatagen() const {
    if (store_ != nullptr) return Status::Ok();
    for (const auto& [split, n] : {std::pair<const char*, uint64_t>{"train", cfg_.num_files_train}, {"valid", cfg_.num_files_eval}}) {
      if (n == 0) continue;
      const std::string dir = (fs::path(cfg_.data_folder) / split).string();
      FEEDRATE_ASSIGN_OR_RETURN(auto generations, CountGenerations(dir, cfg_.format));
      std::string others;
      for (const auto& [m, count] : generations) {
        if (m == 0 || m == n) continue;
        others += (others.empty() ? "" : ", ") + std::to_string(count) + " named *_of_" + std::to_string(m) + "." + Name(cfg_.format);
      }
      if (!others.empty()) {
        return Status::InvalidArgument(dir + " holds files of another datagen (" + others + "): this one writes " +
                                       std::to_string(n) + " named *_of_" + std::to_string(n) + " beside them, and a run "
                                       "would read a mixture (the first num_files in DLIO's order); remove them, or "
                                       "generate into another --data-dir (nothing was written)");
      }
    }
    return Status::Ok();
  }

  // What cannot be generated, refused before anything is written (InvalidArgument naming the key).
  Status CheckRequest() const {
    using F = DataFormat;
    static const std::set<DataFormat> kFormats = {F::kNpz, F::kNpy,  F::kTfRecord, F::kHdf5,
                                                  F::kIndexedBinary, F::kPng, F::kJpeg, F::kParquet};
    if (kFormats.count(cfg_.format) == 0) {
      return Status::InvalidArgument(cfg_.source + ": key dataset.format: generating '" + std::string(Name(cfg_.format)) +
                                     "' datasets is not supported (npz, npy, tfrecord, hdf5, indexed_binary, parquet, png and jpeg are)");
    }
    if (cfg_.format == DataFormat::kParquet && ParquetCodecFor(cfg_.compression) < 0) {
      return Status::InvalidArgument(cfg_.source + ": key dataset.compression: Parquet pages take none, snappy, gzip, zstd or lz4");
    }
    if (cfg_.format != DataFormat::kParquet && cfg_.compression != "none") {
      return Status::InvalidArgument(cfg_.source + ": key dataset.compression: only 'none' is supported for generating " +
                                     std::string(Name(cfg_.format)));
    }
    if (opt_.verifiable_content && !ContentVerifiable(cfg_.format)) {
      return Status::InvalidArgument("--content verifiable: not available for '" + std::string(Name(cfg_.format)) +
                                     "' datasets (npz, npy, tfrecord and indexed_binary): hdf5 chunks are placed by "
                                     "libhdf5 and jpeg/png bytes are compressed, so their stored bytes are not a function "
                                     "of the offset");
    }
    return Status::Ok();
  }

  // File i (train, then valid) goes to rank i mod ranks, with DLIO's shape draws.
  void PlanJobs() {
    const uint64_t total = cfg_.num_files_train + cfg_.num_files_eval;
    const auto dims = DlioDimensions(cfg_.record_length, cfg_.record_length_stdev, total);
    for (uint64_t i = static_cast<uint64_t>(opt_.rank); i < total; i += static_cast<uint64_t>(opt_.ranks)) {
      const bool train = i < cfg_.num_files_train;
      const uint64_t k = train ? i : i - cfg_.num_files_train;
      const uint64_t n = train ? cfg_.num_files_train : cfg_.num_files_eval;
      const uint64_t nsub = train ? cfg_.num_subfolders_train : cfg_.num_subfolders_eval;
      const char* split = train ? "train" : "valid";
      std::string path = DlioFilePath(cfg_.data_folder, split, cfg_.file_prefix, k, n, nsub, cfg_.format);
      std::string idx = cfg_.format == DataFormat::kTfRecord ? TfRecordIndexPath(cfg_.data_folder, split, path) : std::string();
      jobs_.push_back({path, idx, dims[i].first, dims[i].second, cfg_.num_samples_per_file, i, &cfg_});
    }
  }

  // The content marker (rank 0), valid/ (rank 0; DLIO lists it whether or not there are eval files), and every
  // folder this rank writes into (idempotent, so no barrier is needed).
  Status PrepareFolders() const {
    if (opt_.rank == 0) {
      FEEDRATE_RETURN_IF_ERROR(MakeDirs(cfg_.data_folder));
      FEEDRATE_RETURN_IF_ERROR(WriteContentMarker());
      if (store_ == nullptr) FEEDRATE_RETURN_IF_ERROR(MakeDirs((fs::path(cfg_.data_folder) / "valid").string()));
    }
    for (const auto& j : jobs_) {
      FEEDRATE_RETURN_IF_ERROR(MakeDirs(fs::path(j.path).parent_path().string()));
      if (!j.index_path.empty()) FEEDRATE_RETURN_IF_ERROR(MakeDirs(fs::path(j.index_path).parent_path().string()));
    }
    return Status::Ok();
  }

  // Written first, so a dataset interrupted half-way still says what its files should hold (a random file kept by
  // --skip-existing then fails --verify, naming it); a random dataset removes it.
  Status WriteContentMarker() const {
    if (store_ != nullptr) {
      FEEDRATE_ASSIGN_OR_RETURN(auto client, store_->Connect(1));
      const std::string key = store_->Key(".feedrate-content");
      const std::string text = ContentMarkerText(opt_.content_seed);
      Status marker = opt_.verifiable_content ? client->Put(key, text.data(), text.size()) : client->Delete(key);
      return marker.ok() || marker.code() == Status::Code::kNotFound ? Status::Ok() : marker;
    }
    if (opt_.verifiable_content) {
      return WriteDatasetFile(ContentMarkerPath(cfg_.data_folder), ContentMarkerText(opt_.content_seed));
    }
    std::error_code ec;
    fs::remove(ContentMarkerPath(cfg_.data_folder), ec);
    return Status::Ok();
  }

  bool Complete(const Job& j) const {
    return store_ != nullptr ? S3AlreadyComplete(cfg_.format, j, cfg_.data_folder, *store_, existing_)
                             : AlreadyComplete(cfg_.format, j);
  }

  // Refuses up front when this rank's share cannot fit, rather than filling the file system.
  Status CheckFreeSpace() const {
    uint64_t need = 0, largest = 0;
    for (const auto& j : jobs_) {
      if (opt_.skip_existing && Complete(j)) continue;
      need += PlannedSize(cfg_.format, j);
      largest = std::max(largest, PlannedSize(cfg_.format, j));
    }
    // S3: the staging directory holds one file per writer thread at a time.
    if (store_ != nullptr) need = std::min(need, largest * std::max<size_t>(1, opt_.threads));
    struct statvfs vfs {};
    if (jobs_.empty() || ::statvfs(cfg_.data_folder.c_str(), &vfs) != 0) return Status::Ok();
    const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (need <= avail) return Status::Ok();
    return Status::IoError(cfg_.data_folder + ": not enough space: this rank would write " + std::to_string(need >> 20) +
                           " MiB, the file system has " + std::to_string(avail >> 20) +
                           " MiB free (check dataset.record_length_bytes and its _stdev)");
  }

  // Writer threads over the jobs. Durable runs commit (fsync, close, link) on one background thread, so no writer
  // idles while the device drains a finished file; a few files may wait, each writer's next file is already
  // being generated.
  Status WriteAll() {
    std::unique_ptr<BackgroundCommitter> committer;
    if (opt_.fsync && store_ == nullptr) committer = std::make_unique<BackgroundCommitter>(2 * std::max<size_t>(opt_.threads, 1) + 2);
    struct CommitterInstall {
      explicit CommitterInstall(BackgroundCommitter* c) { TempFile::SetBackgroundCommitter(c); }
      ~CommitterInstall() { TempFile::SetBackgroundCommitter(nullptr); }
    } install(committer.get());
    done_.assign(jobs_.size(), 0);
    std::vector<std::thread> pool;
    const size_t n = std::max<size_t>(1, std::min(opt_.threads, jobs_.size()));
    for (size_t t = 1; t < n; ++t) pool.emplace_back([this] { Worker(); });
    Worker();
    for (auto& t : pool) t.join();
    if (committer) {
      Status s = committer->Finish();
      if (!s.ok()) Fail(s);
    }
    return failed_.load() ? first_error_ : Status::Ok();
  }

  void Fail(const Status& s) {
    std::lock_guard<std::mutex> lock(err_mu_);
    if (first_error_.ok()) first_error_ = s;
    failed_.store(true);
  }

  void Worker() {
    AlignedBuffer scratch(static_cast<size_t>(std::clamp<uint64_t>(opt_.write_size, 4096, uint64_t{64} << 20)));
    std::unique_ptr<S3Uploader> uploader;
    if (store_ != nullptr) {
      auto u = S3Uploader::Create(*store_, opt_.s3_part_size);
      if (!u.ok()) return Fail(u.status());
      uploader = std::move(*u);
    }
    for (size_t i; !failed_.load(std::memory_order_relaxed) && (i = next_.fetch_add(1)) < jobs_.size();) {
      if (opt_.skip_existing && Complete(jobs_[i])) {
        skipped_.fetch_add(1);
        continue;
      }
      Status s = WriteJob(jobs_[i], &scratch, uploader.get());
      if (!s.ok()) {
        Fail(s);
        break;
      }
      done_[i] = 1;
    }
    if (uploader) s3_requests_.fetch_add(uploader->requests());
  }

  // Writes one file (random bytes distinct per file, or the verifiable pattern); on S3 every file the job left
  // becomes an object (data last, so a listed data object has its indexes) and is removed from staging.
  Status WriteJob(const Job& j, AlignedBuffer* scratch, S3Uploader* uploader) {
    ContentSpec content(0x5eed0000ULL + j.index);
    if (opt_.verifiable_content) {
      content = ContentSpec::Verifiable(ContentKey(opt_.content_seed, fs::path(j.path).lexically_relative(cfg_.data_folder).string()));
    }
    Status s = WriteOne(cfg_.format, j, content, scratch);
    std::vector<std::string> outputs = store_ != nullptr ? JobOutputs(cfg_.format, j) : std::vector<std::string>();
    std::reverse(outputs.begin(), outputs.end());
    for (const auto& f : outputs) {
      if (!s.ok()) break;
      uint64_t bytes = 0;
      s = uploader->Upload(f, store_->Key(fs::path(f).lexically_relative(cfg_.data_folder).string()), &bytes);
      if (f == j.path) uploaded_bytes_.fetch_add(bytes);
      std::error_code ec;
      fs::remove(f, ec);
    }
    return s;
  }

  DatagenStats Collect() const {
    DatagenStats stats;
    stats.s3_requests = s3_requests_.load();
    stats.files_skipped = skipped_.load();
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (done_[i] == 0) continue;
      stats.files_written += 1;
      struct stat st {};
      if (store_ == nullptr && ::stat(jobs_[i].path.c_str(), &st) == 0) stats.bytes_written += static_cast<uint64_t>(st.st_size);
    }
    if (store_ != nullptr) stats.bytes_written = uploaded_bytes_.load();
    return stats;
  }

  const WorkloadConfig& cfg_;
  const DatagenOptions& opt_;
  const S3Store* store_;
  const S3SizeMap& existing_;
  std::vector<Job> jobs_;
  std::vector<char> done_;  // per job, written by the one worker that took it
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> skipped_{0}, uploaded_bytes_{0}, s3_requests_{0};
  std::mutex err_mu_;  // guards first_error_ (error path only)
  Status first_error_;
};

}  // namespace

Result<DatagenStats> GenerateDataset(const WorkloadConfig& cfg_in, const DatagenOptions& opt) {
  // S3: generate under a staging directory, each file uploaded and removed as soon as it is written.
  WorkloadConfig cfg = cfg_in;
  std::unique_ptr<S3Store> store;
  S3SizeMap existing;
  if (cfg.on_s3()) {
    FEEDRATE_ASSIGN_OR_RETURN(auto s, S3StoreFor(cfg));
    store = std::make_unique<S3Store>(std::move(s));
    const std::string base = !opt.staging_dir.empty() ? opt.staging_dir : fs::temp_directory_path().string();
    cfg.data_folder = (fs::path(base) / ("feedrate-datagen-" + std::to_string(::getpid()) + "-r" + std::to_string(opt.rank))).string();
    FEEDRATE_ASSIGN_OR_RETURN(auto client, store->Connect(1));
    // The bucket, when it is not there yet. Every rank makes sure before it uploads (no barrier here); when
    // several create it at once, the losers hear 409 (BucketAlreadyOwnedByYou / BucketAlreadyExists).
    S3Request probe;
    probe.method = S3Request::Method::kHead;
    if (!client->Run(probe).ok() && probe.http_status == 404) {
      S3Request create;
      create.method = S3Request::Method::kPut;
      Status made = client->Run(create);
      if (!made.ok() && create.http_status != 409) return made.WithContext("creating the bucket");
    }
    if (opt.skip_existing) {
      FEEDRATE_ASSIGN_OR_RETURN(auto listed, client->List(store->Key("")));
      for (const auto& o : listed) existing[o.key] = o.size;
    }
  }
  struct StagingCleanup {
    std::string dir;
    ~StagingCleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{store ? cfg.data_folder : std::string()};
  return GenerationRun(cfg, opt, store.get(), existing).Run();
}

}  // namespace feedrate
