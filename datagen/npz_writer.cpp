// DLIO npz writer: zip STORED, force_zip64 local headers, CRC-32 computed while streaming the data.
#include "datagen/npz_writer.h"

#include <algorithm>
#include <cstring>

#include "loader/format/crc32c.h"
#include "loader/format/npy.h"
#include "loader/format/zip.h"
#include "datagen/temp_file.h"

namespace feedrate {
namespace {

struct Layout {
  std::string x_header, y_npy;
  ZipEntryPlan x, y;
  uint64_t x_data_bytes = 0, cd_offset = 0;
};

Layout Plan(const NpzFileSpec& s) {
  Layout l;
  l.x_header = MakeNpyHeader("|u1", {s.d1, s.d2, s.samples});
  l.y_npy = MakeNpyHeader("<i8", {s.samples});
  l.y_npy.append(8 * s.samples, '\0');
  l.x_data_bytes = s.d1 * s.d2 * s.samples;
  l.x = {"x.npy", l.x_header.size() + l.x_data_bytes, 0, 0};
  l.y = {"y.npy", l.y_npy.size(), 0, ZipLocalHeaderSize("x.npy") + l.x.size};
  l.y.crc32 = Crc32Zip(l.y_npy.data(), l.y_npy.size());
  l.cd_offset = l.y.local_header_offset + ZipLocalHeaderSize("y.npy") + l.y.size;
  return l;
}

}  // namespace

uint64_t DlioNpzFileSize(const NpzFileSpec& spec) {
  Layout l = Plan(spec);
  return l.cd_offset + ZipCentralDirectory({l.x, l.y}, l.cd_offset).size();
}

Status WriteDlioNpz(const std::string& path, const NpzFileSpec& spec, const ContentSpec& content, AlignedBuffer* scratch) {
  Layout l = Plan(spec);
  FEEDRATE_ASSIGN_OR_RETURN(auto file, TempFile::Create(path));
  // x.npy: header then data, CRC-32 accumulated as we go; the local header is written last with the CRC.
  uint64_t off = ZipLocalHeaderSize("x.npy");
  uint32_t crc = Crc32Zip(l.x_header.data(), l.x_header.size());
  FEEDRATE_RETURN_IF_ERROR(file.WriteAt(l.x_header.data(), l.x_header.size(), off));
  off += l.x_header.size();
  ContentSource rng(content);
  for (uint64_t left = l.x_data_bytes; left > 0;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, scratch->size()));
    rng.Fill(scratch->data(), off, n);
    crc = Crc32ZipExtend(crc, scratch->data(), n);
    FEEDRATE_RETURN_IF_ERROR(file.WriteAt(scratch->data(), n, off));
    off += n;
    left -= n;
  }
  l.x.crc32 = crc;
  std::string xh = ZipLocalHeader(l.x);
  std::string tail = ZipLocalHeader(l.y) + l.y_npy + ZipCentralDirectory({l.x, l.y}, l.cd_offset);
  FEEDRATE_RETURN_IF_ERROR(file.WriteAt(xh.data(), xh.size(), 0));
  FEEDRATE_RETURN_IF_ERROR(file.WriteAt(tail.data(), tail.size(), l.y.local_header_offset));
  return file.Commit();
}

}  // namespace feedrate
