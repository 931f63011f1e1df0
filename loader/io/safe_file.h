// The one way Feedrate gives an output file its name: written unnamed (or under an unpredictable name nobody else
// can have created), then linked or renamed into place whole. Results, checkpoints, datasets, reports and exports.
#pragma once

#include <string>
#include <string_view>

#include "loader/io/unique_fd.h"
#include "loader/status.h"

namespace feedrate {

class SafeFile {
 public:
  // Opens an unnamed file in `path`'s folder (O_TMPFILE) or, where the file system has none (NFS, FUSE) or `named`
  // is asked (a library that reopens the file by name: libhdf5), a new file `.<name>.tmp-<16 random hex digits>`
  // beside `path`, created with O_CREAT|O_EXCL|O_NOFOLLOW: a symlink or file planted at any name is never followed
  // nor truncated. `extra_flags` are added to the open (O_DIRECT). Nothing appears at `path` before Commit.
  static Result<SafeFile> Create(const std::string& path, int extra_flags = 0, bool named = false);
  SafeFile(SafeFile&& o) noexcept;
  SafeFile& operator=(SafeFile&& o) noexcept;
  SafeFile(const SafeFile&) = delete;
  SafeFile& operator=(const SafeFile&) = delete;
  ~SafeFile();  // closes the file and removes the temporary name unless committed

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }  // "" for an unnamed file
  bool committed() const { return committed_; }

  // Writes all of `bytes` at `offset` (retrying short writes and EINTR); the error names the final path.
  Status WriteAt(std::string_view bytes, uint64_t offset);
  // fsync() when `durable`, close() (which reports delayed write errors: NFS, quotas), then the name: an unnamed
  // file is linked at `path` (or, when `path` exists, linked at a random hidden name and renamed over it), a named
  // one renamed. Whatever `path` held before (a file or a symlink) is replaced, never written through. On any
  // error the file is closed and its temporary name removed; `path` keeps what it had.
  Status Commit(bool durable);

 private:
  SafeFile(std::string path, std::string tmp, UniqueFd fd) : path_(std::move(path)), tmp_(std::move(tmp)), fd_(std::move(fd)) {}
  Status LinkUnnamed();
  void Discard();
  std::string path_, tmp_;
  UniqueFd fd_;
  bool committed_ = false;
};

// `.<name of path>.tmp-<16 random hex digits>` in `path`'s folder (getrandom: not guessable from the pid or time).
std::string RandomHiddenName(const std::string& path);

// Writes `content` to `path` through a SafeFile; `durable` fsyncs before the name is given.
Status WriteFileSafely(const std::string& path, std::string_view content, bool durable = true);

// The whole of a small input file a command reads back (a summary.json, a sweep.json): opened without following a
// symlink at its name and without blocking (a FIFO or a device there is refused at once, never waited on), a regular
// file of at most `max_bytes`. Errors name the path and the cause (NotFound when nothing is there).
Result<std::string> ReadSmallRegularFile(const std::string& path, uint64_t max_bytes = 64 << 20);

}  // namespace feedrate
