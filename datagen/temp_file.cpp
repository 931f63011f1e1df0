// TempFile: a dataset file written through SafeFile, with datagen's fault rules, fsync policy and committer.
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

Result<TempFile> TempFile::Create(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, SafeFile::Create(path));
  return TempFile(std::move(f));
}

Result<TempFile> TempFile::CreateNamed(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, SafeFile::Create(path, 0, /*named=*/true));
  return TempFile(std::move(f));
}

Status TempFile::WriteAt(const void* data, size_t n, uint64_t off) {
  const uint64_t begin = off, len = n;
  const char* p = static_cast<const char*>(data);
  FaultInjector* faults = g_faults.load(std::memory_order_relaxed);
  while (n > 0) {
    size_t want = n;
    if (faults != nullptr) {
      const int64_t f = faults->OnWrite(file_.path(), off, n);
      if (f < 0) return Status::Errno(file_.path() + ": write failed at offset " + std::to_string(off) + " (injected)", static_cast<int>(-f));
      if (f > 0) want = std::min(n, static_cast<size_t>(f));  // a short write: the loop writes the rest
    }
    ssize_t w = ::pwrite(file_.fd(), p, want, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::Errno(file_.path() + ": write failed at offset " + std::to_string(off), errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  // Durable commits: start writeback of what was just written now (asynchronously), so the device works while the
  // next block is generated and the fsync at Commit waits only for the tail, not the whole file.
  if (g_durable.load(std::memory_order_relaxed)) {
    ::sync_file_range(file_.fd(), static_cast<off_t>(begin), static_cast<off_t>(len), SYNC_FILE_RANGE_WRITE);
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

Status TempFile::CommitNow() { return file_.Commit(g_durable.load(std::memory_order_relaxed)); }

Status WriteDatasetFile(const std::string& path, const std::string& text) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, TempFile::Create(path));
  FEEDRATE_RETURN_IF_ERROR(f.WriteAt(text.data(), text.size(), 0));
  return f.Commit();
}

}  // namespace feedrate
