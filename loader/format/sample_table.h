// Where every sample of the dataset lives: per file, either one extent shared by all its samples (npz/npy, which
// DLIO loads whole), a uniform run (fixed-size records: DLIO's TFRecord files, HDF5 rows), listed extents, or
// (Parquet) row groups whose rows are the samples.
// Lookups are arithmetic, so the hot path neither allocates nor locks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "loader/format/access_pattern.h"
#include "loader/format/hdf5_chunk_codec.h"
#include "loader/format/parquet_decode.h"
#include "loader/io/io_engine.h"

namespace feedrate {

// What to check on a sample once it is in memory.
enum class SampleCheck : uint8_t {
  kNone,
  kTfRecordFrame,  // the record's length field and its CRC
  kTfRecordCrc,    // and the payload CRC
  kHdf5Decode,     // HDF5 filtered chunks: Fletcher-32, inflate, unshuffle (files without filters: nothing)
  kImageDecode,    // JPEG/PNG: the whole image decoded to pixels (feedrate.decode)
  kJpegSignature,  // JPEG/PNG files not opened at setup: the format's signature, checked once read (when the file
  kPngSignature,   // fit one transfer)
  kParquetPages,   // Parquet row-group reads: the page headers of the selected column chunks walked
  kParquetDecode,  // and every page decompressed and decoded (feedrate.decode)
};

struct FileSamples {
  uint64_t first_offset = 0;
  uint64_t stride = 0;  // bytes between consecutive samples; 0: every sample reads the same extent
  uint64_t length = 0;  // bytes per sample read
  int64_t listed_begin = -1;  // >= 0: the file's extents are listed from here in SampleTable's list
  int64_t groups_begin = -1;  // >= 0: Parquet: the file's row groups from here in SampleTable's group list
  uint32_t groups = 0;
  bool whole_groups = false;  // a row group's first row reads its whole span, its other rows nothing
  FileLayout layout{};        // npz/npy: what DLIO's reader's calls depend on (access_pattern.h)
};

// A Parquet row group as its rows read it: rows [first_row, first_row + rows) of the file (rows > 0) and the span
// of its selected columns' chunks. Per row group, not per row: DLRM's 4.8 billion rows are 786,432 of these.
struct PqRowGroupSpan {
  uint64_t first_row = 0, rows = 0;
  uint64_t offset = 0, length = 0;
};

class SampleTable {
 public:
  SampleTable() = default;
  SampleTable(size_t num_files, uint64_t samples_per_file)
      : files_(num_files), num_files_(num_files), spf_(samples_per_file) {}
  // Every file alike (whole JPEG/PNG files not opened at setup): no per-file entry, so a million-file table costs
  // nothing. SetFile and SetListed must not be called on it.
  static SampleTable Uniform(size_t num_files, uint64_t samples_per_file, const FileSamples& every) {
    SampleTable t;
    t.num_files_ = num_files;
    t.spf_ = samples_per_file;
    t.uniform_ = every;
    return t;
  }

  void SetFile(uint32_t file, const FileSamples& fs) { files_[file] = fs; }
  // `extents` holds the file's samples_per_file extents (their .file is set here).
  void SetListed(uint32_t file, const std::vector<SampleExtent>& extents) {
    files_[file] = FileSamples{0, 0, 0, static_cast<int64_t>(listed_.size()), -1, 0, false, {}};
    for (SampleExtent e : extents) {
      e.file = file;
      listed_.push_back(e);
    }
  }

  // Parquet: file `file`'s row groups in row order, first_row ascending from 0 (see FileSamples::whole_groups).
  void SetRowGroups(uint32_t file, const std::vector<PqRowGroupSpan>& groups, bool whole_groups) {
    FileSamples fs;
    fs.groups_begin = static_cast<int64_t>(row_groups_.size());
    fs.groups = static_cast<uint32_t>(groups.size());
    fs.whole_groups = whole_groups;
    files_[file] = fs;
    row_groups_.insert(row_groups_.end(), groups.begin(), groups.end());
  }

