// CRC-32C (Castagnoli, TFRecord) and CRC-32 (IEEE, zip/PNG) through ISA-L's hardware-accelerated routines, and
// TFRecord's CRC mask.
#pragma once

#include <cstddef>
#include <cstdint>

namespace feedrate {

// CRC-32C of `n` bytes (init and final xor 0xFFFFFFFF): Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(const void* data, size_t n);
// CRC-32C of the concatenation of the bytes already covered by `crc` and `n` more bytes.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

// CRC-32 as zip, gzip, PNG and zlib's crc32() compute it (reflected IEEE polynomial): Crc32Zip("123456789") ==
// 0xCBF43926. Several times faster than zlib's table-driven crc32 (ISA-L folds with PCLMULQDQ).
uint32_t Crc32ZipExtend(uint32_t crc, const void* data, size_t n);
inline uint32_t Crc32Zip(const void* data, size_t n) { return Crc32ZipExtend(0, data, n); }

// TFRecord (and leveldb) store CRCs masked, so that a CRC of data that embeds CRCs stays well distributed.
constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta; }
inline uint32_t UnmaskCrc(uint32_t masked) {
  uint32_t r = masked - kCrcMaskDelta;
  return (r >> 17) | (r << 15);
}

}  // namespace feedrate
