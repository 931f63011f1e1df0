// ZIP central directory reader and numpy-compatible STORED zip layout writer.
#include "loader/format/zip.h"

#include <algorithm>
#include <cstring>

#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kMaxComment = 0xffff;
// CPython's zipfile.ZIP64_LIMIT: above it, sizes and offsets move into zip64 fields.
constexpr uint64_t kZip64Limit = (1ull << 31) - 1;

uint64_t Le64(const unsigned char* p) { return ZipLe32(p) | (static_cast<uint64_t>(ZipLe32(p + 4)) << 32); }

void Put16(std::string* s, uint16_t v) {
  s->push_back(static_cast<char>(v & 0xff));
  s->push_back(static_cast<char>(v >> 8));
}
void Put32(std::string* s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void Put64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

Status NotZip(const std::string& path, const std::string& why) {
  return Status::Corruption(path + ": not a valid zip/npz archive: " + why);
}

}  // namespace

namespace {

// Where the central directory is: the end record (the last signature whose comment reaches exactly to the end of
// the file), or its zip64 record when the locator precedes it.
struct CentralDirectory {
  uint64_t entries = 0, size = 0, offset = 0;
};

// The end record in `tail` (the file's last bytes): the last one whose comment ends the file, or -1.
int64_t FindEndRecord(const std::string& tail) {
  const auto* t = reinterpret_cast<const unsigned char*>(tail.data());
  for (int64_t i = static_cast<int64_t>(tail.size()) - 22; i >= 0; --i) {
    if (ZipLe32(t + i) == kZipEndSig && static_cast<uint64_t>(i) + 22 + ZipLe16(t + i + 20) == tail.size()) return i;
  }
  return -1;
}

// The file's last `len` bytes.
Result<std::string> ReadTail(const ByteSource& src, uint64_t len) {
  std::string tail(len, '\0');
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(tail.data(), len, src.size() - len));
  return tail;
}

Result<CentralDirectory> FindCentralDirectory(const ByteSource& src) {
  const uint64_t file_size = src.size();
  const std::string& path = src.name();
  if (file_size < 22) return NotZip(path, "file is " + std::to_string(file_size) + " bytes, too small");
  // A zip without a comment (numpy's, Feedrate's) ends with its 22-byte end record, the zip64 locator before it:
  // those 42 bytes first, as zipfile reads the end record first. Only a comment needs the 64 KiB search, whose
  // tail would hold the last member's bytes (set-up reads no sample byte it does not need).
  FEEDRATE_ASSIGN_OR_RETURN(auto tail, ReadTail(src, std::min<uint64_t>(file_size, 22 + 20)));
  int64_t eocd = FindEndRecord(tail);
  if (eocd < 0 && file_size > tail.size()) {
    FEEDRATE_ASSIGN_OR_RETURN(tail, ReadTail(src, std::min<uint64_t>(file_size, 22 + kMaxComment + 20)));
    eocd = FindEndRecord(tail);
  }
  if (eocd < 0) return NotZip(path, "no end-of-central-directory record (truncated or not a zip)");
  const auto* t = reinterpret_cast<const unsigned char*>(tail.data());
  CentralDirectory cd{ZipLe16(t + eocd + 10), ZipLe32(t + eocd + 12), ZipLe32(t + eocd + 16)};
  if (eocd >= 20 && ZipLe32(t + eocd - 20) == kZip64LocatorSig) {
    uint64_t z64_off = Le64(t + eocd - 20 + 8);
    if (z64_off + 56 > file_size) return NotZip(path, "zip64 end record points past end of file");
    unsigned char z[56];
    FEEDRATE_RETURN_IF_ERROR(src.ReadAt(z, sizeof z, z64_off));
    if (ZipLe32(z) != kZip64EocdSig) return NotZip(path, "bad zip64 end record signature");
    cd = {Le64(z + 32), Le64(z + 40), Le64(z + 48)};
  }
  if (cd.offset > file_size || cd.size > file_size - cd.offset) {
    return NotZip(path, "central directory (offset " + std::to_string(cd.offset) + ", " + std::to_string(cd.size) +
                            " bytes) lies beyond the end of the " + std::to_string(file_size) + "-byte file");
  }
  if (cd.entries > cd.size / 46) return NotZip(path, "central directory entry count is inconsistent");
  return cd;
}

