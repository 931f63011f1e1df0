// Parquet pages in memory: header walk, decompression, level and value decoding (parquet-format Encodings.md).
#include "loader/format/parquet_decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "loader/format/parquet_codec.h"

namespace feedrate {

namespace {

using Mode = ParquetChunkDecoder::Mode;

// The most one page may take once decoded (its uncompressed bytes, its levels, its values): writers close pages at
// about 1 MiB (pyarrow, parquet-mr, DuckDB), so this only refuses headers whose sizes would exhaust memory.
constexpr uint64_t kMaxPageBytes = uint64_t{256} << 20;

Status CheckPageBounds(const PqPageHeader& h) {
  if (static_cast<uint64_t>(h.uncompressed_page_size) > kMaxPageBytes || static_cast<uint64_t>(h.num_values) * 4 > kMaxPageBytes) {
    return Status::Unsupported("a page of " + std::to_string(h.uncompressed_page_size) + " bytes and " +
                               std::to_string(h.num_values) + " values is larger than Feedrate decodes (256 MiB)");
  }
  return Status::Ok();
}

Status CheckDecodedBounds(uint64_t values, uint64_t width) {
  if (width != 0 && values > kMaxPageBytes / width) {
    return Status::Unsupported("a page decodes to more than 256 MiB (" + std::to_string(values) + " values of " +
                               std::to_string(width) + " bytes)");
  }
  return Status::Ok();
}

bool IsDataPage(int32_t type) {
  return type == static_cast<int32_t>(PqPageType::kDataPage) || type == static_cast<int32_t>(PqPageType::kDataPageV2);
}

int BitWidth(uint32_t max_value) {
  int w = 0;
  while (w < 32 && (uint64_t{1} << w) <= max_value) ++w;
  return w;
}

uint32_t LoadLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// The value at bit `bit` of a little-endian bit stream of `bytes` bytes, `w` (<= 32) bits wide.
uint32_t BitsAt(const uint8_t* p, size_t bytes, uint64_t bit, int w) {
  const size_t at = static_cast<size_t>(bit / 8);
  uint64_t word = 0;
  const size_t n = std::min<size_t>(8, bytes - at);
  std::memcpy(&word, p + at, n);  // little-endian host (x86-64, aarch64)
  return static_cast<uint32_t>((word >> (bit % 8)) & ((uint64_t{1} << w) - 1));
}

// The RLE/bit-packed hybrid encoding: n values of w bits from p[0..size) into out[0..n).
template <class T>
Status DecodeHybrid(const uint8_t* p, size_t size, int w, uint64_t n, T* out) {
  size_t pos = 0;
  uint64_t k = 0;
  while (k < n) {
    uint64_t header = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= size || shift > 35) return Status::Corruption("RLE/bit-packed run header runs past its bytes");
      const uint8_t b = p[pos++];
      header |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    if (header & 1) {  // bit-packed: groups of 8 values
      const uint64_t count = (header >> 1) * 8, bytes = (header >> 1) * static_cast<uint64_t>(w);
      if (count == 0 || bytes > size - pos) return Status::Corruption("bit-packed run runs past its bytes");
      const uint64_t take = std::min(count, n - k);
      for (uint64_t i = 0; i < take; ++i) out[k + i] = static_cast<T>(BitsAt(p + pos, static_cast<size_t>(bytes), i * static_cast<uint64_t>(w), w));
      pos += static_cast<size_t>(bytes);
      k += take;
    } else {  // RLE: one value repeated
      const uint64_t count = header >> 1;
      const size_t vbytes = static_cast<size_t>((w + 7) / 8);
      if (count == 0 || vbytes > size - pos) return Status::Corruption("RLE run is empty or runs past its bytes");
      uint32_t v = 0;
      for (size_t b = 0; b < vbytes; ++b) v |= static_cast<uint32_t>(p[pos + b]) << (8 * b);
      pos += vbytes;
      const uint64_t take = std::min(count, n - k);
      std::fill(out + k, out + k + take, static_cast<T>(v));
      k += take;
    }
  }
  return Status::Ok();
}

// Data page v1: a level run is a 4-byte length and that many bytes of RLE/bit-packed hybrid data.
Status TakeLevelRun(int32_t encoding, const uint8_t** p, size_t* left, const uint8_t** run, size_t* run_bytes) {
  if (encoding != kRle) return Status::Unsupported(std::string("levels encoded ") + PqEncodingName(encoding));
  if (*left < 4 || LoadLe32(*p) > *left - 4) return Status::Corruption("a level run's length runs past the page");
  *run_bytes = LoadLe32(*p);
  *run = *p + 4;
  *p += 4 + *run_bytes;
  *left -= 4 + *run_bytes;
  return Status::Ok();
}

// A ULEB128 varint at p[*pos..size).
bool ReadUleb(const uint8_t* p, size_t size, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= size) return false;
    const uint8_t b = p[(*pos)++];
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

int64_t ZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// DELTA_BINARY_PACKED (INT32/INT64): a header (block size, miniblocks per block, count, first value), then blocks
// of a minimum delta, one bit width per miniblock and the miniblocks' bit-packed deltas. `w`: 4 or 8 bytes out.
Status DecodeDeltaBinaryPacked(const uint8_t* p, size_t size, uint64_t n, uint32_t w, char* out) {
  size_t pos = 0;
  uint64_t block = 0, minis = 0, total = 0, first = 0;
  if (!ReadUleb(p, size, &pos, &block) || !ReadUleb(p, size, &pos, &minis) || !ReadUleb(p, size, &pos, &total) ||
      !ReadUleb(p, size, &pos, &first) || block == 0 || block % 128 != 0 || minis == 0 || block % minis != 0 ||
      (block / minis) % 32 != 0 || total < n) {
    return Status::Corruption("DELTA_BINARY_PACKED header is malformed or holds fewer values than the page");
  }
  const uint64_t per_mini = block / minis;
  uint64_t value = static_cast<uint64_t>(ZigZag(first)), k = 0;
  auto put = [&](uint64_t v) {
    if (w == 4) {
      const auto x = static_cast<uint32_t>(v);
      std::memcpy(out + k * 4, &x, 4);
    } else {
      std::memcpy(out + k * 8, &v, 8);
    }
    ++k;
  };
  if (n > 0) put(value);
  while (k < n) {
    uint64_t min_delta = 0;
    if (!ReadUleb(p, size, &pos, &min_delta) || minis > size - pos) return Status::Corruption("DELTA_BINARY_PACKED block runs past the page");
    const uint8_t* widths = p + pos;
    pos += static_cast<size_t>(minis);
    for (uint64_t m = 0; m < minis && k < n; ++m) {
      const int bw = widths[m];
      const uint64_t bytes = per_mini * static_cast<uint64_t>(bw) / 8;
      if (bw > 64 || bytes > size - pos) return Status::Corruption("DELTA_BINARY_PACKED miniblock runs past the page");
      for (uint64_t i = 0; i < per_mini && k < n; ++i) {
        uint64_t d = 0;
        if (bw > 0) {  // up to 64 bits: two 32-bit reads
          const uint64_t bit = i * static_cast<uint64_t>(bw);
          const int lo = std::min(bw, 32);
          d = BitsAt(p + pos, static_cast<size_t>(bytes), bit, lo);
          if (bw > 32) d |= static_cast<uint64_t>(BitsAt(p + pos, static_cast<size_t>(bytes), bit + 32, bw - 32)) << 32;
        }
        value += static_cast<uint64_t>(ZigZag(min_delta)) + d;
        put(value);
      }
      pos += static_cast<size_t>(bytes);
    }
  }
  return Status::Ok();
}

uint32_t FixedWidth(const PqChunkLayout& c) {
  switch (static_cast<PqType>(c.type)) {
    case PqType::kInt32: case PqType::kFloat: return 4;
    case PqType::kInt64: case PqType::kDouble: return 8;
    case PqType::kInt96: return 12;
    case PqType::kFixedLenByteArray: return static_cast<uint32_t>(std::max(0, c.type_length));
    default: return 0;  // BOOLEAN (bits), BYTE_ARRAY (lengths)
  }
}

float HalfToFloat(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
}

// The sum of `n` decoded fixed-width values (the oracle's per-column check).
double SumOf(const PqChunkLayout& c, const char* v, uint64_t n) {
  double s = 0;
  const uint32_t w = FixedWidth(c);
  for (uint64_t i = 0; i < n; ++i) {
    const char* x = v + i * w;
    if (c.type == static_cast<int32_t>(PqType::kInt32)) {
      int32_t a;
      std::memcpy(&a, x, 4);
      s += c.is_unsigned ? static_cast<double>(static_cast<uint32_t>(a)) : a;
    } else if (c.type == static_cast<int32_t>(PqType::kInt64)) {
      int64_t a;
      std::memcpy(&a, x, 8);
      s += c.is_unsigned ? static_cast<double>(static_cast<uint64_t>(a)) : static_cast<double>(a);
    } else if (c.type == static_cast<int32_t>(PqType::kFloat)) {
      float a;
      std::memcpy(&a, x, 4);
      s += a;
    } else if (c.type == static_cast<int32_t>(PqType::kDouble)) {
      double a;
      std::memcpy(&a, x, 8);
      s += a;
    } else if (c.is_float16) {
      uint16_t a;
      std::memcpy(&a, x, 2);
      s += HalfToFloat(a);
    }
  }
  return s;
}

bool Summable(const PqChunkLayout& c) {
  return c.type == static_cast<int32_t>(PqType::kInt32) || c.type == static_cast<int32_t>(PqType::kInt64) ||
         c.type == static_cast<int32_t>(PqType::kFloat) || c.type == static_cast<int32_t>(PqType::kDouble) ||
         c.type == static_cast<int32_t>(PqType::kBoolean) || c.is_float16;
}

void GrowTo(std::string* s, size_t n) {
  if (s->size() < n) s->resize(n);
}

// Leaves of the schema subtree at schema[*i], depth first, with their levels.
void CollectLeaves(const std::vector<PqSchemaElement>& s, size_t* i, int16_t def, int16_t rep, int depth,
                   std::vector<PqChunkLayout>* out) {
  if (*i >= s.size() || depth > 64) return;  // the footer check has made it a tree; bounded all the same
  const PqSchemaElement& e = s[(*i)++];
  def = static_cast<int16_t>(def + (e.repetition != 0 ? 1 : 0));
  rep = static_cast<int16_t>(rep + (e.repetition == 2 ? 1 : 0));
  if (e.num_children == 0) {
    PqChunkLayout c;
    c.max_def = def;
    c.max_rep = rep;
    c.type_length = e.type_length;
    c.is_unsigned = (e.converted_type >= 11 && e.converted_type <= 14) || (e.logical_type == 10 && !e.int_signed);
    c.is_float16 = e.logical_type == 15 && e.type_length == 2;
    out->push_back(c);
    return;
  }
  for (int32_t k = 0; k < e.num_children; ++k) CollectLeaves(s, i, def, rep, depth + 1, out);
}

}  // namespace

