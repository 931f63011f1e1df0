// Parquet footer and page headers: parsing with bounds checks, serialization, and training-read spans.
#include "loader/format/parquet.h"

#include <algorithm>
#include <cstring>

#include "loader/format/thrift_compact.h"

namespace feedrate {

namespace {

constexpr uint64_t kMaxFooter = uint64_t{256} << 20;  // a larger footer is corrupt, not a dataset

void ReadLogicalType(CompactReader& r, PqSchemaElement* e) {
  ReadStruct(r, [&](int16_t id, TType t) {
    e->logical_type = id;  // the union's member
    if (id != 10 || t != TType::kStruct) return false;
    ReadStruct(r, [&](int16_t f, TType ft) {  // IntType {1: i8 bitWidth, 2: bool isSigned}
      if (f == 1 && ft == TType::kByte) e->int_bit_width = r.ReadI8();
      else if (f == 2 && (ft == TType::kTrue || ft == TType::kFalse)) e->int_signed = r.ReadBool(ft);
      else return false;
      return true;
    });
    return true;
  });
}

PqSchemaElement ReadSchemaElement(CompactReader& r) {
  PqSchemaElement e;
  bool named = false;
  ReadStruct(r, [&](int16_t id, TType t) {
    switch (id) {
      case 1: e.type = r.ReadI32(); return true;
      case 2: e.type_length = r.ReadI32(); return true;
      case 3: e.repetition = r.ReadI32(); return true;
      case 4: e.name = std::string(r.ReadBinary()); named = true; return true;
      case 5: e.num_children = r.ReadI32(); return true;
      case 6: e.converted_type = r.ReadI32(); return true;
      case 10:
        if (t != TType::kStruct) return false;
        ReadLogicalType(r, &e);
        return true;
      default: return false;
    }
  });
  if (!named) r.Fail("schema element without a name");
  return e;
}

PqColumnChunk ReadColumnMeta(CompactReader& r) {
  PqColumnChunk c;
  ReadStruct(r, [&](int16_t id, TType) {
    switch (id) {
      case 1: c.type = r.ReadI32(); return true;
      case 2: ReadList(r, [&] { c.encodings.push_back(r.ReadI32()); }); return true;
      case 3:
        ReadList(r, [&] {
          if (!c.path.empty()) c.path += '.';
          c.path += r.ReadBinary();
        });
        return true;
      case 4: c.codec = r.ReadI32(); return true;
      case 5: c.num_values = r.ReadI64(); return true;
      case 6: c.total_uncompressed_size = r.ReadI64(); return true;
      case 7: c.total_compressed_size = r.ReadI64(); return true;
      case 9: c.data_page_offset = r.ReadI64(); return true;
      case 11: c.dictionary_page_offset = r.ReadI64(); return true;
      default: return false;
    }
  });
  return c;
}

PqColumnChunk ReadColumnChunk(CompactReader& r) {
  PqColumnChunk c;
  bool has_meta = false;
  ReadStruct(r, [&](int16_t id, TType t) {
    if (id == 3 && t == TType::kStruct) {
      c = ReadColumnMeta(r);
      has_meta = true;
      return true;
    }
    if (id == 1) r.Fail("column chunk in another file (file_path): external column chunks are not read");
    return false;
  });
  if (!has_meta && r.ok()) r.Fail("column chunk without metadata (encrypted columns are not read)");
  return c;
}

PqRowGroup ReadRowGroup(CompactReader& r) {
  PqRowGroup g;
  ReadStruct(r, [&](int16_t id, TType) {
    switch (id) {
      case 1: ReadList(r, [&] { g.columns.push_back(ReadColumnChunk(r)); }); return true;
      case 2: g.total_byte_size = r.ReadI64(); return true;
      case 3: g.num_rows = r.ReadI64(); return true;
      default: return false;
    }
  });
  return g;
}

void ReadFileMeta(CompactReader& r, PqFileMetaData* m) {
  ReadStruct(r, [&](int16_t id, TType) {
    switch (id) {
      case 1: m->version = r.ReadI32(); return true;
      case 2: ReadList(r, [&] { m->schema.push_back(ReadSchemaElement(r)); }); return true;
      case 3: m->num_rows = r.ReadI64(); return true;
      case 4: ReadList(r, [&] { m->row_groups.push_back(ReadRowGroup(r)); }); return true;
      case 6: m->created_by = std::string(r.ReadBinary()); return true;
      default: return false;
    }
  });
}

size_t CountLeaves(const std::vector<PqSchemaElement>& s) {
  size_t n = 0;
  for (size_t i = 1; i < s.size(); ++i) n += s[i].num_children == 0 ? 1 : 0;
  return n;
}

// The cross-checks that make the metadata safe to act on: the schema is a tree, every row group has one chunk per
// leaf, chunks lie inside the file's data region, row counts add up.
Status CheckFileMeta(const PqFileMetaData& m, uint64_t file_size, const std::string& name) {
  if (m.schema.empty() || m.schema[0].num_children <= 0) return Status::Corruption(name + ": Parquet schema has no columns");
  size_t need = 1;  // elements the tree says exist
  for (size_t i = 0; i < m.schema.size() && i < need; ++i) {
    if (m.schema[i].num_children < 0) return Status::Corruption(name + ": Parquet schema element with negative children");
    need += static_cast<size_t>(m.schema[i].num_children);
    if (need > m.schema.size()) break;
  }
  if (need != m.schema.size()) {
    return Status::Corruption(name + ": Parquet schema lists " + std::to_string(m.schema.size()) + " elements, its tree " +
                              std::to_string(need));
  }
  const size_t leaves = CountLeaves(m.schema);
  int64_t rows = 0;
  for (size_t g = 0; g < m.row_groups.size(); ++g) {
    const PqRowGroup& rg = m.row_groups[g];
    const std::string where = name + ": row group " + std::to_string(g);
    if (rg.columns.size() != leaves) {
      return Status::Corruption(where + " has " + std::to_string(rg.columns.size()) + " column chunks for " +
                                std::to_string(leaves) + " columns");
    }
    if (rg.num_rows < 0) return Status::Corruption(where + ": negative row count");
    rows += rg.num_rows;
    // The chunks lie between the leading magic and the footer (compared without adding first: the values are the
    // file's, and a sum of two large ones would overflow).
    const uint64_t data_end = file_size >= 8 + m.footer_length ? file_size - 8 - m.footer_length : 0;
    for (const auto& c : rg.columns) {
      const auto start = static_cast<uint64_t>(c.start()), size = static_cast<uint64_t>(c.total_compressed_size);
      if (c.data_page_offset < 4 || c.total_compressed_size < 0 || c.dictionary_page_offset < 0 || start < 4 ||
          start > data_end || size > data_end - start) {
        return Status::Corruption(where + ", column " + c.path + ": chunk at " + std::to_string(c.start()) + " of " +
                                  std::to_string(c.total_compressed_size) + " bytes lies outside the data of the " +
                                  std::to_string(file_size) + "-byte file");
      }
    }
  }
  if (rows != m.num_rows) {
    return Status::Corruption(name + ": row groups hold " + std::to_string(rows) + " rows, the footer says " +
                              std::to_string(m.num_rows));
  }
  return Status::Ok();
}

}  // namespace

const char* PqTypeName(int32_t type) {
  static const char* kNames[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return type >= 0 && type < 8 ? kNames[type] : "group";
}

const char* PqCodecName(int32_t codec) {
  static const char* kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? kNames[codec] : "unknown";
}

const char* PqEncodingName(int32_t e) {
  switch (e) {
    case 0: return "PLAIN";
    case 2: return "PLAIN_DICTIONARY";
    case 3: return "RLE";
    case 4: return "BIT_PACKED";
    case 5: return "DELTA_BINARY_PACKED";
    case 6: return "DELTA_LENGTH_BYTE_ARRAY";
    case 7: return "DELTA_BYTE_ARRAY";
    case 8: return "RLE_DICTIONARY";
    case 9: return "BYTE_STREAM_SPLIT";
    default: return "unknown";
  }
}

std::vector<PqFileMetaData::TopField> PqFileMetaData::TopFields() const {
  std::vector<TopField> out;
  if (schema.empty()) return out;
  size_t i = 1, leaf = 0;
  for (int32_t c = 0; c < schema[0].num_children && i < schema.size(); ++c) {
    TopField f{schema[i].name, leaf, 0};
    // Walk this field's subtree: `open` counts elements still to visit.
    size_t open = 1;
    while (open > 0 && i < schema.size()) {
      open += static_cast<size_t>(std::max(0, schema[i].num_children)) - 1;
      if (schema[i].num_children == 0) ++f.leaves;
      ++i;
    }
    leaf += f.leaves;
    out.push_back(f);
  }
  return out;
}

Result<PqFileMetaData> ParseParquetFooter(const uint8_t* data, size_t size, uint64_t file_size, const std::string& name) {
  PqFileMetaData m;
  m.footer_length = size;
  m.file_size = file_size;
  CompactReader r(data, size);
  ReadFileMeta(r, &m);
  if (!r.ok()) return r.status().WithContext(name + ": Parquet footer");
  FEEDRATE_RETURN_IF_ERROR(CheckFileMeta(m, file_size, name));
  return m;
}

Result<PqFileMetaData> ReadParquetFooter(const ByteSource& src) {
  const std::string& name = src.name();
  const uint64_t size = src.size();
  if (size < 12) return Status::Corruption(name + ": " + std::to_string(size) + " bytes: too short for a Parquet file");
  char head[4], tail[8];
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(head, 4, 0));
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(tail, 8, size - 8));
  if (std::memcmp(tail + 4, "PARE", 4) == 0) return Status::Unsupported(name + ": encrypted Parquet footer (PARE) is not read");
  if (std::memcmp(head, "PAR1", 4) != 0 || std::memcmp(tail + 4, "PAR1", 4) != 0) {
    return Status::Corruption(name + ": not a Parquet file (no PAR1 magic at its " +
                              (std::memcmp(head, "PAR1", 4) != 0 ? "start" : "end; truncated?") + ")");
  }
  uint32_t len = 0;
  std::memcpy(&len, tail, 4);
  if (len == 0 || len > size - 12 || len > kMaxFooter) {
    return Status::Corruption(name + ": Parquet footer length " + std::to_string(len) + " does not fit the " +
                              std::to_string(size) + "-byte file (truncated?)");
  }
  std::string footer(len, '\0');
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(footer.data(), len, size - 8 - len));
  return ParseParquetFooter(reinterpret_cast<const uint8_t*>(footer.data()), len, size, name);
}

