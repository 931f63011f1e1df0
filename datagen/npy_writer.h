// Writes DLIO-layout .npy files: np.save of a uint8 array shaped (d1, d2, samples), as DLIO's npy generator does.
#pragma once

#include <cstdint>
#include <string>

#include "loader/io/aligned_buffer.h"
#include "datagen/temp_file.h"
#include "loader/status.h"

namespace feedrate {

using NpyFileSpec = DlioFileShape;

// Exact size of the file WriteDlioNpy produces (header padded to 64 bytes, as numpy 1.24 writes it).
uint64_t DlioNpyFileSize(const NpyFileSpec& spec);

// Writes `path` through a temporary name (renamed when complete), with `content` (random bytes, or the verifiable pattern) as payload.
Status WriteDlioNpy(const std::string& path, const NpyFileSpec& spec, const ContentSpec& content, AlignedBuffer* scratch);

}  // namespace feedrate