Result<std::vector<PqChunkLayout>> ParquetChunkLayouts(const PqFileMetaData& m, size_t g, const std::string& name) {
  std::vector<PqChunkLayout> leaves;
  if (!m.schema.empty()) {
    size_t i = 1;
    for (int32_t k = 0; k < m.schema[0].num_children; ++k) CollectLeaves(m.schema, &i, 0, 0, 1, &leaves);
  }
  const PqRowGroup& rg = m.row_groups.at(g);
  if (leaves.size() != rg.columns.size()) {
    return Status::Corruption(name + ": row group " + std::to_string(g) + " has " + std::to_string(rg.columns.size()) +
                              " column chunks for " + std::to_string(leaves.size()) + " leaf columns");
  }
  for (size_t k = 0; k < leaves.size(); ++k) {
    const PqColumnChunk& cc = rg.columns[k];
    leaves[k].offset = static_cast<uint64_t>(cc.start());
    leaves[k].size = static_cast<uint64_t>(cc.total_compressed_size);
    leaves[k].codec = cc.codec;
    leaves[k].type = cc.type;
    leaves[k].num_values = cc.num_values;
  }
  return leaves;
}

Status ParquetChunkDecoder::Walk(const PqChunkLayout& c, const uint8_t* data, Mode mode, PqChunkStats* st) {
  uint64_t at = 0, values = 0;
  dict_count_ = 0;
  while (at < c.size) {
    auto h = ParsePageHeader(data + at, static_cast<size_t>(c.size - at));
    if (!h.ok()) return h.status().WithContext("page at chunk offset " + std::to_string(at));
    const uint64_t body = at + h->header_bytes, end = body + static_cast<uint64_t>(h->compressed_page_size);
    if (end > c.size) {
      return Status::Corruption("the page at chunk offset " + std::to_string(at) + " runs past the chunk's " +
                                std::to_string(c.size) + " bytes");
    }
    ++st->pages;
    Status s = mode != Mode::kHeaders ? CheckPageBounds(*h) : Status::Ok();
    if (!s.ok()) return s.WithContext("page at chunk offset " + std::to_string(at));
    if (IsDataPage(h->type)) {
      values += static_cast<uint64_t>(h->num_values);
      if (mode != Mode::kHeaders) s = DecodePage(c, *h, data + body, mode == Mode::kDecodeWithSums, st);
    } else if (h->type == static_cast<int32_t>(PqPageType::kDictionaryPage) && mode != Mode::kHeaders) {
      s = DecodeDictionary(c, *h, data + body);
    }
    if (!s.ok()) return s.WithContext("page at chunk offset " + std::to_string(at));
    at = end;
  }
  if (values != static_cast<uint64_t>(c.num_values)) {
    return Status::Corruption("data pages hold " + std::to_string(values) + " values, the footer says " + std::to_string(c.num_values));
  }
  st->values += values;
  return Status::Ok();
}

