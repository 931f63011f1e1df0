// Writes DLIO-style JPEG samples: PIL.Image.fromarray(randint(255, (d1, d2), uint8)).save(format='JPEG'), i.e. an
// 8-bit grayscale d1 x d2 image of random noise, baseline JPEG at quality 75 (PIL's default), through libjpeg-turbo.
#pragma once

#include <cstdint>
#include <string>

#include "datagen/temp_file.h"
#include "loader/io/aligned_buffer.h"
#include "loader/status.h"

namespace feedrate {

// Height d1, width d2 (JPEG's limit: 65535 each). Written through a temporary name, renamed when complete.
Status WriteJpeg(const std::string& path, uint64_t d1, uint64_t d2, uint64_t content_seed, AlignedBuffer* scratch);
// MLPerf Storage v3.0's DLIO (f16fe43, data_generator/jpeg_generator.py and png_generator.py, the fast path of every
// loader but DALI): d1 x d2 random bytes written as they are, no image encoding, under the .jpeg or .png name.
Status WriteRawImage(const std::string& path, uint64_t d1, uint64_t d2, const ContentSpec& content, AlignedBuffer* scratch);
// True when `path` is a JPEG whose frame header says d1 x d2 (for --skip-existing).
bool JpegHasSize(const std::string& path, uint64_t d1, uint64_t d2);

}  // namespace feedrate
