// Per-format sample extents for training reads.
#include "loader/format/sample_index.h"

#include <fcntl.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <cstring>
#include <filesystem>

#include "loader/format/hdf5.h"
#include "loader/format/image_decode.h"
#include "loader/format/npz.h"
#include "loader/format/parquet.h"
#include "loader/format/tfrecord.h"
#include "loader/io/page_cache.h"
#include "loader/io/unique_fd.h"

namespace feedrate {

namespace {

// A local file read at set-up, leaving the client's page cache as it found it. DLIO reads nothing before training,
// so a header read here must not serve a training read: with the page cache on, npz at 20 ms a request answered 99%
// where DLIO answers 68%, its headers and readahead already cached. No readahead on this descriptor
// (POSIX_FADV_RANDOM: the pages asked for only), and a file none of whose pages were cached before is evicted again
// when indexed. A partly cached file is left as it is (which of its pages were cached is not known); memory-backed
// files (tmpfs) are cached by definition and stay.
class SetupFileSource final : public ByteSource {
 public:
  SetupFileSource(UniqueFd f, uint64_t n, const std::string& p) : fd_(std::move(f)), src_(fd_.get(), n, p) {
    (void)::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_RANDOM);
    auto r = ProbeResidency(fd_.get(), 0, n);  // exact (mincore over the whole file), not a sampled window
    evict_ = n > 0 && r.ok() && r->resident_bytes == 0;
  }
  ~SetupFileSource() override {
    if (evict_) (void)::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_DONTNEED);
  }
  uint64_t size() const override { return src_.size(); }
  const std::string& name() const override { return src_.name(); }
  Status ReadAt(void* buf, size_t len, uint64_t off) const override { return src_.ReadAt(buf, len, off); }

 private:
  UniqueFd fd_;
  FdByteSource src_;
  bool evict_ = false;
};

// A source whose reads are counted (IndexOptions::count): what set-up asked of the storage, for summary.json.
class CountedSource final : public ByteSource {
 public:
  CountedSource(std::unique_ptr<ByteSource> src, SetupReadCount* count) : src_(std::move(src)), count_(count) {}
  uint64_t size() const override { return src_->size(); }
  const std::string& name() const override { return src_->name(); }
  Status ReadAt(void* buf, size_t len, uint64_t off) const override {
    count_->reads.fetch_add(1, std::memory_order_relaxed);
    count_->bytes.fetch_add(len, std::memory_order_relaxed);
    return src_->ReadAt(buf, len, off);
  }

 private:
  std::unique_ptr<ByteSource> src_;
  SetupReadCount* count_;
};

// A local file (opened, its size taken) or the opener's object; counted where the options say.
Result<std::unique_ptr<ByteSource>> OpenSource(const std::string& name, const IndexOptions& o) {
  std::unique_ptr<ByteSource> src;
  if (o.opener != nullptr) {
    FEEDRATE_ASSIGN_OR_RETURN(src, o.opener->Open(name));
  } else {
    FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(name));
    FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd.get(), name));
    src = std::make_unique<SetupFileSource>(std::move(fd), size, name);
  }
  if (o.count == nullptr) return src;
  return std::unique_ptr<ByteSource>(std::make_unique<CountedSource>(std::move(src), o.count));
}

