// The Parquet writer's encodings as Arrow writes them: the RLE/bit-packed hybrid's bytes (the format's own
// example, Arrow's run rules), and column chunks with a dictionary page, RLE_DICTIONARY pages and the fallback
// to PLAIN at 1 MiB of dictionary, read back page header by page header.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "datagen/parquet_encoding.h"
#include "datagen/parquet_writer.h"
#include "loader/format/parquet.h"
#include "loader/io/unique_fd.h"
#include "test_util.h"

namespace feedrate {
namespace {

std::string Hex(const std::string& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

// The hybrid as the format specifies it (parquet-format Encodings.md), independent of the encoder.
std::vector<uint64_t> DecodeHybrid(const std::string& b, int width) {
  std::vector<uint64_t> out;
  size_t i = 0;
  while (i < b.size()) {
    uint64_t h = 0;
    for (int shift = 0;; shift += 7) {
      const auto c = static_cast<uint8_t>(b.at(i++));
      h |= uint64_t{c & 0x7fu} << shift;
      if ((c & 0x80) == 0) break;
    }
    if ((h & 1) != 0) {
      const size_t values = (h >> 1) * 8, first_bit = i * 8;
      for (size_t k = 0; k < values; ++k) {
        uint64_t v = 0;
        for (int bit = 0; bit < width; ++bit) {
          const size_t at = first_bit + k * static_cast<size_t>(width) + static_cast<size_t>(bit);
          v |= uint64_t{(static_cast<uint8_t>(b.at(at / 8)) >> (at % 8)) & 1u} << bit;
        }
        out.push_back(v);
      }
      i += (h >> 1) * static_cast<size_t>(width);
    } else {
      uint64_t v = 0;
      for (int k = 0; k < (width + 7) / 8; ++k) v |= uint64_t{static_cast<uint8_t>(b.at(i++))} << (8 * k);
      out.insert(out.end(), h >> 1, v);
    }
  }
  return out;
}

std::string Encode(int width, const std::vector<uint64_t>& values) {
  RleHybridEncoder e(width);
  for (uint64_t v : values) e.Put(v);
  return e.Finish();
}

TEST(RleHybrid, TheFormatsExampleAndArrowsRunRules) {
  // parquet-format's bit-packing example: 0..7 at width 3 is 10001000 11000110 11111010, one group.
  EXPECT_EQ(Hex(Encode(3, {0, 1, 2, 3, 4, 5, 6, 7})), "0388c6fa");
  // Twenty equal values: one repeated run (20 << 1, the value in one byte).
  EXPECT_EQ(Hex(Encode(3, std::vector<uint64_t>(20, 5))), "2805");
  // Three values, then eleven equal ones: the run starts inside a group, so Arrow keeps all of them literal, the
  // second group padded with zeros.
  std::vector<uint64_t> mixed{1, 2, 3};
  mixed.insert(mixed.end(), 11, 4);
  const std::string m = Encode(3, mixed);
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(static_cast<uint8_t>(m[0]), 5);  // two groups, literal
  auto back = DecodeHybrid(m, 3);
  ASSERT_EQ(back.size(), 16u);
  EXPECT_EQ(std::vector<uint64_t>(back.begin(), back.begin() + 14), mixed);
  EXPECT_EQ(back[14] + back[15], 0u);
  // Literal runs hold at most 63 groups: 1,000 values that never repeat 8 times are runs of 504 and 496.
  std::vector<uint64_t> cycle;
  for (uint64_t i = 0; i < 1000; ++i) cycle.push_back(i % 7);
  const std::string c = Encode(3, cycle);
  ASSERT_EQ(c.size(), 1 + 63 * 3 + 1 + 62 * 3u);
  EXPECT_EQ(static_cast<uint8_t>(c[0]), 127);
  EXPECT_EQ(static_cast<uint8_t>(c[190]), 125);
  EXPECT_EQ(DecodeHybrid(c, 3), cycle);
}

TEST(RleHybrid, RandomRunsRoundTripAndPutRunEqualsPuts) {
  std::mt19937_64 rng(11);
  for (int width : {1, 2, 5, 8, 13, 18, 32}) {
    for (int trial = 0; trial < 20; ++trial) {
      RleHybridEncoder one(width), runs(width);
      std::vector<uint64_t> values;
      const int pieces = 1 + static_cast<int>(rng() % 40);
      for (int k = 0; k < pieces; ++k) {
        const uint64_t v = rng() & ((uint64_t{1} << width) - 1);
        const uint64_t n = rng() % 4 == 0 ? 1 + rng() % 3000 : 1 + rng() % 12;
        values.insert(values.end(), n, v);
        runs.PutRun(v, n);
        for (uint64_t i = 0; i < n; ++i) one.Put(v);
      }
      const std::string bytes = one.Finish();
      ASSERT_EQ(Hex(runs.Finish()), Hex(bytes)) << width << " " << trial;
      auto back = DecodeHybrid(bytes, width);
      ASSERT_GE(back.size(), values.size());
      ASSERT_LT(back.size(), values.size() + 8);  // only the last group's padding
      back.resize(values.size());
      EXPECT_EQ(back, values) << width << " " << trial;
      EXPECT_LE(bytes.size(), RleHybridEncoder::MaxBufferSize(width, values.size()));
    }
  }
}

TEST(RleHybrid, DictionaryNumbersValuesInFirstSeenOrder) {
  ValueDictionary d(4);
  const uint32_t a = 7, b = 9;
  EXPECT_EQ(d.IndexOf(reinterpret_cast<const char*>(&a)), 0u);
  EXPECT_EQ(d.IndexOf(reinterpret_cast<const char*>(&b)), 1u);
  EXPECT_EQ(d.IndexOf(reinterpret_cast<const char*>(&a)), 0u);
  for (uint32_t v = 100; v < 5000; ++v) d.IndexOf(reinterpret_cast<const char*>(&v));  // grows its table
  EXPECT_EQ(d.IndexOf(reinterpret_cast<const char*>(&b)), 1u);
  EXPECT_EQ(d.entries(), 4902u);
  EXPECT_EQ(d.encoded_bytes(), 4902u * 4);
  std::string plain;
  d.AppendPlain(&plain);
  ASSERT_EQ(plain.size(), 4902u * 4);
  EXPECT_EQ(plain.substr(0, 8), std::string("\x07\0\0\0\x09\0\0\0", 8));
  d.Clear(2);
  EXPECT_EQ(d.entries(), 0u);
  const uint16_t h = 3;
  EXPECT_EQ(d.IndexOf(reinterpret_cast<const char*>(&h)), 0u);
  EXPECT_EQ(DictionaryIndexWidth(0), 0);
  EXPECT_EQ(DictionaryIndexWidth(1), 1);
  EXPECT_EQ(DictionaryIndexWidth(2), 1);
  EXPECT_EQ(DictionaryIndexWidth(6144), 13);
  EXPECT_EQ(DictionaryIndexWidth(8193), 14);
}

TEST(RleHybrid, BatchIndicesEqualOneByOneAtEveryWidth) {
  std::mt19937_64 rng(11);
  for (size_t width : {1u, 2u, 4u, 8u, 3u}) {
    std::string values(3000 * width, '\0');
    for (size_t i = 0; i < 3000; ++i) {
      const uint64_t v = rng() % 700;  // repeats, so both new and known values
      std::memcpy(values.data() + i * width, &v, width);
    }
    ValueDictionary one(width), batch(width);
    std::vector<uint32_t> expected, got{42};
    for (size_t i = 0; i < 3000; ++i) expected.push_back(one.IndexOf(values.data() + i * width));
    batch.AppendIndices(values.data(), 1000, &got);
    batch.AppendIndices(values.data() + 1000 * width, 2000, &got);
    ASSERT_EQ(got.size(), 3001u) << width;
    EXPECT_EQ(got[0], 42u);  // appended, not replaced
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), got.begin() + 1)) << width;
    std::string a, b;
    one.AppendPlain(&a);
    batch.AppendPlain(&b);
    EXPECT_EQ(a, b) << width;
  }
}

