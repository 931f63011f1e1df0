// CRC-32C via ISA-L (crc32_iscsi works on the inverted register and takes an int length, hence the wrapping).
#include "loader/format/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace feedrate {

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  uint32_t reg = ~crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));  // ISA-L's signature is not const-correct
  while (n > 0) {
    int chunk = n > static_cast<size_t>(INT_MAX) ? (1 << 30) : static_cast<int>(n);
    reg = crc32_iscsi(p, chunk, reg);
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
  return ~reg;
}

uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

// crc32_gzip_refl takes and returns the finished CRC (it inverts internally), like zlib's crc32().
uint32_t Crc32ZipExtend(uint32_t crc, const void* data, size_t n) {
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), n);
}

}  // namespace feedrate
