// Writes DLIO-style PNG samples: an 8-bit grayscale d1 x d2 image of random noise (what DLIO's generator saves
// through PIL), deflated with zlib; one sample per file.
#pragma once

#include <cstdint>
#include <string>

#include "loader/io/aligned_buffer.h"
#include "loader/status.h"

namespace feedrate {

// Height d1, width d2. Written through a temporary name, renamed when complete.
Status WritePng(const std::string& path, uint64_t d1, uint64_t d2, uint64_t content_seed, AlignedBuffer* scratch);
// True when `path` is a PNG whose header says d1 x d2 (for --skip-existing).
bool PngHasSize(const std::string& path, uint64_t d1, uint64_t d2);

}  // namespace feedrate
