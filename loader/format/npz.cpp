// .npz/.npy indexing and data streaming, with zlib for deflated members.
#include "loader/format/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "loader/format/crc32c.h"
#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

constexpr size_t kChunk = 1 << 20;

// Produces a member's uncompressed bytes in order, from a STORED or DEFLATED member.
class MemberReader {
 public:
  MemberReader(const ByteSource& src, const ZipMember& m, const std::string& path) : src_(src), m_(m), path_(path) {}
  ~MemberReader() {
    if (inflating_) inflateEnd(&zs_);
  }
  MemberReader(const MemberReader&) = delete;
  MemberReader& operator=(const MemberReader&) = delete;

  Status Init() {
    if (m_.method == kZipStored) return Status::Ok();
    if (m_.method != kZipDeflated) {
      return Status::Unsupported(path_ + ": member '" + m_.name + "' uses unsupported compression method " +
                                 std::to_string(m_.method));
    }
    std::memset(&zs_, 0, sizeof zs_);
    if (inflateInit2(&zs_, -15) != Z_OK) return Status::IoError(path_ + ": zlib inflateInit2 failed");
    inflating_ = true;
    in_.resize(kChunk);
    return Status::Ok();
  }

  // Fills `out` with up to `cap` bytes; returns the count (0 at the end of the member).
  Result<size_t> Read(char* out, size_t cap) {
    if (m_.method == kZipStored) {
      uint64_t left = m_.compressed_size - consumed_;
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, cap));
      if (n == 0) return size_t{0};
      FEEDRATE_RETURN_IF_ERROR(src_.ReadAt(out, n, m_.data_offset + consumed_));
      consumed_ += n;
      return n;
    }
    zs_.next_out = reinterpret_cast<Bytef*>(out);
    zs_.avail_out = static_cast<uInt>(cap);
    while (zs_.avail_out > 0 && !stream_end_) {
      if (zs_.avail_in == 0) {
        uint64_t left = m_.compressed_size - consumed_;
        size_t n = static_cast<size_t>(std::min<uint64_t>(left, in_.size()));
        if (n == 0) return Status::Corruption(path_ + ": deflated member '" + m_.name + "' ends before its data");
        FEEDRATE_RETURN_IF_ERROR(src_.ReadAt(in_.data(), n, m_.data_offset + consumed_));
        consumed_ += n;
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(n);
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        stream_end_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Status::Corruption(path_ + ": member '" + m_.name + "' is not valid deflate data (" +
                                  (zs_.msg ? zs_.msg : "zlib error") + ")");
      }
    }
    return static_cast<size_t>(cap - zs_.avail_out);
  }

 private:
  const ByteSource& src_;
  const ZipMember& m_;
  const std::string& path_;
  z_stream zs_{};
  bool inflating_ = false;
  bool stream_end_ = false;
  uint64_t consumed_ = 0;
  std::string in_;
};

// Reads the .npy header at the start of a member's uncompressed stream.
Result<NpyHeader> ReadMemberHeader(const ByteSource& src, const ZipMember& m, const std::string& path) {
  MemberReader r(src, m, path);
  FEEDRATE_RETURN_IF_ERROR(r.Init());
  std::string label = path + " member '" + m.name + "'";
  std::string buf(kNpyPreludeBytes, '\0');
  size_t have = 0;
  while (have < buf.size()) {
    FEEDRATE_ASSIGN_OR_RETURN(auto n, r.Read(buf.data() + have, buf.size() - have));
    if (n == 0) return Status::Corruption(label + ": too short for a .npy header");
    have += n;
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto off, NpyDataOffset(buf, label));
  if (off > (1u << 24)) return Status::Corruption(label + ": implausible .npy header length " + std::to_string(off));
  buf.resize(off);
  while (have < buf.size()) {
    FEEDRATE_ASSIGN_OR_RETURN(auto n, r.Read(buf.data() + have, buf.size() - have));
    if (n == 0) return Status::Corruption(label + ": truncated .npy header");
    have += n;
  }
  return ParseNpyHeader(buf, label);
}

}  // namespace

