// PosixEngine implementation and the FileTable.
#include "loader/io/posix_engine.h"

#include <algorithm>

namespace feedrate {

Result<FileTable> FileTable::Create(std::vector<std::string> paths, bool keep_open) {
  FileTable t;
  t.paths_ = std::move(paths);
  t.keep_open_ = keep_open;
  if (keep_open) {
    t.fds_.reserve(t.paths_.size());
    for (const auto& p : t.paths_) {
      auto fd = OpenForRead(p);
      if (!fd.ok()) return fd.status();
      t.fds_.push_back(std::move(*fd));
    }
  }
  return t;
}

PosixEngine::PosixEngine(const FileTable& files, const EngineOptions& options)
    : files_(files), options_(options), queue_(options.queue_capacity) {
  options_.threads = std::max<size_t>(1, options_.threads);
  buffers_.reserve(options_.threads);
  for (size_t i = 0; i < options_.threads; ++i) buffers_.emplace_back(options_.transfer_size);
  workers_.reserve(options_.threads);
  for (size_t i = 0; i < options_.threads; ++i) workers_.emplace_back([this, i] { Worker(i); });
}

PosixEngine::~PosixEngine() {
  stopping_.store(true, std::memory_order_release);
  ready_.release(static_cast<std::ptrdiff_t>(workers_.size()));
  for (auto& t : workers_) t.join();
}

void PosixEngine::Submit(const ReadRequest& request) {
  while (!queue_.TryPush(request)) std::this_thread::yield();  // only if a caller overfills the queue
  ready_.release();
}

void PosixEngine::Worker(size_t index) {
  char* scratch = buffers_[index].data();
  for (;;) {
    ready_.acquire();
    ReadRequest r;
    // A token means a request is published or about to be: with several producers the cell at the head
    // may still be mid-publication, so retry rather than drop the token (which would strand a request).
    bool got = false;
    while (!(got = queue_.TryPop(&r))) {
      if (stopping_.load(std::memory_order_acquire)) break;
      std::this_thread::yield();
    }
    if (!got) return;
    uint64_t bytes = 0;
    Status st = ReadExtent(r, scratch, &bytes);
    r.target->OnComplete(r.tag, bytes, st);
  }
}

Status PosixEngine::ReadExtent(const ReadRequest& r, char* scratch, uint64_t* bytes) {
  const std::string& path = files_.path(r.extent.file);
  UniqueFd owned;
  int fd = files_.open_fd(r.extent.file);
  if (fd < 0) {
    int f = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f < 0) return Status::Errno("cannot open " + path, errno);
    owned = UniqueFd(f);
    fd = f;
  }
  const uint64_t end = r.extent.offset + r.extent.length;
  uint64_t off = r.extent.offset;
  while (off < end) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(options_.transfer_size, end - off));
    char* dst = r.dest != nullptr ? r.dest + (off - r.extent.offset) : scratch;
    ssize_t n = ::pread(fd, dst, want, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Errno(path + ": read failed at offset " + std::to_string(off), errno);
    }
    if (n == 0) {
      return Status::Corruption(path + ": file is truncated: sample extent ends at offset " + std::to_string(end) +
                                " but data ends at offset " + std::to_string(off));
    }
    off += static_cast<uint64_t>(n);
    *bytes += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

}  // namespace feedrate
