// Open/stat/pread helpers with error messages that name the file, the offset and the cause.
#include "loader/io/unique_fd.h"

#include <sys/stat.h>

namespace feedrate {

Result<UniqueFd> OpenForRead(const std::string& path, int extra_flags) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | extra_flags);
  if (fd < 0) return Status::Errno("cannot open " + path, errno);
  return UniqueFd(fd);
}

Result<uint64_t> FileSize(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::Errno("cannot stat " + path, errno);
  return static_cast<uint64_t>(st.st_size);
}

Status PreadFull(int fd, void* buf, size_t len, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Errno(path + ": read failed at offset " + std::to_string(offset + done), errno);
    }
    if (n == 0) {
      return Status::Corruption(path + ": file is truncated: expected " + std::to_string(len) +
                                " bytes at offset " + std::to_string(offset) + ", data ends at offset " +
                                std::to_string(offset + done));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace feedrate
