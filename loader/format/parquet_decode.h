// Parquet column chunks in memory: their page headers walked and checked, and (feedrate.decode) every page
// decompressed and its levels and values decoded into a column buffer, as pyarrow's read_row_group does.
// Used on the I/O threads for row-group reads (docs/formats.md, Parquet) and by `inspect --decode`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/format/parquet.h"
#include "loader/status.h"

namespace feedrate {

// What decoding one leaf column's chunk needs, besides its bytes.
struct PqChunkLayout {
  uint64_t offset = 0;  // of the chunk's first byte (its dictionary page when it has one), in the file
  uint64_t size = 0;    // total_compressed_size
  int32_t codec = 0, type = 0, type_length = 0;
  int64_t num_values = 0;
  int16_t max_def = 0, max_rep = 0;  // the leaf's maximum definition and repetition levels
  bool is_unsigned = false;          // UINT_* converted type or unsigned INT logical type (for sums only)
  bool is_float16 = false;           // FIXED_LEN_BYTE_ARRAY(2) with the FLOAT16 logical type (for sums only)
};

// One row group's read: the span the training read covers and the selected chunks inside it.
struct PqGroupLayout {
  uint64_t span_offset = 0, span_length = 0;
  std::vector<PqChunkLayout> chunks;
};

// Every leaf column's layout in row group `g` (leaf order), with levels from the schema.
Result<std::vector<PqChunkLayout>> ParquetChunkLayouts(const PqFileMetaData& m, size_t g, const std::string& name);

struct PqChunkStats {
  uint64_t pages = 0, values = 0, nulls = 0;  // values: level entries (a null or an empty list counts one)
  uint64_t decoded_bytes = 0;                 // column-buffer bytes written (decode only)
  double sum = 0;                             // of the non-null numeric values (decode with sums only)
  bool has_sum = false;
};

// Per I/O thread: its buffers grow to the largest page and column once, then are reused (no per-sample heap
// allocation after the first row groups). Not thread-safe; one per thread.
class ParquetChunkDecoder {
 public:
  enum class Mode { kHeaders, kDecode, kDecodeWithSums };
  // Walks the chunk at data[0..c.size): every page header parses, the pages tile the chunk and the data pages'
  // values add up to c.num_values. kDecode also decompresses each page (none/snappy/gzip/zstd/lz4) and decodes
  // its levels (RLE/bit-packed hybrid) and values (PLAIN; dictionary pages with RLE_DICTIONARY indices) into
  // the column buffer. Errors say which page (offset from the chunk's start) and why; the caller adds the file.
  Status Walk(const PqChunkLayout& c, const uint8_t* data, Mode mode, PqChunkStats* stats);

 private:
  Status DecodePage(const PqChunkLayout& c, const PqPageHeader& h, const uint8_t* body, bool sums, PqChunkStats* st);
  Status DecodeDictionary(const PqChunkLayout& c, const PqPageHeader& h, const uint8_t* body);
  Status DecodeValues(const PqChunkLayout& c, int32_t encoding, const uint8_t* p, size_t n, uint64_t present,
                      bool sums, PqChunkStats* st);
  Result<const uint8_t*> Uncompressed(const PqChunkLayout& c, const uint8_t* p, size_t size, size_t out_size,
                                      std::string* buf);

  std::string page_;        // a decompressed page
  std::string dict_raw_;    // the dictionary page's decompressed bytes
  std::string dict_;        // the dictionary's values, fixed width (byte arrays: offsets into dict_raw_)
  uint64_t dict_count_ = 0;
  std::vector<uint16_t> levels_;
  std::vector<uint32_t> indices_;
  std::string column_;      // the decoded values of the current page
};

}  // namespace feedrate