// The data page (v1, field 5), dictionary page (7) or data page v2 (8) header inside a page header.
static bool ReadPageKind(CompactReader& r, int16_t kind, int16_t f, TType ft, PqPageHeader* h) {
  const bool v1 = kind == 5, v2 = kind == 8;
  if (f == 1) h->num_values = r.ReadI32();
  else if (f == 2 && !v2) h->encoding = r.ReadI32();
  else if (f == 3 && v1) h->def_level_encoding = r.ReadI32();
  else if (f == 4 && v1) h->rep_level_encoding = r.ReadI32();
  else if (f == 2 && v2) h->num_nulls = r.ReadI32();
  else if (f == 3 && v2) h->num_rows = r.ReadI32();
  else if (f == 4 && v2) h->encoding = r.ReadI32();
  else if (f == 5 && v2) h->def_levels_bytes = r.ReadI32();
  else if (f == 6 && v2) h->rep_levels_bytes = r.ReadI32();
  else if (f == 7 && v2 && (ft == TType::kTrue || ft == TType::kFalse)) h->v2_compressed = r.ReadBool(ft);
  else return false;
  return true;
}

Result<PqPageHeader> ParsePageHeader(const uint8_t* data, size_t size) {
  PqPageHeader h;
  CompactReader r(data, size);
  bool have_type = false, have_sizes = false;
  ReadStruct(r, [&](int16_t id, TType t) {
    if (id == 1) {
      h.type = r.ReadI32();
      have_type = true;
    } else if (id == 2) {
      h.uncompressed_page_size = r.ReadI32();
    } else if (id == 3) {
      h.compressed_page_size = r.ReadI32();
      have_sizes = true;
    } else if ((id == 5 || id == 7 || id == 8) && t == TType::kStruct) {
      ReadStruct(r, [&](int16_t f, TType ft) { return ReadPageKind(r, id, f, ft, &h); });
    } else {
      return false;
    }
    return true;
  });
  if (!r.ok()) return r.status().WithContext("Parquet page header");
  if (!have_type || !have_sizes || h.compressed_page_size < 0 || h.uncompressed_page_size < 0 || h.num_values < 0 ||
      h.def_levels_bytes < 0 || h.rep_levels_bytes < 0) {
    return Status::Corruption("Parquet page header: missing or negative type, sizes or counts");
  }
  h.header_bytes = static_cast<uint32_t>(r.consumed());
  return h;
}