Result<FileSamples> IndexTfRecord(const ByteSource& src, const IndexOptions& o, std::vector<SampleExtent>* listed) {
  const std::string& path = src.name();
  const uint64_t size = src.size();
  // Uniform files (DLIO's) are indexed from three headers; every record's length field is checked again when it
  // is read, so a wrong guess cannot go unnoticed. Otherwise the DLIO/DALI .idx file, else a header walk.
  FEEDRATE_ASSIGN_OR_RETURN(auto probed, ProbeUniformTfRecordFile(src));
  std::vector<TfRecordEntry> entries = std::move(probed);
  // On S3 the index is the object <prefix>/index/<split>/<file>.idx (a HEAD and one GET instead of a ranged GET
  // per record header beyond the block cache; an empty prefix, a dataset at the bucket's root, gives index/...);
  // a missing one means a header walk, as for files.
  if (entries.empty() && o.opener != nullptr) {
    auto idx_src = OpenSource(TfRecordIndexPath(o.data_folder, o.split, path), o);
    if (idx_src.ok()) {
      FEEDRATE_ASSIGN_OR_RETURN(auto r, ReadTfRecordIndex(**idx_src, size));
      entries = std::move(r);
    } else if (idx_src.status().code() != Status::Code::kNotFound) {
      return idx_src.status().WithContext("TFRecord index for " + path);
    }
  } else if (entries.empty() && !o.data_folder.empty()) {
    const std::string idx = TfRecordIndexPath(o.data_folder, o.split, path);
    if (std::error_code ec; std::filesystem::exists(idx, ec)) {
      FEEDRATE_ASSIGN_OR_RETURN(auto r, ReadTfRecordIndex(idx, size));
      entries = std::move(r);
    }
  }
  if (entries.empty()) {
    FEEDRATE_ASSIGN_OR_RETURN(auto scanned, ScanTfRecordFile(src));
    entries = std::move(scanned);
  }
  if (entries.size() < o.samples_per_file) {
    return Status::Corruption(path + ": " + std::to_string(entries.size()) + " records, fewer than dataset.num_samples_per_file=" +
                              std::to_string(o.samples_per_file));
  }
  bool uniform = true;
  for (uint64_t k = 1; k < o.samples_per_file && uniform; ++k) {
    uniform = entries[k].length == entries[0].length && entries[k].offset == entries[0].offset + k * entries[0].framed();
  }
  if (uniform) return FileSamples{entries[0].offset, entries[0].framed(), entries[0].framed(), -1};
  listed->clear();
  for (uint64_t k = 0; k < o.samples_per_file; ++k) listed->push_back({0, entries[k].offset, entries[k].framed()});
  FileSamples fs;
  fs.listed_begin = 0;  // SampleTable::SetListed places the list
  return fs;
}

// DLIO's HDF5 reader takes f['records'][k] (newer DLIO: records_0): sample k is row k of the first axis. The
// engines read rows straight from the file where the library says they lie: contiguous data, or unfiltered
// chunks that hold whole rows; filtered chunks are read whole, raw, and decoded by the prefetcher's check.
Result<FileSamples> IndexHdf5(const std::string& path, const IndexOptions& o, std::vector<SampleExtent>* listed,
                              FileDecode* decode, const ByteSource* src) {
  FEEDRATE_ASSIGN_OR_RETURN(auto list, ListHdf5Datasets(src != nullptr ? src->name() : path, src));
  const H5DatasetInfo* d = nullptr;
  for (const char* name : {"/records", "/records_0"}) {
    for (const auto& x : list) {
      if (d == nullptr && x.path == name) d = &x;
    }
  }
  if (d == nullptr) return Status::Corruption(path + ": no dataset 'records' or 'records_0' (DLIO's HDF5 layout)");
  const std::string where = (src != nullptr ? src->name() : path) + ": dataset " + d->path;
  if (d->shape.empty() || d->shape[0] < o.samples_per_file) {
    return Status::Corruption(where + " has " + (d->shape.empty() ? std::string("no rows") : std::to_string(d->shape[0]) + " rows") +
                              ", fewer than dataset.num_samples_per_file=" + std::to_string(o.samples_per_file));
  }
  const uint64_t row = d->nbytes() / d->shape[0];
  const bool filtered = !d->filters.empty();
  if (filtered && decode == nullptr) {
    return Status::Unsupported(where + " is filtered (" + d->filters[0].name + "): this reader takes unfiltered datasets only");
  }
  if (d->layout == "contiguous") {
    if (!d->contiguous_offset) return Status::Corruption(where + ": data never written (no storage allocated)");
    return FileSamples{*d->contiguous_offset, row, row, -1};
  }
  if (d->layout != "chunked") return Status::Unsupported(where + ": " + d->layout + " layout is not read for training");
  for (size_t i = 1; i < d->shape.size(); ++i) {
    if (d->chunks[i] != d->shape[i]) {
      return Status::Unsupported(where + ": chunks do not hold whole rows (chunk shape must be (n, ...the row's shape))");
    }
  }
  if (filtered) {
    FEEDRATE_ASSIGN_OR_RETURN(auto codec, MakeHdf5ChunkCodec(*d, where));
    decode->codec = std::move(codec);
    decode->masks.assign(o.samples_per_file, 0);
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto chunks, ListHdf5Chunks(src != nullptr ? src->name() : path, d->path, src));
  listed->assign(o.samples_per_file, SampleExtent{0, 0, 0});
  std::vector<char> have(o.samples_per_file, 0);
  for (const auto& c : chunks) {
    for (uint64_t k = 0; k < d->chunks[0]; ++k) {
      const uint64_t r = c.coords[0] + k;
      if (r >= o.samples_per_file) break;
      if (filtered) {  // the stored chunk, whole: its rows only exist once decoded
        (*listed)[r] = {0, c.address, c.size};
        decode->masks[r] = c.filter_mask;
      } else {
        (*listed)[r] = {0, c.address + k * row, row};
      }
      have[r] = 1;
    }
  }
  for (uint64_t r = 0; r < o.samples_per_file; ++r) {
    if (!have[r]) return Status::Corruption(where + ": row " + std::to_string(r) + " lies in a chunk that was never written");
  }
  FileSamples fs;
  fs.listed_begin = 0;
  return fs;
}

