// Fuzzes the Parquet readers: the whole-file path (magic, footer length, Thrift FileMetaData, the cross-checks,
// training spans and row extents), the page-header parser, and the page decoder (decompression, levels, values)
// over every chunk of a file whose footer passes and over the input taken as one chunk of a layout its first
// bytes choose. A footer that passes the checks must give spans and extents inside the file.
#include "fuzz_util.h"
#include "loader/format/parquet.h"
#include "loader/format/parquet_decode.h"
#include "loader/format/sample_index.h"

namespace {

using namespace feedrate;

// The input as one column chunk: byte 0 picks the type, byte 1 the codec, byte 2 the levels, the rest is the chunk.
void DecodeAsOneChunk(const uint8_t* data, size_t size) {
  if (size < 4) return;
  static const int32_t kTypes[] = {0, 1, 2, 3, 4, 5, 6, 7};
  PqChunkLayout c;
  c.type = kTypes[data[0] % 8];
  c.type_length = c.type == 7 ? 1 + data[0] / 8 % 16 : 0;
  c.is_float16 = c.type == 7 && c.type_length == 2;
  c.codec = data[1] % 8;
  c.max_def = static_cast<int16_t>(data[2] % 4);
  c.max_rep = static_cast<int16_t>(data[2] / 4 % 3);
  c.num_values = data[3];
  c.size = size - 4;
  ParquetChunkDecoder decoder;
  PqChunkStats st;
  (void)decoder.Walk(c, data + 4, ParquetChunkDecoder::Mode::kDecodeWithSums, &st);
}

// Every chunk of every row group of a file whose footer passed, decoded as inspect --decode does.
void DecodeEveryChunk(const PqFileMetaData& m, const uint8_t* data, size_t size) {
  ParquetChunkDecoder decoder;
  for (size_t g = 0; g < m.row_groups.size(); ++g) {
    auto layouts = ParquetChunkLayouts(m, g, "fuzz.parquet");
    if (!layouts.ok()) continue;
    for (const auto& c : *layouts) {
      if (c.offset > size || c.size > size - c.offset) __builtin_trap();  // the footer checks bound every chunk
      PqChunkStats st;
      (void)decoder.Walk(c, data + c.offset, ParquetChunkDecoder::Mode::kDecodeWithSums, &st);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ParsePageHeader(data, size);
  DecodeAsOneChunk(data, size);
  fuzz::MemFile f(data, size);
  FdByteSource src(f.fd(), f.size(), "fuzz.parquet");
  auto m = ReadParquetFooter(src);
  if (m.ok()) {
    (void)m->TopFields();
    auto spans = ParquetReadSpans(*m, {}, "fuzz.parquet");
    if (spans.ok()) {
      for (const auto& s : *spans) {
        if (s.offset + s.length > size) __builtin_trap();
      }
    }
    DecodeEveryChunk(*m, data, size);
  }
  return 0;
}