namespace {

void WriteSchemaElement(CompactWriter& w, const PqSchemaElement& e, bool root) {
  w.BeginStruct();
  if (e.type >= 0) w.FieldI32(1, e.type);
  if (e.type_length > 0) w.FieldI32(2, e.type_length);
  if (!root) w.FieldI32(3, e.repetition);
  w.FieldBinary(4, e.name);
  if (e.num_children > 0) w.FieldI32(5, e.num_children);
  if (e.converted_type >= 0) w.FieldI32(6, e.converted_type);
  if (e.logical_type >= 0) {
    w.FieldStructBegin(10);
    w.FieldStructBegin(static_cast<int16_t>(e.logical_type));
    if (e.logical_type == 10) {  // IntType {1: i8 bitWidth, 2: bool isSigned}
      w.FieldI8(1, e.int_bit_width);
      w.FieldBool(2, e.int_signed);
    }
    w.EndStruct();
    w.EndStruct();
  }
  w.EndStruct();
}

void WriteColumnChunk(CompactWriter& w, const PqColumnChunk& c) {
  w.BeginStruct();
  w.FieldI64(2, c.start());  // file_offset: deprecated; writers put the chunk's start
  w.FieldStructBegin(3);
  w.FieldI32(1, c.type);
  w.FieldList(2, TType::kI32, static_cast<uint32_t>(c.encodings.size()));
  for (int32_t e : c.encodings) w.ElemI32(e);
  std::vector<std::string_view> parts;
  for (size_t b = 0, e; b <= c.path.size(); b = e + 1) {
    e = c.path.find('.', b);
    if (e == std::string::npos) e = c.path.size();
    parts.push_back(std::string_view(c.path).substr(b, e - b));
  }
  w.FieldList(3, TType::kBinary, static_cast<uint32_t>(parts.size()));
  for (auto p : parts) w.ElemBinary(p);
  w.FieldI32(4, c.codec);
  w.FieldI64(5, c.num_values);
  w.FieldI64(6, c.total_uncompressed_size);
  w.FieldI64(7, c.total_compressed_size);
  w.FieldI64(9, c.data_page_offset);
  if (c.dictionary_page_offset > 0) w.FieldI64(11, c.dictionary_page_offset);
  w.EndStruct();
  w.EndStruct();
}

}  // namespace