// A zip64 extra field: only the fields whose 32-bit value is 0xFFFFFFFF are present, in this order.
void ApplyZip64Extra(const unsigned char* x, uint32_t extra_len, ZipMember* m) {
  for (uint32_t xo = 0; xo + 4 <= extra_len;) {
    uint16_t id = ZipLe16(x + xo), sz = ZipLe16(x + xo + 2);
    if (xo + 4 + sz > extra_len) break;
    if (id == 0x0001) {
      const unsigned char* f = x + xo + 4;
      uint32_t used = 0;
      for (uint64_t* field : {&m->uncompressed_size, &m->compressed_size, &m->local_header_offset}) {
        if (*field == kZip32Max && used + 8 <= sz) {
          *field = Le64(f + used);
          used += 8;
        }
      }
    }
    xo += 4 + sz;
  }
}

// The central directory's entries: name, method, CRC, sizes and local header offset of each member.
Result<std::vector<ZipMember>> ReadCentralEntries(const ByteSource& src, const CentralDirectory& dir) {
  const std::string& path = src.name();
  std::string cd(dir.size, '\0');
  FEEDRATE_RETURN_IF_ERROR(src.ReadAt(cd.data(), dir.size, dir.offset));
  const auto* c = reinterpret_cast<const unsigned char*>(cd.data());
  std::vector<ZipMember> members;
  members.reserve(dir.entries);
  uint64_t pos = 0;
  for (uint64_t k = 0; k < dir.entries; ++k) {
    if (pos + 46 > dir.size || ZipLe32(c + pos) != kZipCentralSig)
      return NotZip(path, "corrupt central directory entry");
    ZipMember m;
    m.method = ZipLe16(c + pos + 10);
    m.crc32 = ZipLe32(c + pos + 16);
    m.compressed_size = ZipLe32(c + pos + 20);
    m.uncompressed_size = ZipLe32(c + pos + 24);
    uint16_t name_len = ZipLe16(c + pos + 28), extra_len = ZipLe16(c + pos + 30), comment_len = ZipLe16(c + pos + 32);
    m.local_header_offset = ZipLe32(c + pos + 42);
    if (pos + 46 + name_len + extra_len + comment_len > dir.size) return NotZip(path, "central directory entry overruns");
    m.name.assign(cd.data() + pos + 46, name_len);
    ApplyZip64Extra(c + pos + 46 + name_len, extra_len, &m);
    pos += 46 + name_len + extra_len + comment_len;
    members.push_back(std::move(m));
  }
  return members;
}

}  // namespace

Result<std::vector<ZipMember>> ReadZipDirectory(const ByteSource& src) {
  const uint64_t file_size = src.size();
  const std::string& path = src.name();
  FEEDRATE_ASSIGN_OR_RETURN(const CentralDirectory dir, FindCentralDirectory(src));
  FEEDRATE_ASSIGN_OR_RETURN(std::vector<ZipMember> members, ReadCentralEntries(src, dir));
  // Each member's data starts after its local header (whose name and extra lengths may differ from the central one's).
  for (auto& m : members) {
    unsigned char lh[30];
    if (m.local_header_offset + 30 > file_size) return NotZip(path, "member '" + m.name + "' header lies past end of file");
    FEEDRATE_RETURN_IF_ERROR(src.ReadAt(lh, sizeof lh, m.local_header_offset));
    if (ZipLe32(lh) != kZipLocalSig) return NotZip(path, "bad local header signature for member '" + m.name + "'");
    m.data_offset = m.local_header_offset + 30 + ZipLe16(lh + 26) + ZipLe16(lh + 28);
    if (m.data_offset > file_size || m.compressed_size > file_size - m.data_offset) {
      return Status::Corruption(path + ": file is truncated: member '" + m.name + "' needs bytes up to offset " +
                                std::to_string(m.data_offset + m.compressed_size) + " but the file has " +
                                std::to_string(file_size));
    }
  }
  return members;
}

