// Shared by the dataset writers: a file written through the safe writer (loader/io/safe_file.h: unnamed, or an
// unpredictable hidden name) and given its name only when complete, and fast incompressible bytes for contents.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "loader/io/aligned_buffer.h"
#include "loader/io/safe_file.h"
#include "loader/io/unique_fd.h"
#include "loader/status.h"
#include "loader/util/content_pattern.h"

namespace feedrate {

class BackgroundCommitter;
class FaultInjector;

// What DLIO's generators draw per file: a (d1, d2) record shape and the samples the file holds.
struct DlioFileShape {
  uint64_t d1 = 1;
  uint64_t d2 = 1;
  uint64_t samples = 1;
};

// xoshiro256** seeded through splitmix64: fast bytes, no statistical claims needed beyond "not compressible".
class FastBytes {
 public:
  explicit FastBytes(uint64_t seed) {
    for (auto& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }
  void Fill(char* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t v = Next();
      std::memcpy(p + i, &v, 8);
    }
    if (i < n) {
      uint64_t v = Next();
      std::memcpy(p + i, &v, n - i);
    }
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t Next() {
    uint64_t r = Rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return r;
  }
  uint64_t s_[4];
};

// What fills a file's payload: fast random bytes from a seed (the default), or the verifiable pattern
// (content_pattern.h) keyed by the file's path relative to the data folder (`datagen --content verifiable`).
struct ContentSpec {
  ContentSpec(uint64_t random_seed) : seed(random_seed) {}  // NOLINT(google-explicit-constructor): random bytes
  static ContentSpec Verifiable(uint64_t key) {
    ContentSpec c(0);
    c.verifiable = true;
    c.key = key;
    return c;
  }
  uint64_t seed = 0;
  bool verifiable = false;
  uint64_t key = 0;
};

class ContentSource {
 public:
  explicit ContentSource(const ContentSpec& spec) : spec_(spec), rng_(spec.seed) {}
  // `n` payload bytes that start at `file_offset` in the file (random mode: the next n bytes of the stream).
  void Fill(char* p, uint64_t file_offset, size_t n) {
    if (spec_.verifiable) {
      FillContent(spec_.key, file_offset, p, n);
    } else {
      rng_.Fill(p, n);
    }
  }

 private:
  ContentSpec spec_;
  FastBytes rng_;
};

class TempFile {
 public:
  // Creates an unnamed file (O_TMPFILE) in `path`'s folder, or where the file system has none, a new file at an
  // unpredictable hidden name beside `path` (SafeFile). Either way nothing appears at `path` until Commit.
  static Result<TempFile> Create(const std::string& path);
  // Always a hidden name (libhdf5 cannot create its file over an unnamed one; give it OpenPath()).
  static Result<TempFile> CreateNamed(const std::string& path);
  TempFile(TempFile&& o) noexcept = default;
  TempFile& operator=(TempFile&& o) noexcept = default;
  ~TempFile() = default;  // an uncommitted file is discarded (SafeFile)

  Status WriteAt(const void* data, size_t n, uint64_t offset);
  // Writes `n` bytes from `bytes` at `offset`, one `scratch`-sized block at a time.
  Status WriteRandom(ContentSource& bytes, uint64_t n, uint64_t offset, AlignedBuffer* scratch);
  // CommitNow(), or, when durable commits go through a BackgroundCommitter, hands the file to it (its errors come
  // back from a later Submit or from Finish).
  Status Commit();
  // fsync() when durable commits are on, close() (which reports delayed write errors: NFS, quotas), then the name.
  Status CommitNow();
  // Process-wide: fsync every file before it is renamed into place (`feedrate datagen --fsync`), so a dataset is
  // on the device when datagen returns and its write speed is the device's, not the page cache's.
  static void SetDurableCommits(bool on);
  // Process-wide: where durable commits go (nullptr: on the calling thread). Set by GenerateDataset for its run.
  static void SetBackgroundCommitter(BackgroundCommitter* committer);
  // Process-wide: write fault rules (`feedrate datagen --inject`, e.g. ENOSPC) applied before each write of
  // WriteAt; nullptr: none. Files libhdf5 writes itself (HDF5) are not covered.
  static void SetFaultInjector(FaultInjector* faults);
  // A path naming this file that a library can open to write it (libhdf5): /proc/self/fd/N, the open file itself,
  // so no name in the folder is ever reopened. Valid until Commit or destruction.
  std::string OpenPath() const { return "/proc/self/fd/" + std::to_string(file_.fd()); }
  const std::string& temp_path() const { return file_.temp_path(); }  // "" for an unnamed (O_TMPFILE) file

 private:
  explicit TempFile(SafeFile f) : file_(std::move(f)) {}
  SafeFile file_;
};

// A dataset's small side file (an index, the content marker) written as its data files are: through a TempFile,
// so datagen's --fsync choice and background committer apply (loader/io/safe_file.h's WriteFileSafely is the writer
// of every other output).
Status WriteDatasetFile(const std::string& path, const std::string& text);

}  // namespace feedrate
