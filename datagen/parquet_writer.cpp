// DLIO-layout Parquet writer (see parquet_writer.h).
#include "datagen/parquet_writer.h"

#include <algorithm>
#include <cstring>

#include "datagen/parquet_encoding.h"
#include "datagen/temp_file.h"
#include "loader/format/parquet.h"
#include "loader/format/parquet_codec.h"
#include "loader/io/unique_fd.h"

namespace feedrate {

namespace {

constexpr uint64_t kPageBytes = 1 << 20;       // pyarrow's data_page_size
constexpr uint64_t kWriteBatch = 1024;         // pyarrow's write_batch_size: pages close at a multiple of it
constexpr uint64_t kDictionaryPageLimit = 1 << 20;  // pyarrow's dictionary_pagesize_limit
constexpr size_t kFlushBytes = size_t{4} << 20;

// How one dtype is stored (Arrow's mapping to Parquet, format version 2.6).
struct Physical {
  PqType type;
  uint32_t bits;            // bits per value in PLAIN
  int32_t converted = -1;   // ConvertedType
  int32_t logical = -1;     // LogicalType member id
  int8_t int_width = 0;
  bool int_signed = true;
};

Physical PhysicalFor(const std::string& dtype) {
  if (dtype == "float32") return {PqType::kFloat, 32};
  if (dtype == "float64") return {PqType::kDouble, 64};
  if (dtype == "float16") return {PqType::kFixedLenByteArray, 16, -1, 15};
  if (dtype == "bool") return {PqType::kBoolean, 1};
  if (dtype == "int8") return {PqType::kInt32, 32, 15, 10, 8, true};
  if (dtype == "int16") return {PqType::kInt32, 32, 16, 10, 16, true};
  if (dtype == "int32") return {PqType::kInt32, 32, 17, 10, 32, true};
  if (dtype == "int64") return {PqType::kInt64, 64, 18, 10, 64, true};
  if (dtype == "uint8") return {PqType::kInt32, 32, 11, 10, 8, false};
  if (dtype == "uint16") return {PqType::kInt32, 32, 12, 10, 16, false};
  if (dtype == "uint32") return {PqType::kInt32, 32, 13, 10, 32, false};
  return {PqType::kInt64, 64, 14, 10, 64, false};  // uint64
}

// The dtype's width in bits of information (what the random draw covers).
uint32_t DtypeBits(const std::string& dtype) {
  if (dtype == "bool") return 1;
  if (dtype.ends_with("8")) return 8;
  if (dtype.ends_with("16")) return 16;
  if (dtype.ends_with("32")) return 32;
  return 64;
}

// numpy's float16 draw: a float32 uniform k / 2^24 (k < 2^24) rounded to half precision, nearest even, as
// DLIO's gen_random_tensor does (rng.random(dtype=float32).astype(float16)). 1.0 can occur.
uint16_t HalfOfUniform24(uint32_t k) {
  if (k < 1024) return static_cast<uint16_t>(k);  // below 2^-14: a subnormal half, exactly k x 2^-24
  const int e = 31 - __builtin_clz(k);             // 10..23: k / 2^24 = 1.m x 2^(e - 24)
  const int shift = e - 10;                        // mantissa bits below the half's 10
  const uint32_t frac = k - (1u << e);
  uint32_t h = (static_cast<uint32_t>(e - 9) << 10) + (frac >> shift);
  const uint32_t rest = frac & ((1u << shift) - 1), half = shift > 0 ? 1u << (shift - 1) : 0;
  if (shift > 0 && (rest > half || (rest == half && (h & 1) != 0))) ++h;  // a carry moves into the exponent
  return static_cast<uint16_t>(h);
}

// Fills `n` values of `width` bytes at `dst`, each made by `make` from 64 random bits.
template <typename Make>
void FillValues(char* dst, uint64_t n, size_t width, FastBytes& rng, Make make) {
  uint64_t r[64];
  for (uint64_t i = 0; i < n; i += 64) {
    const uint64_t k = std::min<uint64_t>(64, n - i);
    rng.Fill(reinterpret_cast<char*>(r), k * 8);
    for (uint64_t j = 0; j < k; ++j, dst += width) make(r[j], dst);
  }
}

// Appends `n` PLAIN values of `dtype` to `out`.
void AppendValues(const std::string& dtype, const Physical& p, uint64_t n, FastBytes& rng, std::string* out) {
  const size_t at = out->size();
  if (p.type == PqType::kBoolean) {  // PLAIN booleans: bit-packed, LSB first
    out->resize(at + (n + 7) / 8);
    rng.Fill(out->data() + at, (n + 7) / 8);
    if (n % 8 != 0) (*out)[out->size() - 1] = static_cast<char>((*out)[out->size() - 1] & ((1 << (n % 8)) - 1));
    return;
  }
  const size_t width = p.bits / 8;
  out->resize(at + n * width);
  char* dst = out->data() + at;
  if (dtype == "float32") {
    FillValues(dst, n, 4, rng, [](uint64_t r, char* d) {
      const float f = static_cast<float>(r >> 40) * 0x1p-24f;
      std::memcpy(d, &f, 4);
    });
  } else if (dtype == "float64") {
    FillValues(dst, n, 8, rng, [](uint64_t r, char* d) {
      const double f = static_cast<double>(r >> 11) * 0x1p-53;
      std::memcpy(d, &f, 8);
    });
  } else if (dtype == "float16") {
    FillValues(dst, n, 2, rng, [](uint64_t r, char* d) {
      const uint16_t h = HalfOfUniform24(static_cast<uint32_t>(r >> 40));
      std::memcpy(d, &h, 2);
    });
  } else if (width == 4) {  // 8-, 16- and 32-bit integers: INT32, sign- or zero-extended
    const uint32_t bits = DtypeBits(dtype);
    const bool sign = p.int_signed && bits < 32;
    FillValues(dst, n, 4, rng, [bits, sign](uint64_t r, char* d) {
      uint32_t v = static_cast<uint32_t>(r >> (64 - bits));
      if (sign && (v >> (bits - 1)) != 0) v |= ~0u << bits;
      std::memcpy(d, &v, 4);
    });
  } else {
    rng.Fill(dst, n * 8);
  }
}

struct ColumnPlan {
  ParquetColumn col;
  Physical phys;
  std::string leaf_path;
};

std::vector<ColumnPlan> PlanColumns(const ParquetFileSpec& spec) {
  std::vector<ColumnPlan> out;
  std::vector<ParquetColumn> cols = spec.columns;
  if (cols.empty()) cols.push_back({"data", "uint8", spec.legacy_elems, true});
  for (const auto& c : cols) {
    out.push_back({c, PhysicalFor(c.dtype), c.size > 1 ? c.name + ".list.element" : c.name});
  }
  return out;
}

void AddSchema(const ColumnPlan& p, std::vector<PqSchemaElement>* schema) {
  PqSchemaElement leaf;
  leaf.name = p.col.size > 1 ? "element" : p.col.name;
  leaf.type = static_cast<int32_t>(p.phys.type);
  leaf.type_length = p.phys.type == PqType::kFixedLenByteArray ? 2 : 0;
  leaf.repetition = 1;
  leaf.converted_type = p.phys.converted;
  leaf.logical_type = p.phys.logical;
  leaf.int_bit_width = p.phys.int_width;
  leaf.int_signed = p.phys.int_signed;
  if (p.col.size > 1) {  // Arrow's three-level list: optional group (LIST) { repeated group list { optional element } }
    PqSchemaElement group;
    group.name = p.col.name;
    group.repetition = 1;
    group.num_children = 1;
    group.converted_type = 3;
    group.logical_type = 3;
    PqSchemaElement list;
    list.name = "list";
    list.repetition = 2;
    list.num_children = 1;
    schema->push_back(group);
    schema->push_back(list);
  }
  schema->push_back(leaf);
}

// Streams the file: bytes go out in kFlushBytes writes; `offset` is where the next byte lands.
class Sink {
 public:
  explicit Sink(TempFile* f) : file_(f) {}
  Status Append(std::string_view b) {
    buf_.append(b);
    offset_ += b.size();
    return buf_.size() >= kFlushBytes ? Flush() : Status::Ok();
  }
  Status Flush() {
    if (buf_.empty()) return Status::Ok();
    Status s = file_->WriteAt(buf_.data(), buf_.size(), offset_ - buf_.size());
    buf_.clear();
    return s;
  }
  uint64_t offset() const { return offset_; }

