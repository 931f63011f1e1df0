// The Parquet page decoder on hand-built pages: levels, PLAIN and dictionary values, compression, and every
// refusal naming its cause (files other writers made are checked against DuckDB in tests/integration).
#include <gtest/gtest.h>

#include <cstring>

#include "loader/format/parquet.h"
#include "loader/format/parquet_codec.h"
#include "loader/format/parquet_decode.h"

namespace feedrate {
namespace {

using Mode = ParquetChunkDecoder::Mode;

std::string Le32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

// A page: its header (sizes filled in from the body, compressed with `codec`) and the body.
std::string Page(PqPageType type, int32_t num_values, int32_t encoding, const std::string& body, int32_t codec = 0) {
  std::string packed;
  EXPECT_TRUE(ParquetCompress(codec, body, &packed).ok());
  PqPageHeader h;
  h.type = static_cast<int32_t>(type);
  h.num_values = num_values;
  h.encoding = encoding;
  h.uncompressed_page_size = static_cast<int32_t>(body.size());
  h.compressed_page_size = static_cast<int32_t>(packed.size());
  return SerializePageHeader(h) + packed;
}

PqChunkLayout Layout(PqType type, const std::string& chunk, int64_t values, int16_t max_def, int32_t codec = 0) {
  PqChunkLayout c;
  c.type = static_cast<int32_t>(type);
  c.size = chunk.size();
  c.num_values = values;
  c.max_def = max_def;
  c.codec = codec;
  return c;
}

Status Walk(const PqChunkLayout& c, const std::string& chunk, Mode mode, PqChunkStats* st) {
  ParquetChunkDecoder d;
  return d.Walk(c, reinterpret_cast<const uint8_t*>(chunk.data()), mode, st);
}

// An optional INT32 column of 4 entries, the second null: definition levels 1,0,1,1 as one bit-packed run
// (header 3: one group of 8; bits LSB first 0b1101), then the 3 present values.
std::string OptionalInt32Body() {
  std::string body = Le32(2) + std::string("\x03\x0d", 2);
  for (int32_t v : {5, 7, -2}) body += Le32(static_cast<uint32_t>(v));
  return body;
}

TEST(ParquetDecode, LevelsAndPlainValuesGiveValuesNullsAndSumsWithEveryCodec) {
  for (int32_t codec : {0, 1, 2, 6, 7}) {  // none, snappy, gzip, zstd, lz4_raw
    const std::string chunk = Page(PqPageType::kDataPage, 4, kPlain, OptionalInt32Body(), codec);
    PqChunkStats st;
    ASSERT_TRUE(Walk(Layout(PqType::kInt32, chunk, 4, 1, codec), chunk, Mode::kDecodeWithSums, &st).ok()) << codec;
    EXPECT_EQ(st.pages, 1u);
    EXPECT_EQ(st.values, 4u);
    EXPECT_EQ(st.nulls, 1u);
    EXPECT_EQ(st.decoded_bytes, 12u);
    EXPECT_TRUE(st.has_sum);
    EXPECT_EQ(st.sum, 10.0);
  }
}

TEST(ParquetDecode, DictionaryPagesAndRleIndices) {
  std::string dict;
  for (double v : {1.5, 2.5, 4.0}) dict.append(reinterpret_cast<const char*>(&v), 8);
  // Indices 2,2,2 (an RLE run: header 3<<1, value 2) then 0,1 (a bit-packed group of 8, 2 bits each: 0x04 0x00).
  const std::string indices = std::string("\x02", 1) + std::string("\x06\x02", 2) + std::string("\x03\x04\x00", 3);
  const std::string chunk = Page(PqPageType::kDictionaryPage, 3, kPlain, dict) +
                            Page(PqPageType::kDataPage, 5, kRleDictionary, indices);
  PqChunkStats st;
  ASSERT_TRUE(Walk(Layout(PqType::kDouble, chunk, 5, 0), chunk, Mode::kDecodeWithSums, &st).ok());
  EXPECT_EQ(st.pages, 2u);
  EXPECT_EQ(st.values, 5u);
  EXPECT_EQ(st.nulls, 0u);
  EXPECT_EQ(st.sum, 4.0 * 3 + 1.5 + 2.5);
  // An index past the dictionary's end (3 of 3) is refused.
  const std::string bad = Page(PqPageType::kDictionaryPage, 3, kPlain, dict) +
                          Page(PqPageType::kDataPage, 1, kRleDictionary, std::string("\x02\x02\x03", 3));
  PqChunkStats st2;
  Status s = Walk(Layout(PqType::kDouble, bad, 1, 0), bad, Mode::kDecode, &st2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dictionary index 3 of 3"), std::string::npos) << s.ToString();
  // Headers only: the same chunk walks (the values are not looked at).
  PqChunkStats st3;
  EXPECT_TRUE(Walk(Layout(PqType::kDouble, bad, 1, 0), bad, Mode::kHeaders, &st3).ok());
}

TEST(ParquetDecode, DamagedChunksAreRefusedNamingTheCause) {
  const std::string good = Page(PqPageType::kDataPage, 4, kPlain, OptionalInt32Body(), 1);
  struct Case {
    std::string chunk;
    int64_t values;
    int32_t codec;
    Mode mode;
    std::string cause;
  };
  std::string corrupt_body = good;  // snappy's length preamble says 127 bytes where the page says 22
  auto header = ParsePageHeader(reinterpret_cast<const uint8_t*>(good.data()), good.size());
  ASSERT_TRUE(header.ok());
  corrupt_body[header->header_bytes] = '\x7f';
  std::string long_levels = OptionalInt32Body();
  long_levels.replace(0, 4, Le32(1000));
  const std::vector<Case> cases = {
      {good, 5, 1, Mode::kHeaders, "data pages hold 4 values, the footer says 5"},
      {good.substr(0, good.size() - 3), 4, 1, Mode::kHeaders, "runs past the chunk's"},
      {std::string(12, '\xff'), 4, 1, Mode::kHeaders, "page at chunk offset 0"},
      {corrupt_body, 4, 1, Mode::kDecode, "page at chunk offset 0: "},
      {Page(PqPageType::kDataPage, 4, kPlain, long_levels), 4, 0, Mode::kDecode, "level run's length runs past the page"},
      {Page(PqPageType::kDataPage, 4, 7, OptionalInt32Body()), 4, 0, Mode::kDecode, "values encoded DELTA_BYTE_ARRAY"},
      {Page(PqPageType::kDataPage, 1, kRleDictionary, Le32(2) + std::string("\x02\x01\x01\x02\x00", 5)), 1, 0, Mode::kDecode,
       "without a dictionary page"},
  };
  for (const auto& c : cases) {
    PqChunkStats st;
    Status s = Walk(Layout(PqType::kInt32, c.chunk, c.values, 1, c.codec), c.chunk, c.mode, &st);
    ASSERT_FALSE(s.ok()) << c.cause;
    EXPECT_NE(s.message().find(c.cause), std::string::npos) << c.cause << "\n" << s.ToString();
  }
}

// Levels come from the schema: a nullable scalar has one definition level; a nullable list (Arrow's three-level
// LIST) three definition levels and one repetition level.
TEST(ParquetDecode, LeafLevelsFollowTheSchema) {
  PqFileMetaData m;
  auto elem = [](const char* name, int32_t type, int32_t rep, int32_t children) {
    PqSchemaElement e;
    e.name = name;
    e.type = type;
    e.repetition = rep;
    e.num_children = children;
    return e;
  };
  m.schema = {elem("schema", -1, 0, 2), elem("x", 1, 1, 0), elem("vec", -1, 1, 1), elem("list", -1, 2, 1),
              elem("element", 4, 1, 0)};
  m.row_groups.resize(1);
  m.row_groups[0].columns.resize(2);
  auto l = ParquetChunkLayouts(m, 0, "f.parquet");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0].max_def, 1);
  EXPECT_EQ((*l)[0].max_rep, 0);
  EXPECT_EQ((*l)[1].max_def, 3);
  EXPECT_EQ((*l)[1].max_rep, 1);
  m.row_groups[0].columns.resize(3);
  auto bad = ParquetChunkLayouts(m, 0, "f.parquet");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("f.parquet: row group 0 has 3 column chunks for 2 leaf columns"), std::string::npos);
}

}  // namespace
}  // namespace feedrate