  // HDF5 filtered datasets: how file `file`'s stored chunks decode, and each listed extent's filter mask (call
  // after SetListed for that file; `masks` in the same order as its extents).
  void SetCodec(uint32_t file, Hdf5ChunkCodec codec, const std::vector<uint32_t>& masks) {
    if (file_codec_.size() < files_.size()) file_codec_.resize(files_.size(), -1);
    file_codec_[file] = static_cast<int32_t>(codecs_.size());
    codecs_.push_back(std::move(codec));
    listed_masks_.resize(listed_.size(), 0);
    const auto begin = static_cast<size_t>(files_[file].listed_begin);
    for (size_t k = 0; k < masks.size() && begin + k < listed_masks_.size(); ++k) listed_masks_[begin + k] = masks[k];
  }
  const Hdf5ChunkCodec* CodecOf(uint32_t file) const {
    if (file >= file_codec_.size() || file_codec_[file] < 0) return nullptr;
    return &codecs_[static_cast<size_t>(file_codec_[file])];
  }
  uint32_t FilterMaskAt(uint64_t sample) const {
    if (files_.empty()) return 0;  // a uniform table has no filtered chunks
    const FileSamples& fs = files_[sample / spf_];
    if (fs.listed_begin < 0) return 0;
    const uint64_t i = static_cast<uint64_t>(fs.listed_begin) + sample % spf_;
    return i < listed_masks_.size() ? listed_masks_[i] : 0;
  }
  const std::vector<Hdf5ChunkCodec>& codecs() const { return codecs_; }

