// PNG writer: signature, IHDR, IDAT chunks straight from a zlib stream of filter-0 rows, IEND (CRC-32 by ISA-L).
#include "datagen/png_writer.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "datagen/temp_file.h"
#include "loader/format/crc32c.h"
#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

constexpr size_t kPngIdatChunk = 64 * 1024;

void Put32(std::string* s, uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  s->append(b, 4);
}

std::string Chunk(const char* type, const char* data, size_t n) {
  std::string c;
  Put32(&c, static_cast<uint32_t>(n));
  c.append(type, 4);
  c.append(data, n);
  Put32(&c, Crc32ZipExtend(Crc32Zip(type, 4), data, n));
  return c;
}

struct Deflater {
  z_stream z{};
  bool ready = false;
  ~Deflater() {
    if (ready) deflateEnd(&z);
  }
};

}  // namespace

Status WritePng(const std::string& path, uint64_t d1, uint64_t d2, uint64_t content_seed, AlignedBuffer* scratch) {
  if (d1 > 0x7fffffff || d2 > 0x7fffffff) return Status::InvalidArgument(path + ": image too large for PNG");
  FEEDRATE_ASSIGN_OR_RETURN(auto file, TempFile::Create(path));
  std::string head("\x89PNG\r\n\x1a\n", 8), ihdr;
  Put32(&ihdr, static_cast<uint32_t>(d2));  // width
  Put32(&ihdr, static_cast<uint32_t>(d1));  // height
  ihdr += std::string("\x08\x00\x00\x00\x00", 5);  // 8-bit grayscale, deflate, adaptive filtering, no interlace
  head += Chunk("IHDR", ihdr.data(), ihdr.size());
  uint64_t off = 0;
  FEEDRATE_RETURN_IF_ERROR(file.WriteAt(head.data(), head.size(), off));
  off += head.size();
  Deflater d;
  if (deflateInit(&d.z, Z_DEFAULT_COMPRESSION) != Z_OK) return Status::IoError("zlib deflateInit failed");
  d.ready = true;
  FastBytes rng(content_seed);
  std::vector<char> row(d2 + 1, 0);  // filter byte 0 ("none") then the pixels
  // IDAT chunks of 64 KiB, as PIL (DLIO's generator) writes them: PIL's reader reads a chunk at a time, so a reader
  // of either tool's files makes the same requests (and Feedrate's DLIO pattern for PNG assumes this layout).
  const size_t cap = std::min<size_t>(scratch->size(), kPngIdatChunk);
  auto emit = [&](int flush) -> Status {
    do {
      d.z.next_out = reinterpret_cast<Bytef*>(scratch->data());
      d.z.avail_out = static_cast<uInt>(cap);
      if (deflate(&d.z, flush) == Z_STREAM_ERROR) return Status::IoError("zlib deflate failed");
      size_t produced = cap - d.z.avail_out;
      if (produced > 0) {
        std::string c = Chunk("IDAT", scratch->data(), produced);
        FEEDRATE_RETURN_IF_ERROR(file.WriteAt(c.data(), c.size(), off));
        off += c.size();
      }
    } while (d.z.avail_out == 0);
    return Status::Ok();
  };
  for (uint64_t r = 0; r < d1; ++r) {
    rng.Fill(row.data() + 1, d2);
    d.z.next_in = reinterpret_cast<Bytef*>(row.data());
    d.z.avail_in = static_cast<uInt>(row.size());
    FEEDRATE_RETURN_IF_ERROR(emit(Z_NO_FLUSH));
  }
  FEEDRATE_RETURN_IF_ERROR(emit(Z_FINISH));
  std::string end = Chunk("IEND", "", 0);
  FEEDRATE_RETURN_IF_ERROR(file.WriteAt(end.data(), end.size(), off));
  return file.Commit();
}

bool PngHasSize(const std::string& path, uint64_t d1, uint64_t d2) {
  auto fd = OpenForRead(path);
  if (!fd.ok()) return false;
  unsigned char h[24];
  if (!PreadFull(fd->get(), h, sizeof h, 0, path).ok() || std::memcmp(h, "\x89PNG\r\n\x1a\n", 8) != 0) return false;
  auto be32 = [&](int i) { return (uint64_t{h[i]} << 24) | (uint64_t{h[i + 1]} << 16) | (uint64_t{h[i + 2]} << 8) | h[i + 3]; };
  return be32(16) == d2 && be32(20) == d1;
}

}  // namespace feedrate
