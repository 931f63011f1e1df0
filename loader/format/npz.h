// .npz (zip of .npy members) and .npy files: array index and streaming of array data (stored or deflated).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loader/format/npy.h"
#include "loader/format/zip.h"
#include "loader/io/byte_source.h"
#include "loader/status.h"

namespace feedrate {

// One array in an .npz (or the single array of an .npy, with no zip member).
struct NpArray {
  std::string name;                 // npz key ("x" for member "x.npy"); "" for a plain .npy
  std::optional<ZipMember> member;  // absent for a plain .npy file
  NpyHeader header;
  // Absolute offset of the array data in the file when it is stored uncompressed; empty when deflated.
  std::optional<uint64_t> data_offset_in_file;
};

// Reads the directory of an .npz and the .npy header of every member (inflating just enough for
// deflated members). Members that are not ".npy" are listed with an empty header name check.
Result<std::vector<NpArray>> ReadNpzArrays(const ByteSource& src);
inline Result<std::vector<NpArray>> ReadNpzArrays(int fd, uint64_t file_size, const std::string& path) {
  return ReadNpzArrays(FdByteSource(fd, file_size, path));
}
// Reads the header of a plain .npy file and checks the data is all there.
Result<NpArray> ReadNpyFile(const ByteSource& src);
inline Result<NpArray> ReadNpyFile(int fd, uint64_t file_size, const std::string& path) {
  return ReadNpyFile(FdByteSource(fd, file_size, path));
}

using ChunkSink = std::function<Status(const char* data, size_t len)>;
// Streams the array's data bytes exactly as stored in the .npy stream (after its header), inflating a
// deflated member and checking the member's CRC-32 against the central directory.
Status StreamArrayData(const ByteSource& src, const NpArray& array, const ChunkSink& sink);
inline Status StreamArrayData(int fd, const NpArray& array, const std::string& path, const ChunkSink& sink) {
  return StreamArrayData(FdByteSource(fd, 0, path), array, sink);  // (reads within the array only)
}

enum class NumpyFileKind { kNpy, kNpz, kUnknown };
// Decides by content (magic bytes), not by extension.
Result<NumpyFileKind> DetectNumpyFileKind(const ByteSource& src);
inline Result<NumpyFileKind> DetectNumpyFileKind(int fd, uint64_t file_size, const std::string& path) {
  return DetectNumpyFileKind(FdByteSource(fd, file_size, path));
}

}  // namespace feedrate