// DLIO's indexed_binary: samples back to back in the data file, located by two int64 arrays of
// num_samples_per_file entries, <file>.off.idx (offsets) and <file>.sz.idx (sizes).
Result<FileSamples> IndexIndexedBinary(const ByteSource& data, const std::string& key, const IndexOptions& o,
                                       std::vector<SampleExtent>* listed) {
  const std::string& path = data.name();
  const uint64_t size = data.size();
  std::vector<int64_t> arrays[2];
  const char* suffix[2] = {".off.idx", ".sz.idx"};
  for (int a = 0; a < 2; ++a) {
    auto src = OpenSource(key + suffix[a], o);
    if (!src.ok()) return src.status().WithContext("indexed_binary index");
    const ByteSource& idx = **src;
    if (idx.size() < 8 * o.samples_per_file) {
      return Status::Corruption(idx.name() + ": " + std::to_string(idx.size() / 8) +
                                " entries, fewer than dataset.num_samples_per_file=" + std::to_string(o.samples_per_file));
    }
    arrays[a].resize(o.samples_per_file);
    FEEDRATE_RETURN_IF_ERROR(idx.ReadAt(arrays[a].data(), 8 * o.samples_per_file, 0));
  }
  bool uniform = true;
  listed->clear();
  for (uint64_t k = 0; k < o.samples_per_file; ++k) {
    const int64_t off = arrays[0][k], len = arrays[1][k];
    if (off < 0 || len <= 0 || static_cast<uint64_t>(off) > size || static_cast<uint64_t>(len) > size - static_cast<uint64_t>(off)) {
      return Status::Corruption(path + ".off.idx/.sz.idx: sample " + std::to_string(k) + " at " + std::to_string(off) + " of " +
                                std::to_string(len) + " bytes lies outside the " + std::to_string(size) + "-byte data file");
    }
    uniform = uniform && len == arrays[1][0] && off == arrays[0][0] + static_cast<int64_t>(k) * arrays[1][0];
    listed->push_back({0, static_cast<uint64_t>(off), static_cast<uint64_t>(len)});
  }
  if (uniform) {
    const auto len = static_cast<uint64_t>(arrays[1][0]);
    return FileSamples{static_cast<uint64_t>(arrays[0][0]), len, len, -1};
  }
  FileSamples fs;
  fs.listed_begin = 0;
  return fs;
}

// JPEG/PNG (RetinaNet in the v3.0 drafts): one sample per file, the whole file, as DLIO's PIL reader opens it.
Result<FileSamples> IndexImage(const ByteSource& src, DataFormat format, const IndexOptions& o) {
  const std::string& path = src.name();
  const uint64_t size = src.size();
  char head[8] = {};
  if (size < sizeof head) return Status::Corruption(path + ": " + std::to_string(size) + " bytes: too short for a " + Name(format));
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(head, sizeof head, 0));
  FEEDRATE_RETURN_IF_ERROR(CheckImageSignature(format, head, sizeof head, path));
  if (o.samples_per_file != 1) {
    return Status::InvalidArgument(path + ": image datasets hold one sample per file (dataset.num_samples_per_file=" +
                                   std::to_string(o.samples_per_file) + ")");
  }
  return FileSamples{0, 0, size, -1};
}

