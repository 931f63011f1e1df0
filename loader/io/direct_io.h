// O_DIRECT support shared by the engines: the alignment a file needs (statx STATX_DIOALIGN) and the aligned
// window that covers an unaligned sample extent.
#pragma once

#include <cstdint>
#include <string>

#include "loader/status.h"

namespace feedrate {

inline uint64_t AlignDown(uint64_t v, uint64_t a) { return v / a * a; }
inline uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The byte range an O_DIRECT read of [offset, offset + length) must cover, aligned to `align` on both ends.
struct DirectWindow {
  uint64_t begin = 0;
  uint64_t end = 0;
};
inline DirectWindow WindowFor(uint64_t offset, uint64_t length, uint64_t align) {
  return {AlignDown(offset, align), AlignUp(offset + length, align)};
}

// Offset/memory alignment O_DIRECT needs for `path`: statx(STATX_DIOALIGN) where the kernel reports it, else 4096.
// Fails (naming the path) if the file system refuses O_DIRECT opens.
Result<uint64_t> DirectIoAlignment(const std::string& path);

}  // namespace feedrate