std::string SerializePageHeader(const PqPageHeader& h) {
  CompactWriter w;
  w.BeginStruct();
  w.FieldI32(1, h.type);
  w.FieldI32(2, h.uncompressed_page_size);
  w.FieldI32(3, h.compressed_page_size);
  if (h.type == static_cast<int32_t>(PqPageType::kDictionaryPage)) {
    w.FieldStructBegin(7);
    w.FieldI32(1, h.num_values);
    w.FieldI32(2, h.encoding);
    w.FieldBool(3, false);  // is_sorted, which Arrow always writes
    w.EndStruct();
  } else {
    w.FieldStructBegin(5);
    w.FieldI32(1, h.num_values);
    w.FieldI32(2, h.encoding);
    w.FieldI32(3, h.def_level_encoding);
    w.FieldI32(4, h.rep_level_encoding);
    w.EndStruct();
  }
  w.EndStruct();
  return w.Take();
}

std::string SerializeFileMetaData(const PqFileMetaData& m) {
  CompactWriter w;
  w.BeginStruct();
  w.FieldI32(1, m.version);
  w.FieldList(2, TType::kStruct, static_cast<uint32_t>(m.schema.size()));
  for (size_t i = 0; i < m.schema.size(); ++i) WriteSchemaElement(w, m.schema[i], i == 0);
  w.FieldI64(3, m.num_rows);
  w.FieldList(4, TType::kStruct, static_cast<uint32_t>(m.row_groups.size()));
  for (const auto& g : m.row_groups) {
    w.BeginStruct();
    w.FieldList(1, TType::kStruct, static_cast<uint32_t>(g.columns.size()));
    for (const auto& c : g.columns) WriteColumnChunk(w, c);
    w.FieldI64(2, g.total_byte_size);
    w.FieldI64(3, g.num_rows);
    if (!g.columns.empty()) w.FieldI64(5, g.columns[0].start());
    int64_t compressed = 0;
    for (const auto& c : g.columns) compressed += c.total_compressed_size;
    w.FieldI64(6, compressed);
    w.EndStruct();
  }
  if (!m.created_by.empty()) w.FieldBinary(6, m.created_by);
  w.EndStruct();
  return w.Take();
}

