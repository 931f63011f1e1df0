// Inspection of Parquet files: the footer, and every page header of every column chunk walked and checked.
#include "loader/format/inspect.h"
#include "loader/io/unique_fd.h"

namespace feedrate {

namespace {

// Walks the pages of one column chunk; `where` names the file, row group and column in errors.
Result<ParquetChunkPages> WalkChunk(const ByteSource& src, const PqColumnChunk& c, const std::string& where) {
  ParquetChunkPages out;
  uint64_t at = static_cast<uint64_t>(c.start());
  const uint64_t end = static_cast<uint64_t>(c.end());
  uint8_t head[1024];
  while (at < end) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof head, end - at));
    FEEDRATE_RETURN_IF_ERROR(src.ReadAt(head, n, at));
    auto h = ParsePageHeader(head, n);
    if (!h.ok()) return h.status().WithContext(where + ": page at offset " + std::to_string(at));
    at += h->header_bytes + static_cast<uint64_t>(h->compressed_page_size);
    if (at > end) {
      return Status::Corruption(where + ": the page at offset " + std::to_string(at - h->header_bytes - h->compressed_page_size) +
                                " runs past the chunk's end (" + std::to_string(end) + ")");
    }
    if (h->type == static_cast<int32_t>(PqPageType::kDataPage) || h->type == static_cast<int32_t>(PqPageType::kDataPageV2)) {
      ++out.data_pages;
      out.values += static_cast<uint64_t>(h->num_values);
    } else if (h->type == static_cast<int32_t>(PqPageType::kDictionaryPage)) {
      ++out.dictionary_pages;
    } else {
      ++out.other_pages;
    }
  }
  if (out.values != static_cast<uint64_t>(c.num_values)) {
    return Status::Corruption(where + ": data pages hold " + std::to_string(out.values) + " values, the footer says " +
                              std::to_string(c.num_values));
  }
  return out;
}

}  // namespace

Result<ParquetReport> InspectParquetFile(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd.get(), path));
  FdByteSource src(fd.get(), size, path);
  FEEDRATE_ASSIGN_OR_RETURN(auto meta, ReadParquetFooter(src));
  ParquetReport r;
  r.path = path;
  r.size = size;
  r.meta = std::move(meta);
  for (size_t g = 0; g < r.meta.row_groups.size(); ++g) {
    r.pages.emplace_back();
    for (const auto& c : r.meta.row_groups[g].columns) {
      FEEDRATE_ASSIGN_OR_RETURN(auto p, WalkChunk(src, c, path + ": row group " + std::to_string(g) + ", column " + c.path));
      r.pages.back().push_back(p);
    }
  }
  return r;
}

}  // namespace feedrate