// The page headers of one column chunk, in file order.
std::vector<PqPageHeader> Pages(const std::string& bytes, const PqColumnChunk& c) {
  std::vector<PqPageHeader> out;
  for (auto at = static_cast<size_t>(c.start()); at < static_cast<size_t>(c.end());) {
    auto h = ParsePageHeader(reinterpret_cast<const uint8_t*>(bytes.data()) + at, bytes.size() - at);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) break;
    out.push_back(*h);
    at += h->header_bytes + static_cast<size_t>(h->compressed_page_size);
  }
  return out;
}

Result<PqFileMetaData> FooterOf(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FdByteSource src(fd.get(), *FileSize(fd.get(), path), path);
  return ReadParquetFooter(src);
}

TEST(ParquetWriter, SmallChunksAreADictionaryPageAndOneIndexPageAsPyarrowWritesThem) {
  test::TempDir dir;
  ParquetFileSpec spec;
  spec.columns = {{"f", "float32", 1, true}, {"i", "int8", 1, true}, {"b", "bool", 1, true}, {"h", "float16", 1, true}};
  spec.rows = spec.row_group_size = 6144;  // dlrm_b200's row group
  const std::string path = dir / "d.parquet";
  ASSERT_TRUE(WriteDlioParquet(path, spec, 3).ok());
  auto m = FooterOf(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::string bytes = test::ReadFile(path);
  const auto& cols = m->row_groups.at(0).columns;
  // float32: ~6,144 distinct values (24-bit draws), 13-bit indices in runs of 504: 12 x (1 + 63 x 13) + 1 + 12 x 13.
  auto f = Pages(bytes, cols[0]);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(cols[0].dictionary_page_offset, cols[0].start());
  EXPECT_EQ(f[0].type, static_cast<int32_t>(PqPageType::kDictionaryPage));
  EXPECT_GT(f[0].num_values, 6100);
  EXPECT_EQ(f[0].uncompressed_page_size, f[0].num_values * 4);
  EXPECT_EQ(f[1].type, static_cast<int32_t>(PqPageType::kDataPage));
  EXPECT_EQ(f[1].encoding, kRleDictionary);
  EXPECT_EQ(f[1].num_values, 6144);
  const int32_t def_levels = 4 + 3, width_byte = 1;  // a 4-byte length, one repeated run of 1s
  EXPECT_EQ(f[1].uncompressed_page_size, def_levels + width_byte + 12 * (1 + 63 * 13) + 1 + 12 * 13);
  EXPECT_EQ(cols[0].encodings, (std::vector<int32_t>{kPlain, kRle, kRleDictionary}));
  // int8 (INT32 in the file): 256 entries, 8-bit indices, a quarter of the PLAIN bytes.
  auto i = Pages(bytes, cols[1]);
  ASSERT_EQ(i.size(), 2u);
  EXPECT_EQ(i[0].num_values, 256);
  EXPECT_EQ(i[1].uncompressed_page_size, def_levels + width_byte + 12 * (1 + 63 * 8) + 1 + 12 * 8);
  // BOOLEAN is never dictionary-encoded.
  auto b = Pages(bytes, cols[2]);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].encoding, kPlain);
  EXPECT_EQ(cols[2].dictionary_page_offset, 0);
  EXPECT_EQ(cols[2].encodings, (std::vector<int32_t>{kRle, kPlain}));
  EXPECT_EQ(b[0].uncompressed_page_size, def_levels + 6144 / 8);
  // float16: numpy's rounding of float32 draws gives ~3,000 distinct values in 6,144 (a 1/1024 grid would give
  // at most 1,024): 12-bit indices.
  auto h = Pages(bytes, cols[3]);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_GT(h[0].num_values, 2600);
  EXPECT_LT(h[0].num_values, 3400);
  EXPECT_EQ(h[1].uncompressed_page_size, def_levels + width_byte + 12 * (1 + 63 * 12) + 1 + 12 * 12);
  // The free-space estimate covers the file, not by much.
  EXPECT_GE(ParquetDataBytes(spec), bytes.size());
  EXPECT_LT(ParquetDataBytes(spec), bytes.size() + bytes.size() / 4 + 8192);
}

