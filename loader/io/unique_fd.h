// RAII owner of a POSIX file descriptor, plus the small read helpers every format needs.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>

#include "loader/status.h"

namespace feedrate {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Opens `path` read-only; the error names the path and errno.
Result<UniqueFd> OpenForRead(const std::string& path, int extra_flags = 0);
// File size via fstat.
Result<uint64_t> FileSize(int fd, const std::string& path);
// Reads exactly `len` bytes at `offset` (looping over short reads, retrying EINTR).
// Hitting end-of-file early is a Corruption naming the path and the offset where the data stopped.
Status PreadFull(int fd, void* buf, size_t len, uint64_t offset, const std::string& path);

}  // namespace feedrate
