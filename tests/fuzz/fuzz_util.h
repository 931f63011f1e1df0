// Fuzz target helpers: the input as a file descriptor (memfd), since the parsers read files through fds.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace feedrate::fuzz {

// An anonymous in-memory file holding `data`; closed on destruction. path() opens it again by name.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) : fd_(::memfd_create("fuzz", MFD_CLOEXEC)), size_(size) {
    size_t done = 0;
    while (fd_ >= 0 && done < size) {
      const ssize_t w = ::write(fd_, data + done, size - done);
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
  }
  ~MemFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
  uint64_t size_;
};

}  // namespace feedrate::fuzz
