// TFRecord framing, indexing and checks.
#include "loader/format/tfrecord.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "loader/format/crc32c.h"
#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

uint64_t LoadU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian host (x86-64, aarch64)
  return v;
}
uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::string Hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}
std::string Where(std::string_view path, uint64_t record, uint64_t offset) {
  return std::string(path) + ": record " + std::to_string(record) + " at offset " + std::to_string(offset);
}

// Decodes and checks a header; returns the payload length.
Result<uint64_t> ParseHeader(const char* h, std::string_view path, uint64_t record, uint64_t offset) {
  uint64_t length = LoadU64(h);
  uint32_t stored = LoadU32(h + 8);
  uint32_t computed = MaskCrc(Crc32c(h, 8));
  if (stored != computed) {
    return Status::Corruption(Where(path, record, offset) + ": length CRC mismatch (stored " + Hex(stored) +
                              ", computed " + Hex(computed) + "): not a TFRecord file, or corrupt");
  }
  return length;
}

}  // namespace

void EncodeTfRecordHeader(uint64_t length, char out[kTfRecordHeaderBytes]) {
  std::memcpy(out, &length, 8);
  uint32_t crc = MaskCrc(Crc32c(out, 8));
  std::memcpy(out + 8, &crc, 4);
}

uint32_t TfRecordPayloadCrc(const void* payload, uint64_t n) { return MaskCrc(Crc32c(payload, n)); }

void TfRecordStreamCheck::Reset(bool verify_payload) {
  *this = TfRecordStreamCheck{};
  verify = verify_payload;
}

Status TfRecordStreamCheck::Feed(const char* data, uint64_t n, std::string_view path) {
  while (n > 0) {
    if (phase == 1) {  // payload
      const uint64_t take = std::min(n, left);
      if (verify) crc = Crc32cExtend(crc, data, take);
      left -= take;
      pos += take;
      data += take;
      n -= take;
      if (left == 0) phase = 2;
      continue;
    }
    const uint64_t want = phase == 0 ? kTfRecordHeaderBytes : kTfRecordFooterBytes;
    const uint64_t take = std::min<uint64_t>(n, want - have);
    std::memcpy(buf + have, data, take);
    have = static_cast<uint8_t>(have + take);
    pos += take;
    data += take;
    n -= take;
    if (have < want) continue;
    have = 0;
    if (phase == 0) {
      FEEDRATE_ASSIGN_OR_RETURN(left, ParseHeader(buf, path, record, record_at));
      crc = 0;
      phase = left > 0 ? 1 : 2;
      continue;
    }
    const uint32_t stored = LoadU32(buf);
    if (verify && stored != MaskCrc(crc)) {
      return Status::Corruption(Where(path, record, record_at) + ": payload CRC mismatch (stored " + Hex(stored) +
                                ", computed " + Hex(MaskCrc(crc)) + ")");
    }
    ++record;
    record_at = pos;
    phase = 0;
  }
  return Status::Ok();
}

Status TfRecordStreamCheck::End(std::string_view path) const {
  if (phase == 0 && have == 0) return Status::Ok();
  return Status::Corruption(Where(path, record, record_at) + ": truncated record at the end of the file (offset " +
                            std::to_string(pos) + ")");
}

Status CheckTfRecord(const char* rec, uint64_t expected_length, bool verify_payload, std::string_view path,
                     uint64_t record_index, uint64_t offset) {
  FEEDRATE_ASSIGN_OR_RETURN(auto length, ParseHeader(rec, path, record_index, offset));
  if (length != expected_length) {
    return Status::Corruption(Where(path, record_index, offset) + ": length field " + std::to_string(length) +
                              ", index says " + std::to_string(expected_length) + " (file changed since indexing?)");
  }
  if (verify_payload) {
    uint32_t stored = LoadU32(rec + kTfRecordHeaderBytes + expected_length);
    uint32_t computed = TfRecordPayloadCrc(rec + kTfRecordHeaderBytes, expected_length);
    if (stored != computed) {
      return Status::Corruption(Where(path, record_index, offset) + ": payload CRC mismatch (stored " + Hex(stored) +
                                ", computed " + Hex(computed) + ")");
    }
  }
  return Status::Ok();
}