TEST(ParquetWriter, ADictionaryReachingOneMebibyteFallsBackToPlainPages) {
  test::TempDir dir;
  ParquetFileSpec spec;
  spec.columns = {{"v", "float32", 1000, true}};
  spec.rows = spec.row_group_size = 400;  // 400,000 values in one chunk
  const std::string path = dir / "f.parquet";
  ASSERT_TRUE(WriteDlioParquet(path, spec, 5).ok());
  auto m = FooterOf(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const auto& c = m->row_groups.at(0).columns.at(0);
  auto pages = Pages(test::ReadFile(path), c);
  ASSERT_GE(pages.size(), 3u);
  // The dictionary is checked after each batch of 1,024 values: it holds at least 1 MiB, at most a batch more.
  EXPECT_EQ(pages[0].type, static_cast<int32_t>(PqPageType::kDictionaryPage));
  EXPECT_GE(pages[0].uncompressed_page_size, 1 << 20);
  EXPECT_LT(pages[0].uncompressed_page_size, (1 << 20) + 4096);
  EXPECT_EQ(pages[1].encoding, kRleDictionary);
  EXPECT_EQ(pages[1].num_values % 1024, 0);
  EXPECT_GT(pages[1].num_values, pages[0].num_values);  // some draws repeat
  int64_t values = pages[1].num_values;
  for (size_t k = 2; k < pages.size(); ++k) {
    EXPECT_EQ(pages[k].encoding, kPlain) << k;
    if (k + 1 < pages.size()) {
      EXPECT_EQ(pages[k].num_values, 262144) << k;  // 1 MiB of PLAIN float32
    }
    values += pages[k].num_values;
  }
  EXPECT_EQ(values, 400000);
  EXPECT_EQ(c.data_page_offset, c.dictionary_page_offset + pages[0].header_bytes + pages[0].compressed_page_size);
}

}  // namespace
}  // namespace feedrate
