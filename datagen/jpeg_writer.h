// Writes DLIO-style JPEG samples: PIL.Image.fromarray(randint(255, (d1, d2), uint8)).save(format='JPEG'), i.e. an
// 8-bit grayscale d1 x d2 image of random noise, baseline JPEG at quality 75 (PIL's default), through libjpeg-turbo.
#pragma once

#include <cstdint>
#include <string>

#include "loader/io/aligned_buffer.h"
#include "loader/status.h"

namespace feedrate {

// Height d1, width d2 (JPEG's limit: 65535 each). Written through a temporary name, renamed when complete.
Status WriteJpeg(const std::string& path, uint64_t d1, uint64_t d2, uint64_t content_seed, AlignedBuffer* scratch);
// True when `path` is a JPEG whose frame header says d1 x d2 (for --skip-existing).
bool JpegHasSize(const std::string& path, uint64_t d1, uint64_t d2);

}  // namespace feedrate