// Row-group reads: the layout of each row group's selected chunks, which the I/O threads walk or decode.
Status ParquetGroups(const PqFileMetaData& m, const std::vector<PqSpan>& spans, const IndexOptions& o,
                     const std::string& name, std::vector<PqGroupLayout>* out) {
  FEEDRATE_ASSIGN_OR_RETURN(auto selected, ParquetSelectedLeaves(m, o.parquet_columns, name));
  for (size_t g = 0; g < spans.size(); ++g) {
    FEEDRATE_ASSIGN_OR_RETURN(auto chunks, ParquetChunkLayouts(m, g, name));
    PqGroupLayout gl{spans[g].offset, spans[g].length, {}};
    for (size_t k = 0; k < chunks.size(); ++k) {
      if (selected[k]) gl.chunks.push_back(chunks[k]);
    }
    out->push_back(std::move(gl));
  }
  return Status::Ok();
}

// Parquet: rows are indexed by row group (SampleTable::RowOfGroup): row k's extent is its share of its row group's
// span (extents of a row group tile the span exactly; in a span shorter than its rows some rows read nothing, which
// the engines complete at once); with whole row-group reads the group's first row reads the span and the others
// nothing. Only the row groups holding the first samples_per_file rows are kept.
Result<FileSamples> IndexParquet(const ByteSource& src, const IndexOptions& o, std::vector<PqRowGroupSpan>* groups,
                                 FileDecode* decode) {
  FEEDRATE_ASSIGN_OR_RETURN(auto m, ReadParquetFooter(src));
  if (m.num_rows < 0 || static_cast<uint64_t>(m.num_rows) < o.samples_per_file) {
    return Status::Corruption(src.name() + ": " + std::to_string(m.num_rows) + " rows, fewer than dataset.num_samples_per_file=" +
                              std::to_string(o.samples_per_file));
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto spans, ParquetReadSpans(m, o.parquet_columns, src.name()));
  groups->clear();
  uint64_t row = 0;
  for (size_t g = 0; g < spans.size() && row < o.samples_per_file; ++g) {
    const PqSpan& sp = spans[g];
    const auto rows = static_cast<uint64_t>(std::max<int64_t>(0, m.row_groups[g].num_rows));
    if (rows > 0 && sp.length == 0) {
      return Status::Corruption(src.name() + ": row group " + std::to_string(g) + " has no bytes in the selected columns");
    }
    if (rows == 0) continue;
    groups->push_back({row, rows, sp.offset, sp.length});
    row += rows;
  }
  if (row < o.samples_per_file) {  // the footer's num_rows disagrees with its row groups'
    return Status::Corruption(src.name() + ": its row groups hold " + std::to_string(row) +
                              " rows, fewer than dataset.num_samples_per_file=" + std::to_string(o.samples_per_file));
  }
  if (o.parquet_row_groups && decode != nullptr) FEEDRATE_RETURN_IF_ERROR(ParquetGroups(m, spans, o, src.name(), &decode->parquet));
  FileSamples fs;
  fs.groups_begin = 0;  // SampleTable::SetRowGroups places the groups
  fs.groups = static_cast<uint32_t>(groups->size());
  fs.whole_groups = o.parquet_row_groups;
  return fs;
}

}  // namespace

bool TrainingFormatSupported(DataFormat format) {
  using F = DataFormat;
  return format == F::kNpz || format == F::kNpy || format == F::kTfRecord || format == F::kHdf5 ||
         format == F::kIndexedBinary || IsImage(format) || format == F::kParquet;
}

