// Writes DLIO-layout HDF5 files: dataset `records` uint8 (samples, d1, d2) and `labels` int64 zeros (samples), as
// DLIO v2.0's generator does, with objects aligned to 4 KiB so O_DIRECT and GPUDirect reads need no window.
#pragma once

#include <cstdint>
#include <string>

#include "loader/io/aligned_buffer.h"
#include "datagen/temp_file.h"
#include "loader/status.h"

namespace feedrate {

using Hdf5FileSpec = DlioFileShape;

// Bytes of data the file holds (its metadata adds a few KiB on top).
uint64_t DlioHdf5DataBytes(const Hdf5FileSpec& spec);

// Writes `path` through a temporary name (renamed when complete), with pseudo-random bytes from `content_seed`.
Status WriteDlioHdf5(const std::string& path, const Hdf5FileSpec& spec, uint64_t content_seed, AlignedBuffer* scratch);

}  // namespace feedrate