std::string ZipLocalHeader(const ZipEntryPlan& e) {
  bool big = e.size > kZip64Limit;
  std::string h;
  Put32(&h, kZipLocalSig);
  Put16(&h, big ? 45 : 20);  // version needed (45 only when zip64 is really required, as CPython does)
  Put16(&h, 0);              // flags
  Put16(&h, kZipStored);
  Put16(&h, 0);              // time 00:00:00
  Put16(&h, 0x21);           // date 1980-01-01
  Put32(&h, e.crc32);
  Put32(&h, big ? kZip32Max : static_cast<uint32_t>(e.size));
  Put32(&h, big ? kZip32Max : static_cast<uint32_t>(e.size));
  Put16(&h, static_cast<uint16_t>(e.name.size()));
  Put16(&h, 20);  // zip64 extra, always present (numpy opens members with force_zip64=True)
  h += e.name;
  Put16(&h, 0x0001);
  Put16(&h, 16);
  Put64(&h, e.size);
  Put64(&h, e.size);
  return h;
}

std::string ZipCentralDirectory(const std::vector<ZipEntryPlan>& entries, uint64_t cd_offset) {
  std::string cd;
  for (const auto& e : entries) {
    bool big_size = e.size > kZip64Limit;
    bool big_off = e.local_header_offset > kZip64Limit;
    std::string extra;
    if (big_size || big_off) {
      if (big_size) {
        Put64(&extra, e.size);
        Put64(&extra, e.size);
      }
      if (big_off) Put64(&extra, e.local_header_offset);
      std::string hdr;
      Put16(&hdr, 0x0001);
      Put16(&hdr, static_cast<uint16_t>(extra.size()));
      extra.insert(0, hdr);
    }
    uint16_t version = (big_size || big_off) ? 45 : 20;
    Put32(&cd, kZipCentralSig);
    Put16(&cd, static_cast<uint16_t>(0x0300 | version));  // made by: Unix
    Put16(&cd, version);
    Put16(&cd, 0);
    Put16(&cd, kZipStored);
    Put16(&cd, 0);
    Put16(&cd, 0x21);
    Put32(&cd, e.crc32);
    Put32(&cd, big_size ? kZip32Max : static_cast<uint32_t>(e.size));
    Put32(&cd, big_size ? kZip32Max : static_cast<uint32_t>(e.size));
    Put16(&cd, static_cast<uint16_t>(e.name.size()));
    Put16(&cd, static_cast<uint16_t>(extra.size()));
    Put16(&cd, 0);  // comment
    Put16(&cd, 0);  // disk
    Put16(&cd, 0);  // internal attrs
    Put32(&cd, 0600u << 16);  // external attrs: -rw-------
    Put32(&cd, big_off ? kZip32Max : static_cast<uint32_t>(e.local_header_offset));
    cd += e.name;
    cd += extra;
  }
  uint64_t cd_size = cd.size();
  bool need64 = cd_offset > kZip64Limit || cd_size > kZip64Limit || entries.size() > 0xffff;
  if (need64) {
    uint64_t z64_offset = cd_offset + cd_size;
    Put32(&cd, kZip64EocdSig);
    Put64(&cd, 44);
    Put16(&cd, 45);
    Put16(&cd, 45);
    Put32(&cd, 0);
    Put32(&cd, 0);
    Put64(&cd, entries.size());
    Put64(&cd, entries.size());
    Put64(&cd, cd_size);
    Put64(&cd, cd_offset);
    Put32(&cd, kZip64LocatorSig);
    Put32(&cd, 0);
    Put64(&cd, z64_offset);
    Put32(&cd, 1);
  }
  Put32(&cd, kZipEndSig);
  Put16(&cd, 0);
  Put16(&cd, 0);
  uint16_t n16 = entries.size() > 0xffff ? 0xffff : static_cast<uint16_t>(entries.size());
  Put16(&cd, n16);
  Put16(&cd, n16);
  Put32(&cd, cd_size >= kZip32Max ? kZip32Max : static_cast<uint32_t>(cd_size));
  Put32(&cd, cd_offset >= kZip32Max ? kZip32Max : static_cast<uint32_t>(cd_offset));
  Put16(&cd, 0);
  return cd;
}

}  // namespace feedrate