Result<const uint8_t*> ParquetChunkDecoder::Uncompressed(const PqChunkLayout& c, const uint8_t* p, size_t size,
                                                         size_t out_size, std::string* buf) {
  if (c.codec == static_cast<int32_t>(PqCodec::kUncompressed)) {
    if (size != out_size) {
      return Status::Corruption("an uncompressed page of " + std::to_string(size) + " bytes says " + std::to_string(out_size));
    }
    return p;
  }
  GrowTo(buf, out_size);
  FEEDRATE_RETURN_IF_ERROR(ParquetDecompress(c.codec, std::string_view(reinterpret_cast<const char*>(p), size), buf->data(), out_size));
  return reinterpret_cast<const uint8_t*>(buf->data());
}

Status ParquetChunkDecoder::DecodeDictionary(const PqChunkLayout& c, const PqPageHeader& h, const uint8_t* body) {
  if (h.encoding != kPlain && h.encoding != kPlainDictionary) {
    return Status::Unsupported(std::string("dictionary page encoding ") + PqEncodingName(h.encoding));
  }
  FEEDRATE_ASSIGN_OR_RETURN(const uint8_t* p, Uncompressed(c, body, static_cast<size_t>(h.compressed_page_size),
                                                           static_cast<size_t>(h.uncompressed_page_size), &dict_raw_));
  const auto size = static_cast<size_t>(h.uncompressed_page_size);
  const auto n = static_cast<uint64_t>(h.num_values);
  const uint32_t w = FixedWidth(c);
  if (w > 0) {
    if (n > size / w) return Status::Corruption("dictionary page holds fewer bytes than its values");
    GrowTo(&dict_, static_cast<size_t>(n * w));
    std::memcpy(dict_.data(), p, static_cast<size_t>(n * w));
  } else if (c.type == static_cast<int32_t>(PqType::kByteArray)) {
    if (n > size / 4) return Status::Corruption("dictionary page holds fewer bytes than its values' lengths");
    GrowTo(&dict_, static_cast<size_t>(n * 8));  // (offset, length) pairs into the page
    size_t pos = 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (size - pos < 4 || LoadLe32(p + pos) > size - pos - 4) return Status::Corruption("dictionary byte array runs past its page");
      const uint32_t pair[2] = {static_cast<uint32_t>(pos + 4), LoadLe32(p + pos)};
      std::memcpy(dict_.data() + i * 8, pair, 8);
      pos += 4 + pair[1];
    }
    if (p != reinterpret_cast<const uint8_t*>(dict_raw_.data())) dict_raw_.assign(reinterpret_cast<const char*>(p), size);
  } else {
    return Status::Unsupported("a dictionary of BOOLEAN values");
  }
  dict_count_ = n;
  return Status::Ok();
}

