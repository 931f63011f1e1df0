// SafeFile: an output written where nobody can have planted a name, then given its name whole.
#include "loader/io/safe_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <utility>

namespace feedrate {

std::string RandomHiddenName(const std::string& path) {
  uint64_t r = 0;
  // getrandom never blocks once the pool is initialised; a short read can only follow a signal: retry.
  while (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) {
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, r);
  const std::filesystem::path target(path);
  return (target.parent_path() / ("." + target.filename().string() + ".tmp-" + hex)).string();
}

Result<SafeFile> SafeFile::Create(const std::string& path, int extra_flags, bool named) {
  if (!named) {
    // An unnamed file costs the folder one name operation (the final link) where a hidden name costs two.
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    const int raw = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC | extra_flags, 0644);
    if (raw >= 0) return SafeFile(path, std::string(), UniqueFd(raw));
    // No O_TMPFILE here (EOPNOTSUPP, EISDIR on old kernels, ...): the named way says what is wrong if both fail.
  }
  // O_EXCL|O_NOFOLLOW: the open fails rather than follow or reuse whatever is at the name; a (vanishingly unlikely)
  // collision with a name that exists is retried with another random name.
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string tmp = RandomHiddenName(path);
    const int raw = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_flags, 0644);
    if (raw >= 0) return SafeFile(path, std::move(tmp), UniqueFd(raw));
    if (errno != EEXIST) return Status::Errno("cannot create " + tmp + " (for " + path + ")", errno);
  }
  return Status::Errno("cannot create a temporary file beside " + path, EEXIST);
}

SafeFile::SafeFile(SafeFile&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::exchange(o.tmp_, {})), fd_(std::move(o.fd_)), committed_(o.committed_) {}

SafeFile& SafeFile::operator=(SafeFile&& o) noexcept {
  if (this != &o) {
    Discard();
    path_ = std::move(o.path_);
    tmp_ = std::exchange(o.tmp_, {});
    fd_ = std::move(o.fd_);
    committed_ = o.committed_;
  }
  return *this;
}

SafeFile::~SafeFile() { Discard(); }

void SafeFile::Discard() {
  fd_.reset();
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

Status SafeFile::WriteAt(std::string_view bytes, uint64_t offset) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t w = ::pwrite(fd_.get(), p, left, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::Errno("cannot write " + path_ + " (at offset " + std::to_string(offset) + ")", errno);
    }
    p += w;
    left -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

Status SafeFile::Commit(bool durable) {
  if (!fd_.valid()) return Status::Errno(path_ + ": already committed or discarded", EBADF);
  if (durable && ::fsync(fd_.get()) != 0) {
    const int err = errno;
    Discard();
    return Status::Errno(path_ + ": fsync failed", err);
  }
  if (tmp_.empty()) return LinkUnnamed();
  if (::close(fd_.release()) != 0) {  // a delayed write error: the file is not what was written
    const int err = errno;
    Discard();
    return Status::Errno(path_ + ": close failed", err);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    Discard();
    return Status::Errno("cannot rename " + tmp_ + " to " + path_, err);
  }
  committed_ = true;
  tmp_.clear();
  return Status::Ok();
}

// linkat(2) makes a new name and fails on an existing one (a symlink included: it is never followed); over an
// existing file the unnamed file is linked at a random hidden name first and renamed over it, so the old file is
// replaced whole or not at all.
Status SafeFile::LinkUnnamed() {
  const std::string self = "/proc/self/fd/" + std::to_string(fd_.get());
  int rc = ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path_.c_str(), AT_SYMLINK_FOLLOW);
  if (rc != 0 && errno == EEXIST) {
    std::string hidden;
    for (int attempt = 0; attempt < 8; ++attempt) {
      hidden = RandomHiddenName(path_);
      rc = ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, hidden.c_str(), AT_SYMLINK_FOLLOW);
      if (rc == 0 || errno != EEXIST) break;
    }
    if (rc != 0) {
      const int err = errno;
      Discard();
      return Status::Errno("cannot link " + hidden + " (for " + path_ + ")", err);
    }
    if (::rename(hidden.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      ::unlink(hidden.c_str());
      Discard();
      return Status::Errno("cannot rename " + hidden + " to " + path_, err);
    }
  } else if (rc != 0) {
    const int err = errno;
    Discard();
    return Status::Errno("cannot link " + path_, err);
  }
  if (::close(fd_.release()) != 0) {  // a delayed write error: the file is not what was written
    const int err = errno;
    ::unlink(path_.c_str());
    return Status::Errno(path_ + ": close failed", err);
  }
  committed_ = true;
  return Status::Ok();
}

Status WriteFileSafely(const std::string& path, std::string_view content, bool durable) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, SafeFile::Create(path));
  FEEDRATE_RETURN_IF_ERROR(f.WriteAt(content, 0));
  return f.Commit(durable);
}

Result<std::string> ReadSmallRegularFile(const std::string& path, uint64_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    if (errno == ELOOP) return Status::InvalidArgument(path + ": is a symbolic link (not followed)");
    return Status::Errno("cannot open " + path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::Errno("cannot stat " + path, errno);
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket"
                                                                                                              : "not a regular file";
    return Status::InvalidArgument(path + ": is " + std::string(what) + ", not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Status::InvalidArgument(path + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                                   std::to_string(max_bytes) + " read here");
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd.get(), out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Errno("cannot read " + path, errno);
    if (n == 0) break;  // shrank since the fstat
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace feedrate
