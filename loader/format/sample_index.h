// Turns dataset files into the extents that reading their samples covers, per format, from the files' headers
// only (built once per file before the run).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loader/format/sample_table.h"
#include "loader/io/byte_source.h"
#include "loader/status.h"
#include "loader/util/choices.h"
#include "loader/util/path_list.h"

namespace feedrate {

// Where the indexer reads files from when they are not local files (S3 objects: loader/s3/s3_source.h).
class SourceOpener {
 public:
  virtual ~SourceOpener() = default;
  // `name` as the dataset lists it (a key); NotFound when it does not exist. Called from several threads.
  virtual Result<std::unique_ptr<ByteSource>> Open(const std::string& name) const = 0;
  // What the store is called in messages ("S3").
  virtual const char* kind() const = 0;
};

// What indexing read of the storage before training (every ByteSource it opened): requests and bytes. Shared by the
// indexing threads.
struct SetupReadCount {
  std::atomic<uint64_t> reads{0}, bytes{0};
};

struct IndexOptions {
  DataFormat format = DataFormat::kNpz;  // dataset.format
  uint64_t samples_per_file = 1;
  std::string data_folder;        // for TFRecord .idx files: <data_folder>/index/<split>/<file>.idx
  std::string split = "train";
  const SourceOpener* opener = nullptr;  // nullptr: local files
  std::vector<std::string> parquet_columns;  // Parquet: the top-level columns training reads (empty: all)
  bool parquet_row_groups = false;  // Parquet: a row group's first row reads its whole span (the others nothing)
  SetupReadCount* count = nullptr;  // where the reads are counted (nullptr: not counted); outlives the call
};

// What reading a file's samples needs beyond extents: HDF5 filtered chunks' codec and per-extent filter masks.
struct FileDecode {
  std::optional<Hdf5ChunkCodec> codec;
  std::vector<uint32_t> masks;  // parallel to the listed extents
  std::vector<PqGroupLayout> parquet;  // Parquet row-group reads: each row group's span and selected chunks
};

// A file's extents where they are not arithmetic: one per sample, or (Parquet) one per row group.
struct ListedExtents {
  std::vector<SampleExtent> samples;        // FileSamples::listed_begin >= 0
  std::vector<PqRowGroupSpan> row_groups;   // FileSamples::groups_begin >= 0
};

// The samples of file `path`. npz: every sample reads the whole `x.npy` member, as DLIO's reader loads the full
// array (np.load(f)['x']) and slices sample k from its last axis; npy: the whole array. TFRecord: record k,
// header and footer included (from the DLIO/DALI .idx file when present, else from the headers); the file must
// hold at least samples_per_file records, the first ones are used. HDF5: row k of `records`, where the library
// says it lies; for a filtered dataset sample k reads the whole stored chunk that holds row k (as libhdf5 does
// when its chunk cache cannot hold the chunk) and *decode says how to decode it (nullptr: filtered datasets are
// refused). Parquet: rows are samples; row group g's read is the span of its selected columns' chunks (MLPerf
// Storage v3.0's byte-range reader), split among its rows in order, so the rows of a row group read it once,
// and back-to-back rows coalesce into large reads (docs/dlio-compatibility.md); with o.parquet_row_groups the
// row group's first row reads the whole span, as that reader does, and *decode lists the chunks inside it.
// Parquet files are indexed per row group (listed->row_groups), never per row.
Result<FileSamples> IndexTrainingFile(const std::string& path, const IndexOptions& o, ListedExtents* listed,
                                      FileDecode* decode = nullptr);

// Indexes files[which[k]] for every k into `table` (sized for all files), using `threads` threads. Returns the
// first error (by file order).
Status IndexTrainingFiles(const PathList& files, const std::vector<size_t>& which, const IndexOptions& o,
                          size_t threads, SampleTable* table);

// Formats whose training reads Feedrate implements so far.
bool TrainingFormatSupported(DataFormat format);

}  // namespace feedrate
