// ZIP archive directory reading (for .npz): member names, methods, sizes and where each member's data starts.
// Follows the central directory plus zip64 extras, never the local header sizes (their content depends on
// the Python version that wrote the file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/io/byte_source.h"
#include "loader/status.h"

namespace feedrate {

struct ZipMember {
  std::string name;
  uint16_t method = 0;               // 0 = STORED, 8 = DEFLATED
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;          // absolute offset of the member's (compressed) bytes
};

inline constexpr uint16_t kZipStored = 0;
inline constexpr uint16_t kZipDeflated = 8;

// A zip's record signatures and little-endian fields (APPNOTE.TXT 4.3), for every reader of its layout.
inline constexpr uint32_t kZipLocalSig = 0x04034b50, kZipCentralSig = 0x02014b50, kZipEndSig = 0x06054b50;
inline constexpr uint32_t kZip32Max = 0xffffffffu;  // a 32-bit field whose value is in the zip64 extra
inline uint16_t ZipLe16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t ZipLe32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

// Reads the central directory of the archive open at `fd` (size `file_size`) and resolves every member's
// data offset from its local header. Errors name `path` and what is wrong (not a zip, truncated, ...).
Result<std::vector<ZipMember>> ReadZipDirectory(const ByteSource& src);
inline Result<std::vector<ZipMember>> ReadZipDirectory(int fd, uint64_t file_size, const std::string& path) {
  return ReadZipDirectory(FdByteSource(fd, file_size, path));
}

// Builds the byte layout numpy's np.savez writes (zip STORED, force_zip64 local headers, central directory
// with zip64 fields only when needed), for members whose sizes and CRCs are known.
struct ZipEntryPlan {
  std::string name;
  uint64_t size = 0;       // stored == uncompressed size
  uint32_t crc32 = 0;
  uint64_t local_header_offset = 0;
};
// Local file header (30 bytes + name + 20-byte zip64 extra).
std::string ZipLocalHeader(const ZipEntryPlan& e);
// Central directory + (zip64 EOCD + locator when needed) + EOCD, for entries written from `cd_offset` on.
std::string ZipCentralDirectory(const std::vector<ZipEntryPlan>& entries, uint64_t cd_offset);
inline size_t ZipLocalHeaderSize(const std::string& name) { return 30 + name.size() + 20; }

}  // namespace feedrate
