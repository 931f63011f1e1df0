// Dataset generation in DLIO's layout: the same file names and shapes as DLIO for the same configuration,
// files split over MPI ranks (file i to rank i mod P) and over writer threads within a rank.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loader/config/workload_config.h"
#include "loader/status.h"

namespace feedrate {

// DLIO's per-file (d1, d2) for `total_files` (train then eval): np.random.seed(10), then
// normal(dim, dim_stdev, 2*total_files) with dim = int(sqrt(record_length)),
// dim_stdev = stdev / (2 sqrt(record_length)); each draw truncated toward zero, minimum 1.
std::vector<std::pair<uint64_t, uint64_t>> DlioDimensions(double record_length, double record_length_stdev,
                                                          uint64_t total_files);

struct DatagenOptions {
  int rank = 0;
  int ranks = 1;
  size_t threads = 1;
  bool skip_existing = false;  // keep a file that already has exactly the expected size
  bool fsync = false;          // fsync each file before its rename (TempFile::SetDurableCommits)
  // Bytes per write: each writer thread's buffer. 256 KiB measured best for buffered writes on the development VM
  // (4 MiB writes cost up to 4x the system time in page-cache copies; fio shows the same, results/ datagen_vs_fio).
  uint64_t write_size = 256 << 10;
  // --content verifiable: payload bytes follow content_pattern.h keyed by content_seed and each file's path
  // relative to the data folder; rank 0 leaves the marker (.feedrate-content) that `run --verify` reads.
  bool verifiable_content = false;
  uint64_t content_seed = 0;
  // S3 datasets (storage.storage_type s3): each file is written to a local staging directory (this, else
  // $TMPDIR or /tmp), uploaded (PUT, or multipart above s3_part_size) and removed there.
  std::string staging_dir;
  uint64_t s3_part_size = 16 << 20;
};

struct DatagenStats {
  uint64_t files_written = 0;
  uint64_t files_skipped = 0;
  uint64_t bytes_written = 0;
  uint64_t s3_requests = 0;  // PUT / multipart requests sent (S3 datasets)
};

// Generates this rank's share of the dataset described by `cfg` (train and, if configured, valid).
// Every error comes back as the Status (one channel): InvalidArgument for what cannot be generated (the format, its
// compression, verifiable content), I/O errors naming the file.
Result<DatagenStats> GenerateDataset(const WorkloadConfig& cfg, const DatagenOptions& options);

}  // namespace feedrate
