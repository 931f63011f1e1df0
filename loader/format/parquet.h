// Apache Parquet files: the footer (FileMetaData), page headers, and the byte spans a training read covers.
// Read side for inspect and the training indexer; the write side (footer and page header serialization) is
// shared with datagen/parquet_writer. Format: https://github.com/apache/parquet-format (parquet.thrift).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loader/io/byte_source.h"
#include "loader/status.h"

namespace feedrate {

// parquet.thrift enums (the values are the format's).
enum class PqType : int32_t { kBoolean = 0, kInt32 = 1, kInt64 = 2, kInt96 = 3, kFloat = 4, kDouble = 5, kByteArray = 6, kFixedLenByteArray = 7 };
enum class PqCodec : int32_t { kUncompressed = 0, kSnappy = 1, kGzip = 2, kLzo = 3, kBrotli = 4, kLz4 = 5, kZstd = 6, kLz4Raw = 7 };
enum class PqPageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };
enum PqEncoding : int32_t { kPlain = 0, kPlainDictionary = 2, kRle = 3, kBitPacked = 4, kDeltaBinaryPacked = 5, kRleDictionary = 8, kByteStreamSplit = 9 };

const char* PqTypeName(int32_t type);
const char* PqCodecName(int32_t codec);
const char* PqEncodingName(int32_t encoding);

struct PqSchemaElement {
  std::string name;
  int32_t type = -1;             // PqType; -1 for a group
  int32_t type_length = 0;       // FIXED_LEN_BYTE_ARRAY
  int32_t repetition = 0;        // 0 required, 1 optional, 2 repeated
  int32_t num_children = 0;
  int32_t converted_type = -1;   // -1: none (3 LIST, 15 INT_8, ...)
  int32_t logical_type = -1;     // the LogicalType union member's field id (15 FLOAT16, 10 INTEGER, 3 LIST), -1 none
  int8_t int_bit_width = 0;      // LogicalType INTEGER
  bool int_signed = true;
};

struct PqColumnChunk {
  std::string path;              // path_in_schema joined with '.' ("t5_encodings.list.element")
  int32_t type = 0;
  int32_t codec = 0;
  std::vector<int32_t> encodings;
  int64_t num_values = 0;
  int64_t total_uncompressed_size = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  int64_t dictionary_page_offset = 0;  // 0: none
  // Where the chunk's bytes start: its dictionary page if it has one, else its first data page.
  int64_t start() const { return dictionary_page_offset > 0 ? dictionary_page_offset : data_page_offset; }
  int64_t end() const { return start() + total_compressed_size; }
};

struct PqRowGroup {
  int64_t num_rows = 0;
  int64_t total_byte_size = 0;
  std::vector<PqColumnChunk> columns;
};

struct PqFileMetaData {
  int32_t version = 1;
  std::vector<PqSchemaElement> schema;  // depth-first, element 0 the root
  int64_t num_rows = 0;
  std::vector<PqRowGroup> row_groups;
  std::string created_by;
  uint64_t footer_length = 0;  // bytes of the Thrift FileMetaData (set by ReadParquetFooter)
  uint64_t file_size = 0;
  // Top-level fields: the root's children, each with the number of leaf columns below it, in order.
  struct TopField {
    std::string name;
    size_t first_leaf = 0, leaves = 0;
  };
  std::vector<TopField> TopFields() const;
};

struct PqPageHeader {
  int32_t type = 0;
  int32_t uncompressed_page_size = 0;
  int32_t compressed_page_size = 0;
  int32_t num_values = 0;     // data page (v1/v2) or dictionary page
  int32_t encoding = 0;
  int32_t def_level_encoding = kRle;
  int32_t rep_level_encoding = kRle;
  int32_t num_nulls = 0, num_rows = 0;                 // v2
  int32_t def_levels_bytes = 0, rep_levels_bytes = 0;  // v2
  bool v2_compressed = true;
  uint32_t header_bytes = 0;  // bytes the Thrift header took
};

// Reads and checks "PAR1" at both ends, the footer length, and the FileMetaData; cross-checks every column
// chunk against the file (offsets and sizes inside it, one chunk per leaf column, row counts adding up).
// Errors name the file and the cause; encrypted footers ("PARE") are refused.
Result<PqFileMetaData> ReadParquetFooter(const ByteSource& src);
// The same from the footer's bytes (the fuzz target's entry point): `file_size` bounds the chunk offsets.
Result<PqFileMetaData> ParseParquetFooter(const uint8_t* data, size_t size, uint64_t file_size, const std::string& name);
// Parses one page header at data[0..size).
Result<PqPageHeader> ParsePageHeader(const uint8_t* data, size_t size);

// Serializations (datagen): the Thrift FileMetaData and a page header.
std::string SerializeFileMetaData(const PqFileMetaData& m);
std::string SerializePageHeader(const PqPageHeader& h);

// What a training read of one row group covers: the span from the first to the last byte of the selected
// columns' chunks (MLPerf Storage v3.0's raw byte-range reader: docs/dlio-compatibility.md), and the
// compressed bytes of all columns (what DLIO reports as each sample's size).
struct PqSpan {
  uint64_t offset = 0, length = 0;
  uint64_t all_columns_compressed = 0;
};
// Which leaf columns `selected` (top-level field names; empty: every column) picks, in leaf order; a name the
// file lacks is an error naming it.
Result<std::vector<char>> ParquetSelectedLeaves(const PqFileMetaData& m, const std::vector<std::string>& selected,
                                                const std::string& name);
// `selected` holds top-level field names (empty: every column); a name the file lacks is an error naming it.
Result<std::vector<PqSpan>> ParquetReadSpans(const PqFileMetaData& m, const std::vector<std::string>& selected,
                                             const std::string& name);

}  // namespace feedrate
