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
// Contents of x are fast pseudo-random bytes derived from `content_seed`; `scratch` is the write buffer.
// On failure the temporary file is removed and the error names the path and the cause (e.g. disk full).
Status WriteDlioNpz(const std::string& path, const NpzFileSpec& spec, uint64_t content_seed, AlignedBuffer* scratch);

}  // namespace feedrate
