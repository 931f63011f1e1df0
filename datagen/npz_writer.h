// Writes DLIO-layout .npz files (x.npy uint8 (d1, d2, n) + y.npy int64 zeros) byte-compatible with np.savez.
#pragma once

#include <cstdint>
#include <string>

#include "loader/io/aligned_buffer.h"
#include "datagen/temp_file.h"
#include "loader/status.h"

namespace feedrate {

using NpzFileSpec = DlioFileShape;

// Exact size of the file WriteDlioNpz produces.
uint64_t DlioNpzFileSize(const NpzFileSpec& spec);

// Writes `path` through a hidden temporary name in the same directory, then renames it into place.
// Contents of x come from `content` (random bytes, or the verifiable pattern); `scratch` is the write buffer.
// On failure the temporary file is removed and the error names the path and the cause (e.g. disk full).
Status WriteDlioNpz(const std::string& path, const NpzFileSpec& spec, const ContentSpec& content, AlignedBuffer* scratch);

}  // namespace feedrate
