// `feedrate inspect` model: everything about the arrays in an .npy/.npz file, including a sha256 of each
// array's data bytes exactly as stored (F order for Fortran arrays, the file's byte order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loader/format/npz.h"
#include "loader/status.h"

namespace feedrate {

struct ArrayReport {
  NpArray array;
  std::string sha256;  // hex
};

struct FileReport {
  std::string path;
  std::string kind;  // "npy" or "npz"
  uint64_t size = 0;
  std::vector<ArrayReport> arrays;
};

// Decides the format from the content; errors name the file and the cause.
Result<FileReport> InspectNumpyFile(const std::string& path);

}  // namespace feedrate