Result<std::vector<TfRecordEntry>> ScanTfRecordFile(const ByteSource& src) {
  const uint64_t file_size = src.size();
  const std::string& path = src.name();
  constexpr uint64_t kWindow = 256 * 1024;
  std::vector<char> window(kWindow);
  uint64_t win_off = 0, win_len = 0;  // bytes of the file held in `window`
  std::vector<TfRecordEntry> out;
  for (uint64_t off = 0; off < file_size;) {
    uint64_t record = out.size();
    if (file_size - off < kTfRecordHeaderBytes) {
      return Status::Corruption(Where(path, record, off) + ": truncated header (" + std::to_string(file_size - off) +
                                " trailing bytes)");
    }
    if (off < win_off || off + kTfRecordHeaderBytes > win_off + win_len) {
      win_off = off;
      win_len = std::min(kWindow, file_size - off);
      FEEDRATE_RETURN_IF_ERROR(src.ReadAt(window.data(), win_len, win_off));
    }
    FEEDRATE_ASSIGN_OR_RETURN(auto length, ParseHeader(window.data() + (off - win_off), path, record, off));
    if (length > file_size - off - kTfRecordHeaderBytes ||
        file_size - off - kTfRecordHeaderBytes - length < kTfRecordFooterBytes) {
      return Status::Corruption(Where(path, record, off) + ": length " + std::to_string(length) +
                                " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
    }
    out.push_back({off, length});
    off += length + kTfRecordOverhead;
  }
  return out;
}

Result<std::vector<TfRecordEntry>> ProbeUniformTfRecordFile(const ByteSource& src) {
  const uint64_t file_size = src.size();
  const std::string& path = src.name();
  std::vector<TfRecordEntry> out;
  if (file_size < kTfRecordOverhead) return out;
  char h[kTfRecordHeaderBytes];
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(h, sizeof h, 0));
  FEEDRATE_ASSIGN_OR_RETURN(auto first, ParseHeader(h, path, 0, 0));
  const uint64_t stride = first + kTfRecordOverhead;
  if (first > file_size || file_size % stride != 0) return out;
  const uint64_t n = file_size / stride;
  for (uint64_t k : {n / 2, n - 1}) {
    if (k == 0) continue;
    FEEDRATE_RETURN_IF_ERROR(src.ReadAt(h, sizeof h, k * stride));
    auto len = ParseHeader(h, path, k, k * stride);
    if (!len.ok() || *len != first) return out;  // not uniform: let the full scan find what is wrong
  }
  out.reserve(n);
  for (uint64_t k = 0; k < n; ++k) out.push_back({k * stride, first});
  return out;
}

Result<std::vector<TfRecordEntry>> ReadTfRecordIndex(const std::string& idx_path, uint64_t data_file_size) {
  auto fd = OpenForRead(idx_path);
  if (!fd.ok()) return fd.status().WithContext("TFRecord index");
  FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd->get(), idx_path));
  return ReadTfRecordIndex(FdByteSource(fd->get(), size, idx_path), data_file_size);
}

Result<std::vector<TfRecordEntry>> ReadTfRecordIndex(const ByteSource& idx, uint64_t data_file_size) {
  // Parsed by hand from one buffer (one read, one ranged GET on S3): BERT-shaped datasets have 313,532 lines per
  // index file.
  const std::string& idx_path = idx.name();
  std::string text(idx.size(), '\0');
  if (!text.empty()) FEEDRATE_RETURN_IF_ERROR(idx.ReadAt(text.data(), text.size(), 0));
  std::vector<TfRecordEntry> out;
  uint64_t expect = 0, line_no = 0;
  const char* p = text.data();
  const char* const end = p + text.size();
  auto number = [&](uint64_t* v) {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    const char* start = p;
    uint64_t x = 0;
    for (; p < end && *p >= '0' && *p <= '9'; ++p) {
      if (x > (UINT64_MAX - 9) / 10) return false;
      x = x * 10 + static_cast<uint64_t>(*p - '0');
    }
    *v = x;
    return p > start;
  };
  while (p < end) {
    ++line_no;
    const char* line = p;
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (eol == nullptr) eol = end;
    if (eol == p) {  // empty line
      p = eol + 1;
      continue;
    }
    uint64_t off = 0, framed = 0;
    bool ok = number(&off) && number(&framed);
    while (ok && p < eol && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    if (!ok || p != eol) {
      return Status::Corruption(idx_path + ": line " + std::to_string(line_no) + ": expected \"<offset> <size>\", got \"" +
                                std::string(line, static_cast<size_t>(std::min<ptrdiff_t>(eol - line, 80))) + "\"");
    }
    if (off != expect || framed < kTfRecordOverhead || off > data_file_size || framed > data_file_size - off) {
      return Status::Corruption(idx_path + ": line " + std::to_string(line_no) + ": record at " + std::to_string(off) +
                                " of " + std::to_string(framed) + " bytes does not follow the previous record (expected offset " +
                                std::to_string(expect) + ") within the " + std::to_string(data_file_size) + "-byte data file");
    }
    out.push_back({off, framed - kTfRecordOverhead});
    expect = off + framed;
    p = eol + 1;
  }
  if (expect != data_file_size) {
    return Status::Corruption(idx_path + ": records cover " + std::to_string(expect) + " bytes, the data file has " +
                              std::to_string(data_file_size) + " (stale index?)");
  }
  return out;
}

std::string FormatTfRecordIndex(const std::vector<TfRecordEntry>& entries) {
  std::string s;
  s.reserve(entries.size() * 16);
  for (const auto& e : entries) {
    s += std::to_string(e.offset);
    s += ' ';
    s += std::to_string(e.framed());
    s += '\n';
  }
  return s;
}

std::string TfRecordIndexPath(const std::string& data_folder, const std::string& split, const std::string& data_path) {
  return (std::filesystem::path(data_folder) / "index" / split /
          (std::filesystem::path(data_path).filename().string() + ".idx")).string();
}

}  // namespace feedrate
