// DLIO-layout Parquet writer (see parquet_writer.h).
#include "datagen/parquet_writer.h"

#include <algorithm>
#include <cstring>

#include "datagen/temp_file.h"
#include "loader/format/parquet.h"
#include "loader/format/parquet_codec.h"
#include "loader/io/unique_fd.h"

namespace feedrate {

namespace {

constexpr uint64_t kPageBytes = 1 << 20;       // pyarrow's data_page_size
constexpr uint64_t kWriteBatch = 1024;         // pyarrow's write_batch_size: pages close at a multiple of it
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

uint16_t HalfOf(uint32_t k) {  // k / 1024 as an IEEE half, k < 1024
  if (k == 0) return 0;
  int e = 31 - __builtin_clz(k);  // 0..9
  const uint32_t mantissa = (k - (1u << e)) << (10 - e);
  return static_cast<uint16_t>(((e + 5) << 10) | mantissa);
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
      const uint16_t h = HalfOf(static_cast<uint32_t>(r >> 54));
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

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// RLE/bit-packed hybrid levels (widths <= 8), v1 page form: a 4-byte length, then RLE runs only.
class LevelRuns {
 public:
  void Add(uint8_t level, uint64_t count) {
    if (count == 0) return;
    if (count_ > 0 && level == level_) {
      count_ += count;
      return;
    }
    Flush();
    level_ = level;
    count_ = count;
  }
  void AppendTo(std::string* out) {
    Flush();
    const uint32_t n = static_cast<uint32_t>(runs_.size());
    out->append(reinterpret_cast<const char*>(&n), 4);
    out->append(runs_);
    runs_.clear();
  }

 private:
  void Flush() {
    if (count_ == 0) return;
    AppendVarint(count_ << 1, &runs_);
    runs_.push_back(static_cast<char>(level_));
    count_ = 0;
  }
  std::string runs_;
  uint8_t level_ = 0;
  uint64_t count_ = 0;
};

struct ColumnPlan {
  ParquetColumn col;
  Physical phys;
  std::string leaf_path;
  uint64_t values_per_page = 0;
};

std::vector<ColumnPlan> PlanColumns(const ParquetFileSpec& spec) {
  std::vector<ColumnPlan> out;
  std::vector<ParquetColumn> cols = spec.columns;
  if (cols.empty()) cols.push_back({"data", "uint8", spec.legacy_elems, true});
  for (const auto& c : cols) {
    ColumnPlan p{c, PhysicalFor(c.dtype), c.size > 1 ? c.name + ".list.element" : c.name, 0};
    const uint64_t batch_bytes = std::max<uint64_t>(1, kWriteBatch * p.phys.bits / 8);
    p.values_per_page = (kPageBytes + batch_bytes - 1) / batch_bytes * kWriteBatch;
    out.push_back(p);
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

// One page's body: levels then values. `first` is the chunk-relative index of the page's first value.
void PageBody(const ColumnPlan& p, uint64_t first, uint64_t n, FastBytes& rng, std::string* body) {
  body->clear();
  const uint64_t L = p.col.size;
  if (L > 1) {
    LevelRuns rep;
    for (uint64_t v = first; v < first + n;) {
      const uint64_t in_row = v % L;
      if (in_row == 0) {
        rep.Add(0, 1);
        ++v;
      } else {
        const uint64_t take = std::min(L - in_row, first + n - v);
        rep.Add(1, take);
        v += take;
      }
    }
    rep.AppendTo(body);
  }
  LevelRuns def;
  def.Add(L > 1 ? 3 : 1, n);  // every value present
  def.AppendTo(body);
  AppendValues(p.col.dtype, p.phys, n, rng, body);
}

Result<PqColumnChunk> WriteChunk(const ColumnPlan& p, uint64_t rows, int32_t codec, FastBytes& rng, Sink& out) {
  PqColumnChunk c;
  c.path = p.leaf_path;
  c.type = static_cast<int32_t>(p.phys.type);
  c.codec = codec;
  c.encodings = {kPlain, kRle};
  c.num_values = static_cast<int64_t>(rows * p.col.size);
  c.data_page_offset = static_cast<int64_t>(out.offset());
  std::string body, packed;
  for (uint64_t first = 0; first < static_cast<uint64_t>(c.num_values); first += p.values_per_page) {
    const uint64_t n = std::min<uint64_t>(p.values_per_page, static_cast<uint64_t>(c.num_values) - first);
    PageBody(p, first, n, rng, &body);
    FEEDRATE_RETURN_IF_ERROR(ParquetCompress(codec, body, &packed));
    PqPageHeader h;
    h.type = static_cast<int32_t>(PqPageType::kDataPage);
    h.uncompressed_page_size = static_cast<int32_t>(body.size());
    h.compressed_page_size = static_cast<int32_t>(packed.size());
    h.num_values = static_cast<int32_t>(n);
    h.encoding = kPlain;
    const std::string header = SerializePageHeader(h);
    FEEDRATE_RETURN_IF_ERROR(out.Append(header));
    FEEDRATE_RETURN_IF_ERROR(out.Append(packed));
    c.total_uncompressed_size += static_cast<int64_t>(header.size() + body.size());
    c.total_compressed_size += static_cast<int64_t>(header.size() + packed.size());
  }
  return c;
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
  uint64_t bytes = 0;
  for (const auto& p : PlanColumns(spec)) bytes += spec.rows * p.col.size * std::max<uint32_t>(8, p.phys.bits) / 8;
  return bytes + 4096;
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
  for (uint64_t row = 0; row < spec.rows; row += spec.row_group_size) {
    PqRowGroup g;
    g.num_rows = static_cast<int64_t>(std::min(spec.row_group_size, spec.rows - row));
    for (const auto& p : plans) {
      auto c = WriteChunk(p, static_cast<uint64_t>(g.num_rows), spec.codec, rng, out);
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
