// Page-cache residency (mincore), eviction (fadvise) and the system-wide drop.
#include "loader/io/page_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

// Unmaps on every path out.
struct Mapping {
  void* addr = MAP_FAILED;
  size_t len = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) ::munmap(addr, len);
  }
};

// cachestat(2)'s ABI (include/uapi/linux/mman.h, Linux 6.5); Debian 12's headers predate it. 451 on every
// architecture (the unified syscall table).
constexpr long kSysCachestat = 451;
struct CachestatRange {
  uint64_t off, len;
};
struct Cachestat {
  uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

// Residency by cachestat into *r; returns 0 or the errno (ENOSYS, or EOPNOTSUPP where the file system has no
// page cache to ask). No allocation either way: a file system that refuses it costs no heap per probe.
int CachestatResidency(int fd, uint64_t offset, uint64_t length, Residency* r) {
  const uint64_t page = PageSize();
  const uint64_t begin = offset / page * page;
  const uint64_t end = offset + length;
  CachestatRange range{begin, end - begin};
  Cachestat cs{};
  if (::syscall(kSysCachestat, fd, &range, &cs, 0U) != 0) return errno;
  const uint64_t pages = (end - begin + page - 1) / page;
  r->bytes = length;
  // Partly covered first/last pages make the page count's share a close proxy for the byte share.
  r->resident_bytes = std::min(length, static_cast<uint64_t>(static_cast<double>(length) *
                                                            static_cast<double>(std::min(cs.nr_cache, pages)) /
                                                            static_cast<double>(pages)));
  return 0;
}

// One window of at most kResidencyWindowPages pages, its residency scaled to the whole range.
Result<Residency> MincoreWindowResidency(int fd, uint64_t offset, uint64_t length) {
  const uint64_t page = PageSize();
  const uint64_t first_page = offset / page;
  const uint64_t pages = (offset + length + page - 1) / page - first_page;
  if (pages <= kResidencyWindowPages) return ProbeResidency(fd, offset, length);
  uint64_t h = (offset + 1) * 0x9e3779b97f4a7c15ULL ^ length * 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 29;
  const uint64_t start = (first_page + h % (pages - kResidencyWindowPages + 1)) * page;
  const uint64_t lo = std::max(start, offset);
  const uint64_t hi = std::min(start + kResidencyWindowPages * page, offset + length);
  FEEDRATE_ASSIGN_OR_RETURN(auto w, ProbeResidency(fd, lo, hi - lo));
  Residency r;
  r.bytes = length;
  r.resident_bytes = static_cast<uint64_t>(static_cast<double>(length) * w.fraction());
  return r;
}

}  // namespace

const char* ResidencyMethodName(ResidencyMethod m) {
  return m == ResidencyMethod::kCachestat ? "cachestat" : "mincore_window";
}

ResidencyMethod DefaultResidencyMethod() {
  static const ResidencyMethod m = [] {
    CachestatRange range{0, 0};
    Cachestat cs{};
    // An invalid fd tells the two apart without a file: EBADF where the syscall exists, ENOSYS where not.
    const bool exists = ::syscall(kSysCachestat, -1, &range, &cs, 0U) == 0 || errno != ENOSYS;
    return exists ? ResidencyMethod::kCachestat : ResidencyMethod::kMincoreWindow;
  }();
  return m;
}

Result<Residency> SampleResidency(int fd, uint64_t offset, uint64_t length, ResidencyMethod m) {
  if (length == 0) return Residency{};
  // kCachestat only where DefaultResidencyMethod found the syscall; a file system that refuses it (EOPNOTSUPP)
  // gets the mincore window for that probe.
  if (Residency r; m == ResidencyMethod::kCachestat && CachestatResidency(fd, offset, length, &r) == 0) return r;
  return MincoreWindowResidency(fd, offset, length);
}

Result<Residency> ProbeResidency(int fd, uint64_t offset, uint64_t length) {
  Residency r;
  r.bytes = length;
  if (length == 0) return r;
  const uint64_t page = PageSize();
  const uint64_t begin = offset / page * page;
  const uint64_t end = offset + length;
  Mapping m;
  m.len = static_cast<size_t>(end - begin);
  m.addr = ::mmap(nullptr, m.len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(begin));
  if (m.addr == MAP_FAILED) return Status::Errno("mmap for the page-cache probe failed", errno);
  constexpr size_t kChunkPages = 4096;  // 16 MiB of file per mincore call with 4 KiB pages
  unsigned char vec[kChunkPages];
  const uint64_t pages = (m.len + page - 1) / page;
  for (uint64_t p = 0; p < pages; p += kChunkPages) {
    const uint64_t n = std::min<uint64_t>(kChunkPages, pages - p);
    char* at = static_cast<char*>(m.addr) + p * page;
    const size_t span = static_cast<size_t>(std::min<uint64_t>(n * page, m.len - p * page));
    if (::mincore(at, span, vec) != 0) return Status::Errno("mincore failed", errno);
    for (uint64_t i = 0; i < n; ++i) {
      if ((vec[i] & 1) == 0) continue;
      const uint64_t pb = begin + (p + i) * page;
      const uint64_t lo = std::max(pb, offset), hi = std::min(pb + page, end);
      if (hi > lo) r.resident_bytes += hi - lo;
    }
  }
  return r;
}

Result<Residency> ProbeResidency(const std::string& path, uint64_t offset, uint64_t length) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  auto r = ProbeResidency(fd.get(), offset, length);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

Result<Residency> ProbeFileResidency(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd.get(), path));
  auto r = ProbeResidency(fd.get(), 0, size);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

Result<bool> ReadsFillPageCache(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto before, ProbeResidency(fd.get(), 0, 1));
  if (before.resident_bytes > 0) return true;  // only a cached read puts a page there
  char byte = 0;
  const ssize_t n = ::pread(fd.get(), &byte, 1, 0);
  if (n < 0) return Status::Errno(path + ": read failed at offset 0", errno);
  if (n == 0) return false;  // an empty file says nothing
  FEEDRATE_ASSIGN_OR_RETURN(auto after, ProbeResidency(fd.get(), 0, 1));
  if (after.resident_bytes == 0) return false;
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);  // leave the cache as it was
  return true;
}

Status EvictFromPageCache(const std::string& path, bool flush_first) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  if (flush_first && ::fdatasync(fd.get()) != 0 && errno != EINVAL) {
    return Status::Errno(path + ": fdatasync before eviction failed", errno);
  }
  if (int err = ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED); err != 0) {
    return Status::Errno(path + ": posix_fadvise(DONTNEED) failed", err);
  }
  return Status::Ok();
}

Status DropSystemCaches(bool sync_first) {
  if (sync_first) ::sync();
  UniqueFd fd(::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::Errno("cannot open /proc/sys/vm/drop_caches (needs root and a writable /proc/sys)", errno);
  if (::write(fd.get(), "3\n", 2) != 2) return Status::Errno("writing /proc/sys/vm/drop_caches failed", errno);
  return Status::Ok();
}

}  // namespace feedrate
