// .npy header parsing (format versions 1.0, 2.0 and 3.0): dtype, shape, order and where the data starts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loader/status.h"

namespace feedrate {

struct NpyHeader {
  int major = 0;
  int minor = 0;
  std::string descr;             // numpy dtype descr, e.g. "<f4", "|u1", "<U7"
  bool fortran_order = false;
  std::vector<uint64_t> shape;   // empty for a 0-d array
  uint32_t header_len = 0;       // HEADER_LEN field
  uint64_t data_offset = 0;      // offset of the array data from the start of the .npy stream
  uint64_t itemsize = 0;
  uint64_t count = 1;            // number of elements (product of shape)
  uint64_t nbytes = 0;           // count * itemsize
  std::string header_text;       // the dict literal as stored
};

// The smallest prefix length needed to parse a header: 12 bytes, then data_offset once known.
inline constexpr size_t kNpyPreludeBytes = 12;
// From the first >= 12 bytes (10 suffice for version 1.0), the total header length (the data offset), or an error
// naming `name` if not .npy. Allocates nothing on success (the DLIO engine's lanes call it per sample).
Result<uint64_t> NpyDataOffset(std::string_view prefix, std::string_view name);
// Parses a header from a prefix holding at least data_offset bytes. `name` is used in errors.
// Rejects object ('O') and structured dtypes as unsupported.
Result<NpyHeader> ParseNpyHeader(std::string_view prefix, const std::string& name);

// Writes a version 1.0 header for a simple dtype, padded so the data starts on a 64-byte boundary,
// exactly as numpy's write_array does.
std::string MakeNpyHeader(const std::string& descr, const std::vector<uint64_t>& shape, bool fortran_order = false);

}  // namespace feedrate
