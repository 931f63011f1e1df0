// A read-only HDF5 virtual file driver over a ByteSource, so libhdf5 reads a file's metadata (superblock, object
// headers, B-trees) from anything the format readers can read: an S3 object through ranged GETs.
#pragma once

#include <hdf5.h>

#include <string>

#include "loader/io/byte_source.h"

namespace feedrate {

// A file access property list whose driver reads `src` (which must outlive every file opened with it); H5Fopen's
// name is then only used in messages. An invalid hid (< 0) when the driver cannot be registered.
hid_t MakeSourceFapl(const ByteSource& src);
// The last read error of the calling thread's driver reads ("" if none): libhdf5 only says "read failed".
std::string LastSourceDriverError();

}  // namespace feedrate
