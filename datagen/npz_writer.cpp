// DLIO npz writer: zip STORED, force_zip64 local headers, CRC-32 computed while streaming the data.
#include "datagen/npz_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>

#include "loader/format/npy.h"
#include "loader/format/zip.h"
#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

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

Status PwriteAll(int fd, const char* p, size_t n, uint64_t off, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::Errno(path + ": write failed at offset " + std::to_string(off), errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

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
  l.y.crc32 = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(l.y_npy.data()), static_cast<uInt>(l.y_npy.size())));
  l.cd_offset = l.y.local_header_offset + ZipLocalHeaderSize("y.npy") + l.y.size;
  return l;
}

}  // namespace

uint64_t DlioNpzFileSize(const NpzFileSpec& spec) {
  Layout l = Plan(spec);
  return l.cd_offset + ZipCentralDirectory({l.x, l.y}, l.cd_offset).size();
}

Status WriteDlioNpz(const std::string& path, const NpzFileSpec& spec, uint64_t content_seed, AlignedBuffer* scratch) {
  namespace fs = std::filesystem;
  Layout l = Plan(spec);
  fs::path target(path);
  std::string tmp = (target.parent_path() / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) +
                                             "-" + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000)))
                        .string();
  int raw = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (raw < 0) return Status::Errno("cannot create " + tmp, errno);
  UniqueFd fd(raw);
  auto fail = [&](const Status& st) {
    fd.reset();
    ::unlink(tmp.c_str());
    return st;
  };

  // x.npy: header then data, CRC-32 accumulated as we go; the local header is written last with the CRC.
  uint64_t off = ZipLocalHeaderSize("x.npy");
  uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(l.x_header.data()), static_cast<uInt>(l.x_header.size()));
  Status st = PwriteAll(fd.get(), l.x_header.data(), l.x_header.size(), off, tmp);
  if (!st.ok()) return fail(st);
  off += l.x_header.size();
  FastBytes rng(content_seed);
  for (uint64_t left = l.x_data_bytes; left > 0;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, scratch->size()));
    rng.Fill(scratch->data(), n);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(scratch->data()), static_cast<uInt>(n));
    st = PwriteAll(fd.get(), scratch->data(), n, off, tmp);
    if (!st.ok()) return fail(st);
    off += n;
    left -= n;
  }
  l.x.crc32 = static_cast<uint32_t>(crc);
  std::string xh = ZipLocalHeader(l.x);
  std::string tail = ZipLocalHeader(l.y) + l.y_npy + ZipCentralDirectory({l.x, l.y}, l.cd_offset);
  st = PwriteAll(fd.get(), xh.data(), xh.size(), 0, tmp);
  if (st.ok()) st = PwriteAll(fd.get(), tail.data(), tail.size(), l.y.local_header_offset, tmp);
  if (!st.ok()) return fail(st);
  // close() reports delayed write errors (NFS, quotas), so check it before renaming into place.
  if (::close(fd.release()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::Errno(tmp + ": close failed", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::Errno("cannot rename " + tmp + " to " + path, err);
  }
  return Status::Ok();
}

}  // namespace feedrate