Result<std::vector<char>> ParquetSelectedLeaves(const PqFileMetaData& m, const std::vector<std::string>& selected,
                                                const std::string& name) {
  const auto fields = m.TopFields();
  std::vector<char> use(CountLeaves(m.schema), selected.empty() ? 1 : 0);
  for (const auto& s : selected) {
    auto it = std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.name == s; });
    if (it == fields.end()) return Status::Corruption(name + ": no column '" + s + "' (selected by dataset.parquet.columns)");
    std::fill(use.begin() + static_cast<std::ptrdiff_t>(it->first_leaf),
              use.begin() + static_cast<std::ptrdiff_t>(it->first_leaf + it->leaves), 1);
  }
  return use;
}

Result<std::vector<PqSpan>> ParquetReadSpans(const PqFileMetaData& m, const std::vector<std::string>& selected,
                                             const std::string& name) {
  FEEDRATE_ASSIGN_OR_RETURN(const std::vector<char> use, ParquetSelectedLeaves(m, selected, name));
  std::vector<PqSpan> spans;
  for (const auto& rg : m.row_groups) {
    PqSpan s;
    int64_t lo = INT64_MAX, hi = 0;
    for (size_t c = 0; c < rg.columns.size(); ++c) {
      s.all_columns_compressed += static_cast<uint64_t>(rg.columns[c].total_compressed_size);
      if (!use[c]) continue;
      lo = std::min(lo, rg.columns[c].start());
      hi = std::max(hi, rg.columns[c].end());
    }
    if (hi > lo) {
      s.offset = static_cast<uint64_t>(lo);
      s.length = static_cast<uint64_t>(hi - lo);
    }
    spans.push_back(s);
  }
  return spans;
}

}  // namespace feedrate
