// np.load's layout of a file learnt from np.load's own reads, inside the timed window: an npz or npy set-up did not
// index is read as upstream DLIO's reader reads it (access_pattern.h's kNpz, kNpy), each read planned from what the
// ones before returned.
#pragma once

#include <cstdint>

#include "loader/format/access_pattern.h"
#include "loader/status.h"

namespace feedrate {

// What np.load must read of a file before its next reads are known, in its order. An npz: the end record (the central
// directory's place), the central directory (x.npy's local header and stored size), the member's local header and
// .npy header (where its array starts). An npy: its first 12 bytes (the magic, the version and the header's length:
// where its array starts). Each stage names the bytes it needs; Learn parses them into the layout.
// Call order: Start, then Learn with the bytes of [want(), want() + want_len()) until known(). No allocation.
class NumpyLayoutLearner {
 public:
  // The most bytes a stage asks for (a larger central directory is refused: more members than DLIO's npz has).
  static constexpr uint64_t kMaxWant = 64 << 10;

  // Whether a file read as `kind` has a layout this learner learns (np.load's: kNpz, kNpy).
  static bool Learns(AccessKind kind) { return kind == AccessKind::kNpz || kind == AccessKind::kNpy; }
  // A file of `size` bytes read as `kind` (one Learns): its layout's size set, the rest unknown (0), the first
  // stage's bytes asked for.
  void Start(AccessKind kind, uint64_t size, FileLayout* layout);
  bool known() const { return stage_ == kKnown; }
  // The sample's bytes in a layout learnt as `kind`, as the indexer counts them: the .npy stream np.load reads (its
  // header and array), the x member's stored size in an npz, an npy's whole file.
  static uint64_t StreamBytes(AccessKind kind, const FileLayout& l);
  uint64_t want() const { return want_; }
  uint64_t want_len() const { return want_len_; }
  // `data`: the file's bytes from want(), `n` of them (fewer than want_len() only where the file ends). Fills the
  // stage's fields of `layout` and asks for the next stage's bytes. Errors name `path`: not a zip DLIO's numpy
  // writes (a comment, zip64 offsets, no x.npy, a compressed member, a truncated header), not a .npy stream.
  Status Learn(const char* data, uint64_t n, const char* path, FileLayout* layout);

 private:
  enum Stage : uint8_t { kEndRecord, kDirectory, kMember, kNpyPrelude, kKnown };
  Status LearnEndRecord(const unsigned char* d, uint64_t n, const char* path, FileLayout* l);
  Status LearnDirectory(const unsigned char* d, uint64_t n, const char* path, FileLayout* l);
  Status LearnMember(const unsigned char* d, uint64_t n, const char* path, FileLayout* l);
  Status LearnNpy(const unsigned char* d, uint64_t n, const char* path, FileLayout* l);
  Stage stage_ = kEndRecord;
  uint64_t want_ = 0, want_len_ = 0;
};

}  // namespace feedrate
