// The client's page cache, seen from one file: how much of a byte range is resident (mmap + mincore), evicting a
// file (posix_fadvise DONTNEED), and the system-wide drop (/proc/sys/vm/drop_caches) when permitted.
#pragma once

#include <cstdint>
#include <string>

#include "loader/status.h"

namespace feedrate {

struct Residency {
  uint64_t bytes = 0;           // bytes examined
  uint64_t resident_bytes = 0;  // of them, in pages the page cache held
  Residency& operator+=(const Residency& o) {
    bytes += o.bytes;
    resident_bytes += o.resident_bytes;
    return *this;
  }
  double fraction() const { return bytes > 0 ? static_cast<double>(resident_bytes) / static_cast<double>(bytes) : 0.0; }
};

// Residency of [offset, offset + length) of the open file `fd`: the range is mapped (no page is touched) and
// mincore() says which of its pages are in memory; each page counts for the bytes of the range it covers.
// Allocation-free (a fixed stack vector, walked in chunks), so a sampled probe can run beside the hot path.
Result<Residency> ProbeResidency(int fd, uint64_t offset, uint64_t length);
// How a sampled probe (SampleResidency) asks the kernel.
enum class ResidencyMethod {
  kCachestat,      // cachestat(2) (Linux 6.5+): the cached pages of the range, no mapping, one syscall
  kMincoreWindow,  // fallback: mmap + mincore of at most kResidencyWindowPages pages of the range, scaled to it
};
const char* ResidencyMethodName(ResidencyMethod m);
inline constexpr uint64_t kResidencyWindowPages = 32;
// cachestat where this kernel has it (checked once per process), else the mincore window.
ResidencyMethod DefaultResidencyMethod();

// The cheap probe the read path samples with (thread-safe, allocation-free; fd stays the caller's). kCachestat is
// exact for the range; kMincoreWindow is exact for ranges of at most kResidencyWindowPages pages and otherwise looks
// at one window of that many pages at a position that varies with offset and length, so over many probes it is an
// unbiased estimate of the share (docs/measurement.md gives its error). A kCachestat probe whose syscall is
// missing or refused on this file falls back to the window.
Result<Residency> SampleResidency(int fd, uint64_t offset, uint64_t length, ResidencyMethod m);
// The same for a path (opened read-only for the probe); errors name the path.
Result<Residency> ProbeResidency(const std::string& path, uint64_t offset, uint64_t length);
// The whole file.
Result<Residency> ProbeFileResidency(const std::string& path);

// Whether reads of `path` go through the client's page cache (a FUSE server may open a file direct_io): its first
// byte is read once (one request to the storage) and its page looked up; a page the read brought in is dropped
// again. True when that page was already resident; false for an empty file.
Result<bool> ReadsFillPageCache(const std::string& path);

// Asks the kernel to drop `path`'s clean pages from the page cache (posix_fadvise POSIX_FADV_DONTNEED). With
// `flush_first`, dirty pages are written back first (fdatasync), since DONTNEED leaves dirty pages in place:
// a dataset generated moments ago is still dirty. Pages of tmpfs/shmem files are their storage and stay.
Status EvictFromPageCache(const std::string& path, bool flush_first);

// sync() when `sync_first`, then "3" into /proc/sys/vm/drop_caches (page cache, dentries and inodes of the whole
// host; dirty pages stay). Needs root (CAP_SYS_ADMIN) and a writable /proc/sys; the error says which was missing.
// --drop-system-caches syncs first; the emulated DLIO's own flush does not (`echo 3 > .../drop_caches`, no sync).
Status DropSystemCaches(bool sync_first = true);

}  // namespace feedrate
