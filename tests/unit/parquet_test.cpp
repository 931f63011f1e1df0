// Parquet: the Thrift compact codec, footer parsing and its cross-checks, training spans, and the writer's files
// read back through the footer and page headers (independent readers check them in tests/integration).
#include <gtest/gtest.h>

#include <cstring>

#include "datagen/parquet_writer.h"
#include "loader/format/inspect.h"
#include "loader/format/parquet.h"
#include "loader/format/parquet_codec.h"
#include "loader/format/sample_index.h"
#include "loader/format/thrift_compact.h"
#include "test_util.h"

namespace feedrate {
namespace {

TEST(ThriftCompact, RoundTripsFieldsListsAndLongIdJumps) {
  CompactWriter w;
  w.BeginStruct();
  w.FieldI32(1, -7);
  w.FieldI64(2, int64_t{1} << 40);
  w.FieldBinary(3, "name");
  w.FieldList(4, TType::kI32, 20);
  for (int i = 0; i < 20; ++i) w.ElemI32(i * 1000);
  w.FieldBool(30, true);  // a jump over 15: the long field header form
  w.FieldI8(31, -3);
  w.EndStruct();
  const std::string b = w.Take();
  CompactReader r(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  r.BeginStruct();
  int16_t id;
  TType t, et;
  ASSERT_TRUE(r.NextField(&id, &t));
  EXPECT_EQ(id, 1);
  EXPECT_EQ(r.ReadI32(), -7);
  ASSERT_TRUE(r.NextField(&id, &t));
  EXPECT_EQ(r.ReadI64(), int64_t{1} << 40);
  ASSERT_TRUE(r.NextField(&id, &t));
  EXPECT_EQ(r.ReadBinary(), "name");
  ASSERT_TRUE(r.NextField(&id, &t));
  ASSERT_EQ(r.ReadListHeader(&et), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(r.ReadI32(), i * 1000);
  ASSERT_TRUE(r.NextField(&id, &t));
  EXPECT_EQ(id, 30);
  EXPECT_TRUE(r.ReadBool(t));
  ASSERT_TRUE(r.NextField(&id, &t));
  EXPECT_EQ(r.ReadI8(), -3);
  EXPECT_FALSE(r.NextField(&id, &t));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.consumed(), b.size());
}

TEST(ThriftCompact, TruncatedAndOversizedInputFailWithoutReadingPastTheEnd) {
  CompactWriter w;
  w.BeginStruct();
  w.FieldBinary(1, std::string(100, 'x'));
  w.EndStruct();
  const std::string b = w.Take();
  for (size_t cut = 0; cut < b.size(); ++cut) {
    CompactReader r(reinterpret_cast<const uint8_t*>(b.data()), cut);
    r.Skip(TType::kStruct);
    EXPECT_FALSE(r.ok()) << cut;
  }
  const uint8_t huge_list[] = {0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f};  // 2^32-1 i32 elements in 6 bytes
  CompactReader r(huge_list, sizeof huge_list);
  TType et;
  EXPECT_EQ(r.ReadListHeader(&et), 0u);
  EXPECT_FALSE(r.ok());
}

WorkloadConfig Dlrmish() {
  WorkloadConfig c;
  c.parquet_columns = {{"a", "float32", 1, false}, {"b", "int8", 1, true}, {"c", "float16", 4, true}, {"d", "float64", 1, false}};
  return c;
}

std::string WriteFile(const test::TempDir& dir, const ParquetFileSpec& spec, const std::string& name = "f.parquet") {
  const std::string path = dir / name;
  EXPECT_TRUE(WriteDlioParquet(path, spec, 7).ok());
  return path;
}

Result<PqFileMetaData> Footer(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FdByteSource src(fd.get(), *FileSize(fd.get(), path), path);
  return ReadParquetFooter(src);
}

TEST(Parquet, WrittenFileHasTheSchemaRowGroupsAndPagesItWasAskedFor) {
  test::TempDir dir;
  ParquetFileSpec spec = DlioParquetSpec(Dlrmish(), 1, 1);
  spec.rows = 1000;
  spec.row_group_size = 300;
  const std::string path = WriteFile(dir, spec);
  auto report = InspectParquetFile(path);  // walks every page header
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const PqFileMetaData& m = report->meta;
  EXPECT_EQ(m.num_rows, 1000);
  ASSERT_EQ(m.row_groups.size(), 4u);
  EXPECT_EQ(m.row_groups[3].num_rows, 100);
  const auto fields = m.TopFields();
  ASSERT_EQ(fields.size(), 4u);
  EXPECT_EQ(fields[2].name, "c");
  EXPECT_EQ(m.row_groups[0].columns[2].path, "c.list.element");
  EXPECT_EQ(m.row_groups[0].columns[2].type, static_cast<int32_t>(PqType::kFixedLenByteArray));
  EXPECT_EQ(m.row_groups[0].columns[2].num_values, 1200);
  EXPECT_EQ(m.row_groups[0].columns[1].type, static_cast<int32_t>(PqType::kInt32));  // int8 is INT32 + INT(8)
  // Chunks follow each other: row group by row group, column by column.
  EXPECT_EQ(m.row_groups[0].columns[1].start(), m.row_groups[0].columns[0].end());
  EXPECT_EQ(m.row_groups[1].columns[0].start(), m.row_groups[0].columns[3].end());
  EXPECT_TRUE(ParquetFileMatches(path, spec));
  spec.rows = 999;
  EXPECT_FALSE(ParquetFileMatches(path, spec));
}

TEST(Parquet, LargeColumnsSplitIntoPagesOfAboutOneMebibyte) {
  test::TempDir dir;
  ParquetFileSpec spec;
  spec.columns = {{"v", "float32", 100000, true}};  // 400 kB a row: rows span pages
  spec.rows = 8;
  const std::string path = WriteFile(dir, spec);
  auto report = InspectParquetFile(path);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // 800,000 values: a dictionary page of 1 MiB and one page of its indices (~264,000 values), then PLAIN pages of
  // 262,144 values (pyarrow: the first multiple of 1024 values reaching 1 MiB).
  EXPECT_EQ(report->pages[0][0].dictionary_pages, 1u);
  EXPECT_EQ(report->pages[0][0].data_pages, 4u);
  EXPECT_EQ(report->pages[0][0].values, 800000u);
}

TEST(Parquet, EveryCodecRoundTrips) {
  std::string in(100000, '\0');
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<char>((i * 7) % 13);
  for (const char* name : {"none", "snappy", "gzip", "zstd", "lz4"}) {
    std::string packed, out(in.size(), '\0');
    ASSERT_TRUE(ParquetCompress(ParquetCodecFor(name), in, &packed).ok()) << name;
    ASSERT_TRUE(ParquetDecompress(ParquetCodecFor(name), packed, out.data(), out.size()).ok()) << name;
    EXPECT_EQ(out, in) << name;
    if (std::string(name) != "none") {
      EXPECT_LT(packed.size(), in.size() / 4) << name;
      packed[packed.size() / 2] ^= 0x5a;
      EXPECT_FALSE(ParquetDecompress(ParquetCodecFor(name), packed, out.data(), out.size()).ok() && out == in) << name;
    }
  }
  EXPECT_EQ(ParquetCodecFor("bz2"), -1);
}

// The row-group index: rows found arithmetically when groups are alike, by search when they are not; whole-group
// reads put the span on each group's first row; DLRM's 4,718,592-row files cost 768 entries, not a row's each.
TEST(Parquet, RowGroupTableFindsEveryRowWithoutListingRows) {
  SampleTable table(3, 10);
  table.SetRowGroups(0, {{0, 4, 1000, 400}, {4, 4, 2000, 40}, {8, 3, 3000, 30}}, false);  // alike but the last
  table.SetRowGroups(1, {{0, 2, 100, 20}, {2, 7, 200, 7}, {9, 5, 300, 50}}, true);      // uneven: searched
  table.SetRowGroups(2, {{0, 3, 100, 10}, {3, 7, 200, 3}}, false);  // fewer bytes than rows: some rows read nothing
  EXPECT_EQ(table.At(5).offset, 2010u);
  EXPECT_EQ(table.At(5).length, 10u);
  EXPECT_EQ(table.At(9).offset, 3010u);
  EXPECT_EQ(table.At(9).file, 0u);
  const SampleExtent first = table.At(12);  // file 1, row 2: the first row of its second group
  EXPECT_EQ(first.file, 1u);
  EXPECT_EQ(first.offset, 200u);
  EXPECT_EQ(first.length, 7u);
  EXPECT_EQ(table.At(13).length, 0u);
  EXPECT_EQ(table.At(19).offset, 300u);  // row 9 of file 1
  EXPECT_EQ(table.At(19).length, 50u);
  uint64_t sum = 0;
  for (uint64_t k = 20; k < 30; ++k) sum += table.At(k).length;
  EXPECT_EQ(sum, 10u + 3u);  // file 2's rows tile both spans (row 9 is the last sample)
  EXPECT_EQ(table.FileDataBytes(0), 400u + 40u + 20u);  // rows 8 and 9 of the 3-row group: 2/3 of 30
  EXPECT_EQ(table.FileDataBytes(1), 20u + 7u + 50u);     // whole groups: every group a sample starts
  EXPECT_EQ(table.MaxLength(), 100u);                    // file 0's 400 bytes over 4 rows; file 1's 50 whole

  const uint64_t rows = 4718592, group = 6144;
  std::vector<PqRowGroupSpan> dlrm;
  for (uint64_t r = 0; r < rows; r += group) dlrm.push_back({r, group, 4 + r * 966, group * 966});
  SampleTable big(2, rows);
  big.SetRowGroups(1, dlrm, true);
  EXPECT_EQ(dlrm.size(), 768u);
  const SampleExtent last_group = big.At(rows + rows - group);
  EXPECT_EQ(last_group.offset, 4 + (rows - group) * 966);
  EXPECT_EQ(last_group.length, group * 966);
  EXPECT_EQ(big.At(rows + rows - 1).length, 0u);
}

TEST(Parquet, SpansCoverTheSelectedColumnsAndRowsTileThem) {
  test::TempDir dir;
  ParquetFileSpec spec = DlioParquetSpec(Dlrmish(), 1, 1);
  spec.rows = 600;
  spec.row_group_size = 256;
  const std::string path = WriteFile(dir, spec);
  auto m = Footer(path);
  ASSERT_TRUE(m.ok());
  auto spans = ParquetReadSpans(*m, {"b", "c"}, path);
  ASSERT_TRUE(spans.ok());
  ASSERT_EQ(spans->size(), 3u);
  const PqRowGroup& g0 = m->row_groups[0];
  EXPECT_EQ((*spans)[0].offset, static_cast<uint64_t>(g0.columns[1].start()));
  EXPECT_EQ((*spans)[0].length, static_cast<uint64_t>(g0.columns[2].end() - g0.columns[1].start()));
  uint64_t all = 0;
  for (const auto& c : g0.columns) all += static_cast<uint64_t>(c.total_compressed_size);
  EXPECT_EQ((*spans)[0].all_columns_compressed, all);
  auto none = ParquetReadSpans(*m, {"zz"}, path);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no column 'zz'"), std::string::npos);

  IndexOptions o;
  o.format = DataFormat::kParquet;
  o.samples_per_file = 600;
  o.parquet_columns = {"b", "c"};
  ListedExtents listed;
  auto fs = IndexTrainingFile(path, o, &listed);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  ASSERT_EQ(listed.row_groups.size(), 3u);  // per row group, not per row
  EXPECT_TRUE(listed.samples.empty());
  SampleTable table(1, 600);
  table.SetRowGroups(0, listed.row_groups, fs->whole_groups);
  uint64_t total = 0, expected = 0;
  SampleExtent prev{};
  for (uint64_t k = 0; k < 600; ++k) {
    const SampleExtent e = table.At(k);
    total += e.length;
    if (k % 256 != 0) {
      EXPECT_EQ(e.offset, prev.offset + prev.length) << k;
    } else {
      EXPECT_EQ(e.offset, (*spans)[k / 256].offset) << k;
    }
    prev = e;
  }
  for (const auto& s : *spans) expected += s.length;
  EXPECT_EQ(total, expected);  // each row group's span is read exactly once per pass
  EXPECT_EQ(table.FileDataBytes(0), expected);
  o.samples_per_file = 601;
  auto short_file = IndexTrainingFile(path, o, &listed);
  ASSERT_FALSE(short_file.ok());
  EXPECT_NE(short_file.status().message().find("fewer than dataset.num_samples_per_file"), std::string::npos);
}

TEST(Parquet, DamagedFilesAreRefusedNamingTheFileAndTheCause) {
  test::TempDir dir;
  ParquetFileSpec spec = DlioParquetSpec(Dlrmish(), 1, 1);
  spec.rows = 50;
  const std::string good = test::ReadFile(WriteFile(dir, spec));
  auto expect_error = [&](const std::string& bytes, const std::string& cause) {
    const std::string path = dir / "bad.parquet";
    test::WriteFile(path, bytes);
    auto m = Footer(path);
    ASSERT_FALSE(m.ok()) << cause;
    EXPECT_NE(m.status().message().find(path), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find(cause), std::string::npos) << m.status().message();
  };
  expect_error(good.substr(0, good.size() - 100), "no PAR1 magic");
  std::string magic = good;
  magic[0] = 'Q';
  expect_error(magic, "not a Parquet file");
  std::string len = good;
  len[len.size() - 6] = 0x7f;  // footer length far beyond the file
  expect_error(len, "footer length");
  std::string footer = good;
  uint32_t flen;
  std::memcpy(&flen, footer.data() + footer.size() - 8, 4);
  for (size_t i = footer.size() - 8 - flen; i < footer.size() - 8; ++i) footer[i] = static_cast<char>(0xff);
  expect_error(footer, "Parquet footer");
  expect_error("PAR1", "too short");
}

// Offsets and sizes near INT64_MAX (their sum would overflow) are refused as lying outside the file.
TEST(Parquet, ChunkOffsetsThatWouldOverflowAreRefused) {
  PqFileMetaData m;
  m.num_rows = 1;
  m.schema = {PqSchemaElement{}, PqSchemaElement{}};
  m.schema[0].name = "schema";
  m.schema[0].num_children = 1;
  m.schema[1].name = "a";
  m.schema[1].type = static_cast<int32_t>(PqType::kInt32);
  PqColumnChunk c;
  c.path = "a";
  c.data_page_offset = INT64_MAX - 10;
  c.total_compressed_size = INT64_MAX - 10;
  c.num_values = 1;
  m.row_groups.push_back({1, 4, {c}});
  const std::string footer = SerializeFileMetaData(m);
  auto parsed = ParseParquetFooter(reinterpret_cast<const uint8_t*>(footer.data()), footer.size(), 4096, "x.parquet");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("lies outside the data"), std::string::npos) << parsed.status().message();
  // A file too short to hold its own footer: nothing can lie inside it.
  c.data_page_offset = 4;
  c.total_compressed_size = 1;
  m.row_groups[0].columns[0] = c;
  const std::string small = SerializeFileMetaData(m);
  EXPECT_FALSE(ParseParquetFooter(reinterpret_cast<const uint8_t*>(small.data()), small.size(), 16, "x.parquet").ok());
}

TEST(Parquet, PageHeadersRoundTripAndGarbageIsRefused) {
  PqPageHeader h;
  h.type = static_cast<int32_t>(PqPageType::kDataPage);
  h.uncompressed_page_size = 1 << 20;
  h.compressed_page_size = 12345;
  h.num_values = 262144;
  const std::string b = SerializePageHeader(h);
  auto p = ParsePageHeader(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->compressed_page_size, 12345);
  EXPECT_EQ(p->num_values, 262144);
  EXPECT_EQ(p->header_bytes, b.size());
  const uint8_t junk[] = {0x15, 0x00, 0x15};  // type only, then a truncated field
  EXPECT_FALSE(ParsePageHeader(junk, sizeof junk).ok());
}

}  // namespace
}  // namespace feedrate