  // Parquet row-group reads: file `file`'s row groups (their spans and selected chunks), any order.
  void SetParquet(uint32_t file, std::vector<PqGroupLayout> groups) {
    if (file_pq_.size() < files_.size()) file_pq_.resize(files_.size(), -1);
    std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.span_offset < b.span_offset; });
    file_pq_[file] = static_cast<int32_t>(pq_files_.size());
    pq_files_.push_back(std::move(groups));
  }
  // The row group whose span starts at `offset` in file `file` (a row group's first row reads its whole span);
  // nullptr when none does. A binary search: no allocation, no lock.
  const PqGroupLayout* ParquetGroupAt(uint32_t file, uint64_t offset) const {
    if (file >= file_pq_.size() || file_pq_[file] < 0) return nullptr;
    const auto& g = pq_files_[static_cast<size_t>(file_pq_[file])];
    auto it = std::lower_bound(g.begin(), g.end(), offset, [](const auto& x, uint64_t o) { return x.span_offset < o; });
    return it != g.end() && it->span_offset == offset ? &*it : nullptr;
  }

  // Every sample is its whole file and no file was indexed or sized (a uniform kWholeFile table): sizes and layouts
  // are learnt by the reads themselves. (MaxLength counts such files 0.)
  bool WholeFilesUnsized() const { return files_.empty() && uniform_.length == kWholeFile; }
  // File `f`'s layout facts (npz/npy; zeros for other formats and uniform tables).
  const FileLayout& LayoutOf(uint32_t f) const { return files_.empty() ? uniform_.layout : files_[f].layout; }
  SampleExtent At(uint64_t sample) const {
    const uint64_t f = sample / spf_, k = sample % spf_;
    const FileSamples& fs = files_.empty() ? uniform_ : files_[f];
    if (fs.listed_begin >= 0) return listed_[static_cast<uint64_t>(fs.listed_begin) + k];
    if (fs.groups_begin >= 0) return RowOfGroup(static_cast<uint32_t>(f), fs, k);
    return {static_cast<uint32_t>(f), fs.first_offset + k * fs.stride, fs.length};
  }
  // Bytes one pass over file f's samples reads from distinct places (the shared extent once); 0 for a whole file
  // whose size is not known before it is read (kWholeFile).
  uint64_t FileDataBytes(uint32_t f) const {
    const FileSamples& fs = files_.empty() ? uniform_ : files_[f];
    if (fs.length == kWholeFile) return 0;
    if (fs.listed_begin >= 0) {
      uint64_t sum = 0;
      for (uint64_t k = 0; k < spf_; ++k) sum += listed_[static_cast<uint64_t>(fs.listed_begin) + k].length;
      return sum;
    }
    if (fs.groups_begin >= 0) {
      uint64_t sum = 0;
      for (const PqRowGroupSpan& g : GroupsOf(fs)) {
        const uint64_t counted = std::min(g.rows, spf_ - std::min(spf_, g.first_row));  // rows within the samples
        sum += counted == 0 ? 0 : fs.whole_groups ? g.length : g.length * counted / g.rows;
      }
      return sum;
    }
    return fs.stride == 0 ? fs.length : fs.length * spf_;
  }
  // The longest known extent (whole files of unknown size are never retained or coalesced).
  uint64_t MaxLength() const {
    uint64_t m = 0;
    for (const auto& fs : files_) m = std::max(m, fs.length == kWholeFile ? 0 : fs.length);
    if (files_.empty() && uniform_.length != kWholeFile) m = std::max(m, uniform_.length);
    for (const auto& e : listed_) m = std::max(m, e.length);
    for (const auto& fs : files_) {
      if (fs.groups_begin < 0) continue;
      for (const PqRowGroupSpan& g : GroupsOf(fs)) {
        m = std::max(m, fs.whole_groups ? g.length : (g.length + g.rows - 1) / g.rows);  // a row's share, rounded up
      }
    }
    return m;
  }
  // The most samples with bytes to read among `batch` consecutive samples (an accelerator's batch in a contiguous
  // order): a row group's first row only, where whole-row-group Parquet files are all this table holds (the others
  // read nothing); `batch` otherwise, and for orders that are not contiguous.
  uint64_t MaxReadsPerBatch(uint64_t batch, bool contiguous) const {
    if (!contiguous || batch == 0 || files_.empty()) return batch;
    uint64_t min_rows = 0;  // the fewest rows of a row group, counting only rows within the samples
    for (const FileSamples& fs : files_) {
      if (fs.groups_begin < 0) {
        if (fs.listed_begin >= 0 || fs.length > 0) return batch;  // an indexed file of another kind
        continue;                                                 // a file this rank does not read
      }
      if (!fs.whole_groups) return batch;
      for (const PqRowGroupSpan& g : GroupsOf(fs)) {
        const uint64_t counted = std::min(g.rows, spf_ - std::min(spf_, g.first_row));
        if (counted > 0 && (min_rows == 0 || counted < min_rows)) min_rows = counted;
      }
    }
    // Group starts are at least min_rows apart, across file ends too (a file's last group ends at its last sample).
    return min_rows == 0 ? batch : std::min(batch, (batch - 1) / min_rows + 1);
  }
  uint64_t samples_per_file() const { return spf_; }
  size_t num_files() const { return num_files_; }

  SampleCheck check = SampleCheck::kNone;

 private:
  std::span<const PqRowGroupSpan> GroupsOf(const FileSamples& fs) const {
    return {row_groups_.data() + fs.groups_begin, fs.groups};
  }
  // Row k of a file indexed by row groups: its group's span (whole groups: on the group's first row, nothing on the
  // others), or its share of the span, the rows of a group tiling it in order. No allocation, no lock.
  SampleExtent RowOfGroup(uint32_t f, const FileSamples& fs, uint64_t k) const {
    const std::span<const PqRowGroupSpan> g = GroupsOf(fs);
    // Exact when the groups but the last have equal rows (writers' row_group_size); a search otherwise.
    uint64_t i = std::min<uint64_t>(k / g[0].rows, g.size() - 1);
    if (k < g[i].first_row || k - g[i].first_row >= g[i].rows) {
      auto it = std::upper_bound(g.begin(), g.end(), k, [](uint64_t row, const PqRowGroupSpan& x) { return row < x.first_row; });
      i = static_cast<uint64_t>(it - g.begin()) - 1;
    }
    const PqRowGroupSpan& x = g[i];
    const uint64_t j = k - x.first_row;
    if (fs.whole_groups) return j == 0 ? SampleExtent{f, x.offset, x.length} : SampleExtent{f, x.offset + x.length, 0};
    const uint64_t lo = x.offset + x.length * j / x.rows, hi = x.offset + x.length * (j + 1) / x.rows;
    return {f, lo, hi - lo};
  }

  std::vector<FileSamples> files_;  // empty: every file is uniform_
  size_t num_files_ = 0;
  FileSamples uniform_;
  std::vector<SampleExtent> listed_;
  std::vector<PqRowGroupSpan> row_groups_;  // Parquet files' row groups, per file from FileSamples::groups_begin
  uint64_t spf_ = 1;
  std::vector<int32_t> file_codec_;     // per file: index into codecs_, or -1
  std::vector<Hdf5ChunkCodec> codecs_;
  std::vector<uint32_t> listed_masks_;  // parallel to listed_ (filtered files only; 0 beyond)
  std::vector<int32_t> file_pq_;        // per file: index into pq_files_, or -1
  std::vector<std::vector<PqGroupLayout>> pq_files_;
};

}  // namespace feedrate
