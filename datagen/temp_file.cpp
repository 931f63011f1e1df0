// TempFile: write beside the target, rename when complete.
#include "datagen/temp_file.h"

#include "datagen/background_committer.h"
#include "loader/io/fault_injection.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <utility>

namespace feedrate {

namespace {
std::atomic<bool> g_durable{false};
std::atomic<BackgroundCommitter*> g_committer{nullptr};
std::atomic<FaultInjector*> g_faults{nullptr};
}  // namespace

namespace {

std::string HiddenName(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path target(path);
  return (target.parent_path() / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                                  std::to_string(counter.fetch_add(1))))
      .string();
}

}  // namespace

Result<TempFile> TempFile::Create(const std::string& path) {
  // An unnamed file in the target's folder (O_TMPFILE) costs the folder one name operation, the final link, where a
  // hidden name costs two (create, rename): a million small files are written at close to the folder's create
  // rate. File systems without O_TMPFILE (NFS, FUSE, older kernels) get the hidden name.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  int raw = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (raw >= 0) return TempFile(path, std::string(), UniqueFd(raw));
  return CreateNamed(path);
}

Result<TempFile> TempFile::CreateNamed(const std::string& path) {
  std::string tmp = HiddenName(path);
  int raw = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (raw < 0) return Status::Errno("cannot create " + tmp, errno);
  return TempFile(path, tmp, UniqueFd(raw));
}

TempFile::TempFile(TempFile&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::exchange(o.tmp_, {})), fd_(std::move(o.fd_)), committed_(o.committed_) {}

TempFile& TempFile::operator=(TempFile&& o) noexcept {
  if (this != &o) {
    if (!committed_ && !tmp_.empty()) {
      fd_.reset();
      ::unlink(tmp_.c_str());
    }
    path_ = std::move(o.path_);
    tmp_ = std::exchange(o.tmp_, {});
    fd_ = std::move(o.fd_);
    committed_ = o.committed_;
  }
  return *this;
}

TempFile::~TempFile() {
  if (!committed_ && !tmp_.empty()) {
    fd_.reset();
    ::unlink(tmp_.c_str());
  }
}

Status TempFile::WriteAt(const void* data, size_t n, uint64_t off) {
  const uint64_t begin = off, len = n;
  const char* p = static_cast<const char*>(data);
  FaultInjector* faults = g_faults.load(std::memory_order_relaxed);
  while (n > 0) {
    size_t want = n;
    if (faults != nullptr) {
      const int64_t f = faults->OnWrite(path_, off, n);
      if (f < 0) return Status::Errno(path_ + ": write failed at offset " + std::to_string(off) + " (injected)", static_cast<int>(-f));
      if (f > 0) want = std::min(n, static_cast<size_t>(f));  // a short write: the loop writes the rest
    }
    ssize_t w = ::pwrite(fd_.get(), p, want, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::Errno(path_ + ": write failed at offset " + std::to_string(off), errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  // Durable commits: start writeback of what was just written now (asynchronously), so the device works while the
  // next block is generated and the fsync at Commit waits only for the tail, not the whole file.
  if (g_durable.load(std::memory_order_relaxed)) {
    ::sync_file_range(fd_.get(), static_cast<off_t>(begin), static_cast<off_t>(len), SYNC_FILE_RANGE_WRITE);
  }
  return Status::Ok();
}

void TempFile::SetDurableCommits(bool on) { g_durable.store(on, std::memory_order_relaxed); }
void TempFile::SetFaultInjector(FaultInjector* faults) { g_faults.store(faults, std::memory_order_relaxed); }

Status TempFile::WriteRandom(ContentSource& bytes, uint64_t n, uint64_t off, AlignedBuffer* scratch) {
  while (n > 0) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, scratch->size()));
    bytes.Fill(scratch->data(), off, k);
    FEEDRATE_RETURN_IF_ERROR(WriteAt(scratch->data(), k, off));
    off += k;
    n -= k;
  }
  return Status::Ok();
}

void TempFile::SetBackgroundCommitter(BackgroundCommitter* committer) { g_committer.store(committer); }

Status TempFile::Commit() {
  BackgroundCommitter* committer = g_committer.load();
  if (committer != nullptr && g_durable.load(std::memory_order_relaxed)) return committer->Submit(std::move(*this));
  return CommitNow();
}

Status TempFile::CommitNow() {
  if (g_durable.load(std::memory_order_relaxed) && ::fsync(fd_.get()) != 0) return Status::Errno(path_ + ": fsync failed", errno);
  if (tmp_.empty()) return LinkUnnamed();
  if (::close(fd_.release()) != 0) return Status::Errno(path_ + ": close failed", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return Status::Errno("cannot rename " + tmp_ + " to " + path_, errno);
  committed_ = true;
  return Status::Ok();
}

// An O_TMPFILE file gets its name: linked into place when the name is free; over an existing file (regenerating
// one), linked under a hidden name first and renamed over it, so the old file is replaced whole or not at all.
Status TempFile::LinkUnnamed() {
  const std::string self = "/proc/self/fd/" + std::to_string(fd_.get());
  int rc = ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path_.c_str(), AT_SYMLINK_FOLLOW);
  if (rc != 0 && errno == EEXIST) {
    const std::string hidden = HiddenName(path_);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, hidden.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      return Status::Errno("cannot link " + hidden, errno);
    }
    if (::rename(hidden.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      ::unlink(hidden.c_str());
      return Status::Errno("cannot rename " + hidden + " to " + path_, err);
    }
    rc = 0;
  }
  if (rc != 0) return Status::Errno("cannot link " + path_, errno);
  if (::close(fd_.release()) != 0) {  // a delayed write error: the file is not what was written
    const int err = errno;
    ::unlink(path_.c_str());
    return Status::Errno(path_ + ": close failed", err);
  }
  committed_ = true;
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, TempFile::Create(path));
  FEEDRATE_RETURN_IF_ERROR(f.WriteAt(text.data(), text.size(), 0));
  return f.Commit();
}

}  // namespace feedrate