Result<std::vector<NpArray>> ReadNpzArrays(const ByteSource& src) {
  const std::string& path = src.name();
  FEEDRATE_ASSIGN_OR_RETURN(auto members, ReadZipDirectory(src));
  std::vector<NpArray> arrays;
  for (const auto& m : members) {
    NpArray a;
    a.name = m.name.size() > 4 && m.name.ends_with(".npy") ? m.name.substr(0, m.name.size() - 4) : m.name;
    a.member = m;
    FEEDRATE_ASSIGN_OR_RETURN(auto h, ReadMemberHeader(src, m, path));
    a.header = std::move(h);
    if (a.header.data_offset + a.header.nbytes > m.uncompressed_size) {
      return Status::Corruption(path + ": member '" + m.name + "' holds " + std::to_string(m.uncompressed_size) +
                                " bytes but its .npy header describes " +
                                std::to_string(a.header.data_offset + a.header.nbytes));
    }
    if (m.method == kZipStored) a.data_offset_in_file = m.data_offset + a.header.data_offset;
    arrays.push_back(std::move(a));
  }
  return arrays;
}

Result<NpArray> ReadNpyFile(const ByteSource& src) {
  const uint64_t file_size = src.size();
  const std::string& path = src.name();
  // The magic, version and header length, then the header: not a byte of the array (set-up reads no sample byte).
  std::string prefix(static_cast<size_t>(std::min<uint64_t>(file_size, kNpyPreludeBytes)), '\0');
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(prefix.data(), prefix.size(), 0));
  FEEDRATE_ASSIGN_OR_RETURN(auto off, NpyDataOffset(prefix, path));
  if (off > prefix.size()) {
    if (off > file_size) return Status::Corruption(path + ": file is truncated inside the .npy header");
    prefix.resize(off);
    FEEDRATE_RETURN_IF_ERROR(src.ReadAt(prefix.data(), prefix.size(), 0));
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto h, ParseNpyHeader(prefix, path));
  if (h.data_offset + h.nbytes > file_size) {
    return Status::Corruption(path + ": file is truncated: the array needs " + std::to_string(h.data_offset + h.nbytes) +
                              " bytes, the file has " + std::to_string(file_size));
  }
  NpArray a;
  a.header = std::move(h);
  a.data_offset_in_file = a.header.data_offset;
  return a;
}

Status StreamArrayData(const ByteSource& src, const NpArray& array, const ChunkSink& sink) {
  const std::string& path = src.name();
  std::string buf(kChunk, '\0');
  if (!array.member) {
    uint64_t off = *array.data_offset_in_file, left = array.header.nbytes;
    while (left > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
      FEEDRATE_RETURN_IF_ERROR(src.ReadAt(buf.data(), n, off));
      FEEDRATE_RETURN_IF_ERROR(sink(buf.data(), n));
      off += n;
      left -= n;
    }
    return Status::Ok();
  }
  const ZipMember& m = *array.member;
  MemberReader r(src, m, path);
  FEEDRATE_RETURN_IF_ERROR(r.Init());
  uint32_t crc = 0;
  uint64_t pos = 0, data_begin = array.header.data_offset, data_end = data_begin + array.header.nbytes;
  for (;;) {
    FEEDRATE_ASSIGN_OR_RETURN(auto n, r.Read(buf.data(), buf.size()));
    if (n == 0) break;
    crc = Crc32ZipExtend(crc, buf.data(), n);
    uint64_t lo = std::max(pos, data_begin), hi = std::min(pos + n, data_end);
    if (lo < hi) FEEDRATE_RETURN_IF_ERROR(sink(buf.data() + (lo - pos), static_cast<size_t>(hi - lo)));
    pos += n;
  }
  if (pos != m.uncompressed_size) {
    return Status::Corruption(path + ": member '" + m.name + "' has " + std::to_string(pos) + " bytes, expected " +
                              std::to_string(m.uncompressed_size));
  }
  if (crc != m.crc32) {
    return Status::Corruption(path + ": member '" + m.name + "' fails its CRC-32 check");
  }
  return Status::Ok();
}

Result<NumpyFileKind> DetectNumpyFileKind(const ByteSource& src) {
  const uint64_t file_size = src.size();
  char magic[6] = {};
  size_t n = static_cast<size_t>(std::min<uint64_t>(file_size, sizeof magic));
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(magic, n, 0));
  if (n == 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0) return NumpyFileKind::kNpy;
  if (n >= 4 && std::memcmp(magic, "PK\x03\x04", 4) == 0) return NumpyFileKind::kNpz;
  if (n >= 4 && std::memcmp(magic, "PK\x05\x06", 4) == 0) return NumpyFileKind::kNpz;  // empty archive
  return NumpyFileKind::kUnknown;
}

}  // namespace feedrate
