// Writes DLIO-layout indexed_binary files: samples of d1*d2 bytes back to back, plus <file>.off.idx and
// <file>.sz.idx (little-endian int64 offset and size of every sample), as DLIO's generator and reader use them.
#pragma once

#include <cstdint>
#include <string>

#include "loader/io/aligned_buffer.h"
#include "datagen/temp_file.h"
#include "loader/status.h"

namespace feedrate {

using IndexedBinarySpec = DlioFileShape;

uint64_t IndexedBinaryFileSize(const IndexedBinarySpec& s);
// Data file and both index files, each through a temporary name renamed when complete.
Status WriteIndexedBinary(const std::string& path, const IndexedBinarySpec& s, const ContentSpec& content, AlignedBuffer* scratch);

}  // namespace feedrate