Status ParquetChunkDecoder::DecodePage(const PqChunkLayout& c, const PqPageHeader& h, const uint8_t* body, bool sums,
                                       PqChunkStats* st) {
  const uint64_t n = static_cast<uint64_t>(h.num_values);
  const bool v2 = h.type == static_cast<int32_t>(PqPageType::kDataPageV2);
  const uint8_t* p = nullptr;
  size_t left = 0;
  const uint8_t* rep = nullptr;
  const uint8_t* def = nullptr;
  size_t rep_bytes = 0, def_bytes = 0;
  if (v2) {  // levels first, never compressed; then the values, compressed unless the header says not
    rep_bytes = static_cast<size_t>(h.rep_levels_bytes);
    def_bytes = static_cast<size_t>(h.def_levels_bytes);
    const size_t levels = rep_bytes + def_bytes;
    if (levels > static_cast<size_t>(h.compressed_page_size) || levels > static_cast<size_t>(h.uncompressed_page_size)) {
      return Status::Corruption("data page v2 levels are larger than the page");
    }
    rep = body;
    def = body + rep_bytes;
    PqChunkLayout values_codec = c;
    if (!h.v2_compressed) values_codec.codec = static_cast<int32_t>(PqCodec::kUncompressed);
    left = static_cast<size_t>(h.uncompressed_page_size) - levels;
    FEEDRATE_ASSIGN_OR_RETURN(p, Uncompressed(values_codec, body + levels, static_cast<size_t>(h.compressed_page_size) - levels, left, &page_));
  } else {
    left = static_cast<size_t>(h.uncompressed_page_size);
    FEEDRATE_ASSIGN_OR_RETURN(p, Uncompressed(c, body, static_cast<size_t>(h.compressed_page_size), left, &page_));
    if (c.max_rep > 0) FEEDRATE_RETURN_IF_ERROR(TakeLevelRun(h.rep_level_encoding, &p, &left, &rep, &rep_bytes));
    if (c.max_def > 0) FEEDRATE_RETURN_IF_ERROR(TakeLevelRun(h.def_level_encoding, &p, &left, &def, &def_bytes));
  }
  if (levels_.size() < n) levels_.resize(static_cast<size_t>(n));
  if (c.max_rep > 0) FEEDRATE_RETURN_IF_ERROR(DecodeHybrid(rep, rep_bytes, BitWidth(static_cast<uint32_t>(c.max_rep)), n, levels_.data()));
  uint64_t present = n;
  if (c.max_def > 0) {
    FEEDRATE_RETURN_IF_ERROR(DecodeHybrid(def, def_bytes, BitWidth(static_cast<uint32_t>(c.max_def)), n, levels_.data()));
    present = static_cast<uint64_t>(std::count(levels_.begin(), levels_.begin() + static_cast<std::ptrdiff_t>(n), c.max_def));
  }
  st->nulls += n - present;
  return DecodeValues(c, h.encoding, p, left, present, sums, st);
}