 private:
  TempFile* file_;
  std::string buf_;
  uint64_t offset_ = 0;
};

// Buffers one column chunk writer reuses from chunk to chunk (a file has rows/row_group_size x columns chunks).
struct ChunkScratch {
  ValueDictionary dict;
  RleHybridEncoder rep, def, indices_rle;
  std::vector<uint32_t> indices;         // the open page's dictionary indices
  std::string batch, values, body, packed;
  std::vector<std::string> held;         // pages (header + bytes) waiting for the dictionary page
};

// One column chunk as Arrow's column writer lays it out with pyarrow's defaults (parquet/column_writer.cc):
// values arrive in batches of 1024; after each batch the open page closes once its estimated size reaches
// 1 MiB, and then a dictionary that has reached 1 MiB is written and the chunk falls back to PLAIN pages. While
// the dictionary is in use its pages wait in memory: the dictionary page must come first. BOOLEAN columns are
// never dictionary-encoded. Every value is present (definition levels at their maximum).
class ChunkWriter {
 public:
  ChunkWriter(const ColumnPlan& p, int32_t codec, FastBytes& rng, Sink& out, ChunkScratch& s)
      : p_(p), codec_(codec), rng_(rng), out_(out), s_(s) {}
  Result<PqColumnChunk> Write(uint64_t rows);

