// Parquet's page compression codecs over Debian's libraries: snappy, gzip (zlib), zstd, LZ4_RAW (liblz4), and the
// legacy LZ4 codec (Hadoop framing, or raw LZ4 as older writers wrote it). Used by datagen to write pages and by
// the decode path to read them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loader/status.h"

namespace feedrate {

// The Parquet codec id (PqCodec) for a DLIO dataset.compression value: none, snappy, gzip, zstd, lz4 (written as
// LZ4_RAW, as Arrow writes "lz4"). -1 for a name Parquet has no codec for.
int32_t ParquetCodecFor(const std::string& compression);

// Appends the compressed form of `in` to `*out` (cleared first). kUncompressed copies.
Status ParquetCompress(int32_t codec, std::string_view in, std::string* out);
// Decompresses `in` into exactly `out_size` bytes at `out`; a size mismatch or a corrupt stream is Corruption.
Status ParquetDecompress(int32_t codec, std::string_view in, char* out, size_t out_size);

}  // namespace feedrate