Status ParquetChunkDecoder::DecodeValues(const PqChunkLayout& c, int32_t encoding, const uint8_t* p, size_t n,
                                         uint64_t present, bool sums, PqChunkStats* st) {
  const uint32_t w = FixedWidth(c);
  if (encoding == kPlainDictionary || encoding == kRleDictionary) {
    if (dict_count_ == 0 && present > 0) return Status::Corruption("dictionary-encoded values without a dictionary page");
    if (n < 1 || p[0] > 32) return Status::Corruption("dictionary indices without a valid bit width");
    if (indices_.size() < present) indices_.resize(static_cast<size_t>(present));
    FEEDRATE_RETURN_IF_ERROR(DecodeHybrid(p + 1, n - 1, p[0], present, indices_.data()));
    const uint32_t width = w > 0 ? w : 1;
    FEEDRATE_RETURN_IF_ERROR(CheckDecodedBounds(present, width));
    uint64_t out = 0;
    GrowTo(&column_, static_cast<size_t>(present * width));
    for (uint64_t i = 0; i < present; ++i) {
      const uint32_t ix = indices_[i];
      if (ix >= dict_count_) return Status::Corruption("dictionary index " + std::to_string(ix) + " of " + std::to_string(dict_count_));
      if (w > 0) {
        std::memcpy(column_.data() + i * w, dict_.data() + static_cast<uint64_t>(ix) * w, w);
      } else {  // byte arrays: copy each value's bytes
        uint32_t pair[2];
        std::memcpy(pair, dict_.data() + static_cast<uint64_t>(ix) * 8, 8);
        if (out + pair[1] > kMaxPageBytes) return CheckDecodedBounds(out + pair[1], 1);
        GrowTo(&column_, static_cast<size_t>(out + pair[1]));
        std::memcpy(column_.data() + out, dict_raw_.data() + pair[0], pair[1]);
        out += pair[1];
      }
    }
    st->decoded_bytes += w > 0 ? present * w : out;
  } else if (encoding == kByteStreamSplit && w > 0) {  // byte k of every value, then byte k+1, ...
    if (present * w > n) return Status::Corruption("the page holds fewer value bytes than its values");
    GrowTo(&column_, static_cast<size_t>(present * w));
    for (uint32_t b = 0; b < w; ++b) {
      const uint8_t* stream = p + b * present;
      for (uint64_t i = 0; i < present; ++i) column_[i * w + b] = static_cast<char>(stream[i]);
    }
    st->decoded_bytes += present * w;
  } else if (encoding == kDeltaBinaryPacked && (w == 4 || w == 8) && c.type != static_cast<int32_t>(PqType::kFloat) &&
             c.type != static_cast<int32_t>(PqType::kDouble)) {
    FEEDRATE_RETURN_IF_ERROR(CheckDecodedBounds(present, w));
    GrowTo(&column_, static_cast<size_t>(present * w));
    FEEDRATE_RETURN_IF_ERROR(DecodeDeltaBinaryPacked(p, n, present, w, column_.data()));
    st->decoded_bytes += present * w;
  } else if (encoding != kPlain) {
    return Status::Unsupported(std::string("values encoded ") + PqEncodingName(encoding) + " (PLAIN, dictionary, BYTE_STREAM_SPLIT and DELTA_BINARY_PACKED integers are decoded)");
  } else if (w > 0) {
    if (present * w > n) return Status::Corruption("the page holds fewer value bytes than its values");
    GrowTo(&column_, static_cast<size_t>(present * w));
    std::memcpy(column_.data(), p, static_cast<size_t>(present * w));
    st->decoded_bytes += present * w;
  } else if (c.type == static_cast<int32_t>(PqType::kBoolean)) {
    if ((present + 7) / 8 > n) return Status::Corruption("the page holds fewer value bytes than its values");
    GrowTo(&column_, static_cast<size_t>(present));
    for (uint64_t i = 0; i < present; ++i) column_[i] = static_cast<char>((p[i / 8] >> (i % 8)) & 1);
    st->decoded_bytes += present;
  } else {  // BYTE_ARRAY: a 4-byte length before each value
    size_t pos = 0, out = 0;
    for (uint64_t i = 0; i < present; ++i) {
      if (n - pos < 4 || LoadLe32(p + pos) > n - pos - 4) return Status::Corruption("a byte array runs past its page");
      const uint32_t len = LoadLe32(p + pos);
      GrowTo(&column_, out + len);
      std::memcpy(column_.data() + out, p + pos + 4, len);
      pos += 4 + len;
      out += len;
    }
    st->decoded_bytes += out;
  }
  if (sums && Summable(c)) {
    st->has_sum = true;
    if (c.type == static_cast<int32_t>(PqType::kBoolean)) {
      st->sum += static_cast<double>(std::count(column_.begin(), column_.begin() + static_cast<std::ptrdiff_t>(present), 1));
    } else {
      st->sum += SumOf(c, column_.data(), present);
    }
  }
  return Status::Ok();
}

}  // namespace feedrate
