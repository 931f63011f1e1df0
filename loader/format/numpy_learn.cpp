// NumpyLayoutLearner: zipfile's and numpy's parse of an npz or npy, from the bytes np.load's own reads return (an npz's
// end record, central directory, the x.npy member's local header and .npy header; an npy's header), a stage at a time.
#include "loader/format/numpy_learn.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "loader/format/npy.h"  // kNpyPreludeBytes
#include "loader/format/zip.h"

namespace feedrate {
namespace {

constexpr uint64_t kEndRecordBytes = 22, kLocalHeaderBytes = 30, kCentralEntryBytes = 46;
constexpr uint64_t kMemberWant = 4096;  // a member's local header and .npy header (numpy pads the latter to 64 bytes)

// As the indexer says it (zip.cpp), and where the layout was being learnt.
Status NotLearnt(const char* path, const std::string& why) {
  return Status::Corruption(std::string(path) + ": not a valid zip/npz archive: " + why +
                            " (np.load's zip layout, learnt from its own reads)");
}

}  // namespace

void NumpyLayoutLearner::Start(AccessKind kind, uint64_t size, FileLayout* layout) {
  *layout = FileLayout{};
  layout->size = size;
  if (kind == AccessKind::kNpy) {  // (np.load's first read, its 6-byte magic through the buffer, fills from 0)
    stage_ = kNpyPrelude;
    want_ = 0;
    want_len_ = std::min<uint64_t>(size, kNpyPreludeBytes);
    return;
  }
  stage_ = kEndRecord;
  want_ = size >= kEndRecordBytes ? size - kEndRecordBytes : 0;
  want_len_ = std::min(size, kEndRecordBytes);
}

uint64_t NumpyLayoutLearner::StreamBytes(AccessKind kind, const FileLayout& l) {
  return kind == AccessKind::kNpy ? l.size : l.member_size;
}

Status NumpyLayoutLearner::Learn(const char* data, uint64_t n, const char* path, FileLayout* layout) {
  const auto* d = reinterpret_cast<const unsigned char*>(data);
  switch (stage_) {
    case kEndRecord: return LearnEndRecord(d, n, path, layout);
    case kDirectory: return LearnDirectory(d, n, path, layout);
    case kMember: return LearnMember(d, n, path, layout);
    case kNpyPrelude: return LearnNpy(d, n, path, layout);
    case kKnown: return Status::Ok();
  }
  return Status::Ok();
}

// zipfile._EndRecData: a commentless end record in the last 22 bytes (numpy writes no comment), the central
// directory's size and offset (numpy's npz of DLIO's sizes needs no zip64 end record).
Status NumpyLayoutLearner::LearnEndRecord(const unsigned char* d, uint64_t n, const char* path, FileLayout* l) {
  if (n < kEndRecordBytes || ZipLe32(d) != kZipEndSig) {
    return NotLearnt(path, "no zip end record at offset " + std::to_string(want_) + " (its last 22 bytes): truncated, " +
                               "or not a zip as numpy writes it (a comment)");
  }
  const uint64_t cd_size = ZipLe32(d + 12), cd_offset = ZipLe32(d + 16);
  if (cd_offset == kZip32Max || cd_size == kZip32Max) return NotLearnt(path, "a zip64 central directory");
  if (cd_offset + cd_size > l->size - kEndRecordBytes) return NotLearnt(path, "its central directory lies past its end record");
  if (cd_size > kMaxWant) return NotLearnt(path, "a central directory of " + std::to_string(cd_size) + " bytes");
  l->dir_offset = cd_offset;
  stage_ = kDirectory;
  want_ = cd_offset;
  want_len_ = cd_size;
  return Status::Ok();
}

// zipfile._RealGetContents: the entries; x.npy's local header offset and stored size (NpzFile['x']).
Status NumpyLayoutLearner::LearnDirectory(const unsigned char* d, uint64_t n, const char* path, FileLayout* l) {
  for (uint64_t pos = 0; pos + kCentralEntryBytes <= n;) {
    if (ZipLe32(d + pos) != kZipCentralSig) return NotLearnt(path, "a corrupt central directory entry");
    const uint64_t name_len = ZipLe16(d + pos + 28), extra_len = ZipLe16(d + pos + 30), comment_len = ZipLe16(d + pos + 32);
    if (pos + kCentralEntryBytes + name_len > n) break;
    const std::string_view name(reinterpret_cast<const char*>(d + pos + kCentralEntryBytes), name_len);
    if (name == "x.npy") {
      const uint64_t method = ZipLe16(d + pos + 10), stored = ZipLe32(d + pos + 20), offset = ZipLe32(d + pos + 42);
      if (method != 0) {
        return NotLearnt(path, "x.npy is compressed where the workload says dataset.compression: none (with "
                               "dataset.compression: zip it is indexed at set-up)");
      }
      if (stored == kZip32Max || offset == kZip32Max) return NotLearnt(path, "x.npy's sizes are zip64");
      if (offset + kLocalHeaderBytes > l->dir_offset) return NotLearnt(path, "x.npy's local header lies past its data");
      l->member_offset = offset;
      l->member_size = stored;
      stage_ = kMember;
      want_ = offset;
      want_len_ = std::min(kMemberWant, l->size - offset);
      return Status::Ok();
    }
    pos += kCentralEntryBytes + name_len + extra_len + comment_len;
  }
  return Status::Corruption(std::string(path) + ": npz has no 'x' array (DLIO's npz reader reads f['x'])");
}

// zipfile.ZipFile.open: the local header's name and extra field; numpy.lib.format.read_magic and the header length.
Status NumpyLayoutLearner::LearnMember(const unsigned char* d, uint64_t n, const char* path, FileLayout* l) {
  if (n < kLocalHeaderBytes || ZipLe32(d) != kZipLocalSig) return NotLearnt(path, "no local header for x.npy");
  const uint64_t skip = kLocalHeaderBytes + ZipLe16(d + 26) + ZipLe16(d + 28);
  if (skip + kNpyPreludeBytes > n) return NotLearnt(path, "x.npy's local header is longer than its first read");
  // numpy.lib.format.read_magic and the header's length.
  const auto header_bytes = NpyDataOffset(std::string_view(reinterpret_cast<const char*>(d + skip), n - skip), "x.npy");
  if (!header_bytes.ok()) return NotLearnt(path, header_bytes.status().message());
  const uint64_t header = *header_bytes;
  if (header > l->member_size) return NotLearnt(path, "x.npy's .npy header is longer than the member");
  l->member_data = l->member_offset + skip;
  l->npy_header = header;
  stage_ = kKnown;
  want_ = want_len_ = 0;
  return Status::Ok();
}

// np.load on an .npy file: numpy.lib.format's magic, version and header length, as the indexer reads them.
Status NumpyLayoutLearner::LearnNpy(const unsigned char* d, uint64_t n, const char* path, FileLayout* l) {
  const auto header = NpyDataOffset(std::string_view(reinterpret_cast<const char*>(d), n), path);
  if (!header.ok()) return header.status();
  if (*header > l->size) {
    return Status::Corruption(std::string(path) + ": not a .npy file: its header (" + std::to_string(*header) +
                              " bytes) is longer than the file (" + std::to_string(l->size) + ")");
  }
  l->npy_header = *header;
  stage_ = kKnown;
  want_ = want_len_ = 0;
  return Status::Ok();
}

}  // namespace feedrate
