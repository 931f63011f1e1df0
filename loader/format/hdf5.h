// HDF5 through Debian's libhdf5 (1.10, serial): dataset metadata, where their bytes lie in the file (so the I/O
// engines can read contiguous and unfiltered chunked data directly), and inspection with a sha256 of the data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loader/io/byte_source.h"
#include "loader/status.h"

namespace feedrate {

struct H5Filter {
  int id = 0;
  std::string name;
  std::vector<unsigned> cd_values;
};

struct H5Chunk {
  std::vector<uint64_t> coords;  // element offsets of the chunk's first element
  uint64_t address = 0;          // file offset of the stored chunk
  uint64_t size = 0;             // stored bytes
  unsigned filter_mask = 0;
};

struct H5DatasetInfo {
  std::string path;                 // "/group/name"
  std::string dtype;                // numpy descr: "<i4", "|u1", ">f8", ...
  uint64_t itemsize = 0;
  std::vector<uint64_t> shape;      // empty for a scalar
  std::vector<int64_t> maxshape;    // -1: unlimited
  std::string layout;               // contiguous | chunked | compact | virtual
  std::vector<uint64_t> chunks;     // chunked only
  std::vector<H5Filter> filters;
  std::optional<uint64_t> contiguous_offset;  // contiguous and allocated
  uint64_t storage_size = 0;
  uint64_t num_chunks = 0;          // allocated chunks (chunked only)
  uint64_t nbytes() const;
};

// Every dataset in the file (depth-first, sorted by name within a group). Errors name the file and the cause.
// With `src`, the file is read through it (hdf5_source_driver.h: an S3 object) and `path` only names it.
Result<std::vector<H5DatasetInfo>> ListHdf5Datasets(const std::string& path, const ByteSource* src = nullptr);

// The allocated chunks of a chunked dataset, in the library's index order.
Result<std::vector<H5Chunk>> ListHdf5Chunks(const std::string& path, const std::string& dataset,
                                            const ByteSource* src = nullptr);

// sha256 of the dataset's data in C order and its stored byte order (read through the library, so filters and
// fill values apply). A filter that is not available is Unsupported naming the dataset and the filter.
Result<std::string> Hdf5DataSha256(const std::string& path, const std::string& dataset);

// The box [start, start + count) of a dataset, read through the library (filters applied) in C order and the
// stored byte order: the reference the engines' own chunk decoding is tested against.
Result<std::string> ReadHdf5Box(const std::string& path, const std::string& dataset, const std::vector<uint64_t>& start,
                                const std::vector<uint64_t>& count);

}  // namespace feedrate
