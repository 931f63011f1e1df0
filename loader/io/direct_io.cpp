// statx-based O_DIRECT alignment probe.
#include "loader/io/direct_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "loader/io/unique_fd.h"

namespace feedrate {

Result<uint64_t> DirectIoAlignment(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  // Test hook: behave like a file system that refuses O_DIRECT (some FUSE ones, older tmpfs).
  if (fd >= 0 && std::getenv("FEEDRATE_TEST_REFUSE_ODIRECT") != nullptr) {
    ::close(fd);
    fd = -1;
    errno = EINVAL;
  }
  if (fd < 0) {
    int err = errno;
    if (err == EINVAL) {
      return Status::Unsupported(path + ": the file system refuses O_DIRECT (EINVAL on open); run without --odirect");
    }
    return Status::Errno("cannot open " + path + " with O_DIRECT", err);
  }
  UniqueFd owned(fd);
  uint64_t align = 4096;
#ifdef STATX_DIOALIGN
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 && (stx.stx_mask & STATX_DIOALIGN) != 0 &&
      stx.stx_dio_offset_align > 0) {
    // Offsets and lengths must be multiples of the offset alignment, buffers of the memory alignment.
    align = std::max<uint64_t>(stx.stx_dio_offset_align, stx.stx_dio_mem_align);
  }
#endif
  return align;
}

}  // namespace feedrate