 private:
  void AddLevels(uint64_t first, uint64_t n);
  void AddValues(uint64_t n);
  uint64_t EstimatedPageBytes() const;
  Status AddDataPage();
  Status FallBackToPlain();
  Status WriteDictionaryPage();
  Status WritePage(PqPageHeader h, bool hold);
  Status WriteHeldPages();
  static void AppendLevels(RleHybridEncoder& levels, std::string* body);

  const ColumnPlan& p_;
  const int32_t codec_;
  FastBytes& rng_;
  Sink& out_;
  ChunkScratch& s_;
  PqColumnChunk c_;
  bool dictionary_ = false;    // the open page holds dictionary indices
  uint64_t page_values_ = 0;   // values in the open page
};

Result<PqColumnChunk> ChunkWriter::Write(uint64_t rows) {
  c_.path = p_.leaf_path;
  c_.type = static_cast<int32_t>(p_.phys.type);
  c_.codec = codec_;
  c_.num_values = static_cast<int64_t>(rows * p_.col.size);
  c_.data_page_offset = -1;
  dictionary_ = p_.phys.type != PqType::kBoolean;
  c_.encodings = dictionary_ ? std::vector<int32_t>{kPlain, kRle, kRleDictionary} : std::vector<int32_t>{kRle, kPlain};
  s_.dict.Clear(p_.phys.bits / 8);
  s_.rep.Reset(1);
  s_.def.Reset(p_.col.size > 1 ? 2 : 1);
  const auto total = static_cast<uint64_t>(c_.num_values);
  for (uint64_t first = 0; first < total; first += kWriteBatch) {
    const uint64_t n = std::min(kWriteBatch, total - first);
    AddLevels(first, n);
    AddValues(n);
    page_values_ += n;
    if (EstimatedPageBytes() >= kPageBytes) FEEDRATE_RETURN_IF_ERROR(AddDataPage());
    if (dictionary_ && s_.dict.encoded_bytes() >= kDictionaryPageLimit) FEEDRATE_RETURN_IF_ERROR(FallBackToPlain());
  }
  if (dictionary_) FEEDRATE_RETURN_IF_ERROR(WriteDictionaryPage());
  if (page_values_ > 0) FEEDRATE_RETURN_IF_ERROR(AddDataPage());
  FEEDRATE_RETURN_IF_ERROR(WriteHeldPages());
  return c_;
}

// Levels of values [first, first + n) of the chunk: a list's first value repeats at level 0, the rest at 1.
void ChunkWriter::AddLevels(uint64_t first, uint64_t n) {
  const uint64_t L = p_.col.size;
  if (L > 1) {
    for (uint64_t v = first; v < first + n;) {
      const uint64_t in_row = v % L;
      const uint64_t take = in_row == 0 ? 1 : std::min(L - in_row, first + n - v);
      s_.rep.PutRun(in_row == 0 ? 0 : 1, take);
      v += take;
    }
  }
  s_.def.PutRun(L > 1 ? 3 : 1, n);
}

void ChunkWriter::AddValues(uint64_t n) {
  s_.batch.clear();
  AppendValues(p_.col.dtype, p_.phys, n, rng_, &s_.batch);
  if (!dictionary_) {
    s_.values.append(s_.batch);
    return;
  }
  s_.dict.AppendIndices(s_.batch.data(), n, &s_.indices);
}

// Arrow's EstimatedDataEncodedSize: PLAIN pages their bytes; dictionary pages a worst case of their indices.
uint64_t ChunkWriter::EstimatedPageBytes() const {
  if (!dictionary_) return s_.values.size();
  const int width = DictionaryIndexWidth(s_.dict.entries());
  return 1 + RleHybridEncoder::MaxBufferSize(width, s_.indices.size()) + RleHybridEncoder::MinBufferSize(width);
}

void ChunkWriter::AppendLevels(RleHybridEncoder& levels, std::string* body) {
  const std::string& runs = levels.Finish();
  const auto n = static_cast<uint32_t>(runs.size());
  body->append(reinterpret_cast<const char*>(&n), 4);  // v1 pages: levels carry a 4-byte length
  body->append(runs);
}

Status ChunkWriter::AddDataPage() {
  std::string& body = s_.body;
  body.clear();
  if (p_.col.size > 1) AppendLevels(s_.rep, &body);
  AppendLevels(s_.def, &body);
  s_.rep.Reset(1);
  s_.def.Reset(p_.col.size > 1 ? 2 : 1);
  PqPageHeader h;
  h.type = static_cast<int32_t>(PqPageType::kDataPage);
  h.num_values = static_cast<int32_t>(page_values_);
  if (dictionary_) {
    const int width = DictionaryIndexWidth(s_.dict.entries());
    body.push_back(static_cast<char>(width));
    s_.indices_rle.Reset(width);
    for (uint32_t i : s_.indices) s_.indices_rle.Put(i);
    body.append(s_.indices_rle.Finish());
    s_.indices.clear();
    h.encoding = kRleDictionary;
  } else {
    body.append(s_.values);
    s_.values.clear();
    h.encoding = kPlain;
  }
  page_values_ = 0;
  return WritePage(h, dictionary_);
}

// Arrow's FallbackToPlainEncoding: the dictionary page, then the pages that waited for it, then PLAIN pages.
Status ChunkWriter::FallBackToPlain() {
  FEEDRATE_RETURN_IF_ERROR(WriteDictionaryPage());
  if (page_values_ > 0) FEEDRATE_RETURN_IF_ERROR(AddDataPage());
  FEEDRATE_RETURN_IF_ERROR(WriteHeldPages());
  dictionary_ = false;
  return Status::Ok();
}

Status ChunkWriter::WriteDictionaryPage() {
  s_.body.clear();
  s_.dict.AppendPlain(&s_.body);
  c_.dictionary_page_offset = static_cast<int64_t>(out_.offset());
  PqPageHeader h;
  h.type = static_cast<int32_t>(PqPageType::kDictionaryPage);
  h.num_values = static_cast<int32_t>(s_.dict.entries());
  h.encoding = kPlain;
  return WritePage(h, false);
}

// Compresses s_.body and writes the page, or holds it (a data page written before its dictionary page).
Status ChunkWriter::WritePage(PqPageHeader h, bool hold) {
  FEEDRATE_RETURN_IF_ERROR(ParquetCompress(codec_, s_.body, &s_.packed));
  h.uncompressed_page_size = static_cast<int32_t>(s_.body.size());
  h.compressed_page_size = static_cast<int32_t>(s_.packed.size());
  std::string page = SerializePageHeader(h);
  c_.total_uncompressed_size += static_cast<int64_t>(page.size() + s_.body.size());
  c_.total_compressed_size += static_cast<int64_t>(page.size() + s_.packed.size());
  page.append(s_.packed);
  if (hold) {
    s_.held.push_back(std::move(page));
    return Status::Ok();
  }
  if (h.type == static_cast<int32_t>(PqPageType::kDataPage) && c_.data_page_offset < 0) {
    c_.data_page_offset = static_cast<int64_t>(out_.offset());
  }
  return out_.Append(page);
}

Status ChunkWriter::WriteHeldPages() {
  for (const std::string& page : s_.held) {
    if (c_.data_page_offset < 0) c_.data_page_offset = static_cast<int64_t>(out_.offset());
    FEEDRATE_RETURN_IF_ERROR(out_.Append(page));
  }
  s_.held.clear();
  return Status::Ok();
}

// About the bytes of a chunk of `n` values (levels and page headers add well under 1%): a dictionary of the
// distinct values the draws can give and indices of its width, or, where the dictionary reaches its limit, that
// limit's values so encoded and PLAIN for the rest.
uint64_t ChunkBytesEstimate(const ColumnPlan& p, uint64_t n) {
  const uint64_t width = std::max<uint32_t>(8, p.phys.bits) / 8;
  if (p.phys.type == PqType::kBoolean) return n / 8 + 64;
  const std::string& d = p.col.dtype;
  const uint32_t drawn_bits = d == "float32" ? 24 : d == "float64" ? 53 : d == "float16" ? 14 : DtypeBits(d);
  const uint64_t distinct = drawn_bits >= 40 ? n : std::min<uint64_t>(n, uint64_t{1} << drawn_bits);
  if (distinct * width < kDictionaryPageLimit) {
    return distinct * width + n * static_cast<uint64_t>(DictionaryIndexWidth(distinct) + 1) / 8 + 64;
  }
  const uint64_t in_dictionary = std::min(n, kDictionaryPageLimit / width + kWriteBatch);
  return kDictionaryPageLimit + in_dictionary * static_cast<uint64_t>(DictionaryIndexWidth(in_dictionary) + 1) / 8 +
         (n - in_dictionary) * width + 64;
}

}  // namespace

ParquetFileSpec DlioParquetSpec(const WorkloadConfig& cfg, uint64_t d1, uint64_t d2) {
  ParquetFileSpec s;
  s.columns = cfg.parquet_columns;
  s.legacy_elems = std::max<uint64_t>(1, d1 * d2);
  s.rows = cfg.num_samples_per_file;
  s.row_group_size = cfg.parquet_row_group_size;
  s.codec = ParquetCodecFor(cfg.compression);
  return s;
}

uint64_t ParquetDataBytes(const ParquetFileSpec& spec) {
  uint64_t bytes = 4096;
  for (const auto& p : PlanColumns(spec)) {
    for (uint64_t row = 0; row < spec.rows; row += spec.row_group_size) {
      bytes += ChunkBytesEstimate(p, std::min(spec.row_group_size, spec.rows - row) * p.col.size);
    }
  }
  return bytes + bytes / 100;
}

Status WriteDlioParquet(const std::string& path, const ParquetFileSpec& spec, uint64_t seed) {
  if (spec.codec < 0) return Status::InvalidArgument(path + ": no Parquet codec for this dataset.compression");
  FEEDRATE_ASSIGN_OR_RETURN(auto file, TempFile::Create(path));
  Sink out(&file);
  FEEDRATE_RETURN_IF_ERROR(out.Append("PAR1"));
  const auto plans = PlanColumns(spec);
  PqFileMetaData m;
  m.version = 2;
  m.num_rows = static_cast<int64_t>(spec.rows);
  m.created_by = "feedrate datagen (DLIO-layout Parquet)";
  m.schema.push_back({});
  m.schema[0].name = "schema";
  m.schema[0].num_children = static_cast<int32_t>(plans.size());
  for (const auto& p : plans) AddSchema(p, &m.schema);
  FastBytes rng(seed);
  ChunkScratch scratch;
  for (uint64_t row = 0; row < spec.rows; row += spec.row_group_size) {
    PqRowGroup g;
    g.num_rows = static_cast<int64_t>(std::min(spec.row_group_size, spec.rows - row));
    for (const auto& p : plans) {
      auto c = ChunkWriter(p, spec.codec, rng, out, scratch).Write(static_cast<uint64_t>(g.num_rows));
      if (!c.ok()) return c.status().WithContext(path);
      g.total_byte_size += c->total_uncompressed_size;
      g.columns.push_back(std::move(*c));
    }
    m.row_groups.push_back(std::move(g));
  }
  const std::string footer = SerializeFileMetaData(m);
  const auto len = static_cast<uint32_t>(footer.size());
  FEEDRATE_RETURN_IF_ERROR(out.Append(footer));
  FEEDRATE_RETURN_IF_ERROR(out.Append(std::string_view(reinterpret_cast<const char*>(&len), 4)));
  FEEDRATE_RETURN_IF_ERROR(out.Append("PAR1"));
  FEEDRATE_RETURN_IF_ERROR(out.Flush());
  return file.Commit();
}

bool ParquetFileMatches(const std::string& path, const ParquetFileSpec& spec) {
  auto fd = OpenForRead(path);
  if (!fd.ok()) return false;
  auto size = FileSize(fd->get(), path);
  if (!size.ok()) return false;
  FdByteSource src(fd->get(), *size, path);
  auto m = ReadParquetFooter(src);
  if (!m.ok() || m->num_rows != static_cast<int64_t>(spec.rows)) return false;
  const auto plans = PlanColumns(spec);
  const auto fields = m->TopFields();
  if (fields.size() != plans.size()) return false;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (fields[i].name != plans[i].col.name) return false;
  }
  return m->row_groups.empty() || m->row_groups[0].columns[0].codec == spec.codec;
}

}  // namespace feedrate