Result<FileSamples> IndexTrainingFile(const std::string& path, const IndexOptions& o, ListedExtents* listed,
                                      FileDecode* decode) {
  FEEDRATE_ASSIGN_OR_RETURN(auto opened, OpenSource(path, o));
  const ByteSource& src = *opened;
  // libhdf5 reads the metadata through the source (a read-only driver: pread, or ranged GETs on other stores), so
  // its reads too leave the page cache as they found it.
  if (o.format == DataFormat::kHdf5) return IndexHdf5(path, o, &listed->samples, decode, &src);
  if (o.format == DataFormat::kTfRecord) return IndexTfRecord(src, o, &listed->samples);
  if (o.format == DataFormat::kIndexedBinary) return IndexIndexedBinary(src, path, o, &listed->samples);
  if (o.format == DataFormat::kParquet) return IndexParquet(src, o, &listed->row_groups, decode);
  if (IsImage(o.format)) return IndexImage(src, o.format, o);
  const DataFormat format = o.format;
  const uint64_t samples_per_file = o.samples_per_file;
  const NpyHeader* header = nullptr;
  FileSamples e;
  NpArray array;
  if (format == DataFormat::kNpz) {
    FEEDRATE_ASSIGN_OR_RETURN(auto arrays, ReadNpzArrays(src));
    bool found = false;
    for (auto& a : arrays) {
      if (a.name == "x") {
        array = std::move(a);
        found = true;
        break;
      }
    }
    if (!found) return Status::Corruption(path + ": npz has no 'x' array (DLIO's npz reader reads f['x'])");
    e.first_offset = array.member->data_offset;
    e.length = array.member->compressed_size;
    // What np.load's calls follow (access_pattern.h): the stored member and the central directory after the last
    // member (where numpy's and Feedrate's writers put it).
    e.layout.size = src.size();
    e.layout.member_offset = array.member->local_header_offset;
    e.layout.member_data = array.member->data_offset;
    e.layout.member_size = array.member->compressed_size;
    e.layout.npy_header = array.header.data_offset;
    for (const auto& a : arrays) {
      if (a.member) e.layout.dir_offset = std::max(e.layout.dir_offset, a.member->data_offset + a.member->compressed_size);
    }
  } else if (format == DataFormat::kNpy) {
    FEEDRATE_ASSIGN_OR_RETURN(auto a, ReadNpyFile(src));
    array = std::move(a);
    e.first_offset = 0;
    e.length = array.header.data_offset + array.header.nbytes;
    e.layout.size = src.size();
    e.layout.npy_header = array.header.data_offset;
  } else {
    return Status::Unsupported(path + ": format '" + Name(format) + "' is not supported for training reads yet");
  }
  header = &array.header;
  // DLIO takes sample k as arr[..., k]: the last axis must hold every sample of the file.
  if (header->shape.empty() || header->shape.back() < samples_per_file) {
    std::string last = header->shape.empty() ? "a 0-d array" : "last axis " + std::to_string(header->shape.back());
    return Status::Corruption(path + ": array has " + last + ", fewer than dataset.num_samples_per_file=" +
                              std::to_string(samples_per_file) + " samples");
  }
  return e;
}

Status IndexTrainingFiles(const PathList& files, const std::vector<size_t>& which, const IndexOptions& o,
                          size_t threads, SampleTable* table) {
  std::vector<FileSamples> out(which.size());
  std::vector<ListedExtents> listed(which.size());
  std::vector<FileDecode> decode(which.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex err_mu;  // setup path only: guards the first error
  Status first_error;
  size_t first_index = which.size();
  auto work = [&] {
    for (size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < which.size();) {
      auto e = IndexTrainingFile(std::string(files.view(which[i])), o, &listed[i], &decode[i]);
      if (!e.ok()) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (i < first_index) {
          first_index = i;
          first_error = e.status();
        }
        failed.store(true, std::memory_order_relaxed);
        return;
      }
      out[i] = *e;
    }
  };
  std::vector<std::thread> pool;
  size_t n = std::max<size_t>(1, std::min(threads, which.size()));
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failed.load()) return first_error;
  for (size_t i = 0; i < which.size(); ++i) {
    auto f = static_cast<uint32_t>(which[i]);
    if (out[i].groups_begin >= 0) {
      table->SetRowGroups(f, listed[i].row_groups, out[i].whole_groups);
      if (!decode[i].parquet.empty()) table->SetParquet(f, std::move(decode[i].parquet));
    } else if (out[i].listed_begin >= 0) {
      table->SetListed(f, listed[i].samples);
      if (decode[i].codec) table->SetCodec(f, std::move(*decode[i].codec), decode[i].masks);
      if (!decode[i].parquet.empty()) table->SetParquet(f, std::move(decode[i].parquet));
    } else {
      table->SetFile(f, out[i]);
    }
  }
  return Status::Ok();
}

}  // namespace feedrate
