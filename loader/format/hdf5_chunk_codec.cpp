// Hdf5ChunkDecoder: Fletcher-32 check, inflate and unshuffle, as libhdf5's H5Z filters do on read.
#include "loader/format/hdf5_chunk_codec.h"

#include <cstdio>
#include <cstring>

#include "loader/format/hdf5.h"

namespace feedrate {

namespace {
constexpr int kDeflateId = 1, kShuffleId = 2, kFletcher32Id = 3;  // H5Z_FILTER_* (H5Zpublic.h)
}  // namespace

Result<Hdf5ChunkCodec> MakeHdf5ChunkCodec(const H5DatasetInfo& d, const std::string& where) {
  Hdf5ChunkCodec c;
  c.chunk_bytes = d.itemsize;
  for (uint64_t x : d.chunks) c.chunk_bytes *= x;
  for (const auto& f : d.filters) {
    if (!c.description.empty()) c.description += "+";
    switch (f.id) {
      case kDeflateId:
        c.stages.push_back(Hdf5ChunkCodec::Stage::kDeflate);
        c.description += "deflate";
        break;
      case kShuffleId:
        c.stages.push_back(Hdf5ChunkCodec::Stage::kShuffle);
        c.shuffle_itemsize = f.cd_values.empty() || f.cd_values[0] == 0 ? static_cast<uint32_t>(d.itemsize) : f.cd_values[0];
        c.description += "shuffle";
        break;
      case kFletcher32Id:
        c.stages.push_back(Hdf5ChunkCodec::Stage::kFletcher32);
        c.description += "fletcher32";
        break;
      default:
        return Status::Unsupported(where + " uses HDF5 filter " + std::to_string(f.id) + (f.name.empty() ? "" : " (" + f.name + ")") +
                                   ", which Feedrate's training reader does not decode (deflate, shuffle and fletcher32 are supported)");
    }
  }
  return c;
}

uint32_t Hdf5Fletcher32(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t sum1 = 0, sum2 = 0;
  for (size_t words = n / 2; words > 0;) {
    size_t block = words > 360 ? 360 : words;  // 360 words cannot overflow the 32-bit sums
    words -= block;
    do {
      sum1 += (static_cast<uint32_t>(p[0]) << 8) | p[1];
      p += 2;
      sum2 += sum1;
    } while (--block);
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (n % 2 != 0) {
    sum1 += static_cast<uint32_t>(*p) << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

Hdf5ChunkDecoder::~Hdf5ChunkDecoder() {
  if (zs_ready_) inflateEnd(&zs_);
}

char* Hdf5ChunkDecoder::Scratch(int which, size_t n) {
  if (buf_[which].size() < n) buf_[which] = AlignedBuffer(n);  // grows to the largest chunk, then stays
  return buf_[which].data();
}

Status Hdf5ChunkDecoder::Decode(const Hdf5ChunkCodec& codec, uint32_t filter_mask, const char* in, size_t n,
                                const char** out) {
  const char* cur = in;
  size_t len = n;
  int next = 0;  // the scratch buffer the next stage writes into
  for (size_t k = codec.stages.size(); k-- > 0;) {
    if (k < 32 && (filter_mask >> k & 1u) != 0) continue;  // skipped for this chunk when it was written
    switch (codec.stages[k]) {
      case Hdf5ChunkCodec::Stage::kFletcher32: {
        if (len < 4) return Status::Corruption("Fletcher-32: " + std::to_string(len) + " bytes, too short for the checksum");
        len -= 4;
        uint32_t stored = 0;
        for (int b = 3; b >= 0; --b) stored = stored << 8 | static_cast<uint8_t>(cur[len + b]);  // little-endian
        const uint32_t sum = Hdf5Fletcher32(cur, len);
        // libhdf5 also accepts the byte-swapped sum that releases before 1.6.3 wrote on little-endian hosts.
        const uint32_t swapped = ((sum & 0x00ff00ffu) << 8) | ((sum & 0xff00ff00u) >> 8);
        if (stored != sum && stored != swapped) {
          char msg[96];
          std::snprintf(msg, sizeof msg, "Fletcher-32 checksum mismatch (stored 0x%08x, computed 0x%08x)", stored, sum);
          return Status::Corruption(msg);
        }
        break;
      }
      case Hdf5ChunkCodec::Stage::kDeflate: {
        if (!zs_ready_) {
          if (inflateInit(&zs_) != Z_OK) return Status::IoError("zlib inflateInit failed");
          zs_ready_ = true;
        } else if (inflateReset(&zs_) != Z_OK) {
          return Status::IoError("zlib inflateReset failed");
        }
        char* dst = Scratch(next, codec.chunk_bytes);
        zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(cur));
        zs_.avail_in = static_cast<uInt>(len);
        zs_.next_out = reinterpret_cast<Bytef*>(dst);
        zs_.avail_out = static_cast<uInt>(codec.chunk_bytes);
        const int rc = inflate(&zs_, Z_FINISH);
        if (rc != Z_STREAM_END) {
          return Status::Corruption(std::string("deflate: ") +
                                    (rc == Z_BUF_ERROR && zs_.avail_out == 0 ? "decodes to more than the chunk's " + std::to_string(codec.chunk_bytes) + " bytes"
                                     : zs_.msg != nullptr                   ? zs_.msg
                                                                           : "stream ends early"));
        }
        cur = dst;
        len = codec.chunk_bytes - zs_.avail_out;
        next ^= 1;
        break;
      }
      case Hdf5ChunkCodec::Stage::kShuffle: {
        const size_t s = codec.shuffle_itemsize;
        if (s <= 1 || len < s) break;  // nothing was shuffled
        char* dst = Scratch(next, len);
        const size_t elems = len / s;
        for (size_t j = 0; j < s; ++j) {
          const char* plane = cur + j * elems;
          for (size_t i = 0; i < elems; ++i) dst[i * s + j] = plane[i];
        }
        std::memcpy(dst + elems * s, cur + elems * s, len - elems * s);  // a tail shorter than one element
        cur = dst;
        next ^= 1;
        break;
      }
    }
  }
  if (len != codec.chunk_bytes) {
    return Status::Corruption("decoded chunk has " + std::to_string(len) + " bytes, expected " + std::to_string(codec.chunk_bytes));
  }
  *out = cur;
  return Status::Ok();
}

}  // namespace feedrate
