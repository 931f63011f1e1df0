// Inspection of Parquet files: the footer, and every page header of every column chunk walked and checked.
#include "loader/format/inspect.h"
#include "loader/format/parquet_decode.h"
#include "loader/util/clock.h"
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

// Reads each chunk of row group g whole and decodes every page, adding to r->decoded (per leaf column).
Status DecodeRowGroup(const ByteSource& src, size_t g, ParquetReport* r) {
  FEEDRATE_ASSIGN_OR_RETURN(auto layouts, ParquetChunkLayouts(r->meta, g, r->path));
  r->decoded.resize(layouts.size());
  ParquetChunkDecoder decoder;
  std::string chunk;
  for (size_t k = 0; k < layouts.size(); ++k) {
    chunk.resize(static_cast<size_t>(layouts[k].size));
    FEEDRATE_RETURN_IF_ERROR(src.ReadAt(chunk.data(), chunk.size(), layouts[k].offset));
    const int64_t t0 = NowNs();
    Status st = decoder.Walk(layouts[k], reinterpret_cast<const uint8_t*>(chunk.data()),
                             ParquetChunkDecoder::Mode::kDecodeWithSums, &r->decoded[k]);
    r->decode_seconds += static_cast<double>(NowNs() - t0) / 1e9;
    if (!st.ok()) return st.WithContext(r->path + ": row group " + std::to_string(g) + ", column " + r->meta.row_groups[g].columns[k].path);
  }
  return Status::Ok();
}

}  // namespace

Result<ParquetReport> InspectParquetFile(const std::string& path, bool decode) {
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
    if (decode) FEEDRATE_RETURN_IF_ERROR(DecodeRowGroup(src, g, &r));
  }
  return r;
}

}  // namespace feedrate
