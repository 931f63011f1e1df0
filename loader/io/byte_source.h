// Random-access reads of one file or object by offset: what the format readers (zip/npz/npy/TFRecord headers)
// read through, so the same code indexes a local file (pread) and an S3 object (ranged GETs, loader/s3).
#pragma once

#include <cstdint>
#include <string>

#include "loader/io/unique_fd.h"
#include "loader/status.h"

namespace feedrate {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // How messages name it: a path, or s3://bucket/key.
  virtual const std::string& name() const = 0;
  // Exactly `len` bytes at `offset`, or an error naming the source and the offset (fewer bytes: Corruption).
  virtual Status ReadAt(void* buf, size_t len, uint64_t offset) const = 0;
};

// A file open at `fd` (not owned), read with pread.
class FdByteSource final : public ByteSource {
 public:
  FdByteSource(int fd, uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }
  Status ReadAt(void* buf, size_t len, uint64_t offset) const override { return PreadFull(fd_, buf, len, offset, path_); }

 private:
  int fd_;
  uint64_t size_;
  std::string path_;
};

}  // namespace feedrate
