// Parquet page codecs (see parquet_codec.h).
#include "loader/format/parquet_codec.h"

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "loader/format/parquet.h"

namespace feedrate {

namespace {

Status Gzip(std::string_view in, std::string* out) {
  z_stream z{};
  // windowBits 15 + 16: a gzip member, as Parquet's GZIP codec is (RFC 1952); level 6, zlib's and Arrow's default.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status::IoError("gzip: deflateInit2 failed");
  }
  out->resize(deflateBound(&z, in.size()) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const int rc = deflate(&z, Z_FINISH);
  out->resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? Status::Ok() : Status::IoError("gzip: deflate failed");
}

Status Gunzip(std::string_view in, char* out, size_t out_size) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Status::IoError("gzip: inflateInit2 failed");  // gzip or zlib header
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out);
  z.avail_out = static_cast<uInt>(out_size);
  const int rc = inflate(&z, Z_FINISH);
  const size_t got = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || got != out_size) {
    return Status::Corruption("gzip page: " + std::string(rc == Z_STREAM_END ? "size mismatch" : "corrupt stream"));
  }
  return Status::Ok();
}

// Hadoop's LZ4 framing (the legacy LZ4 codec): blocks of [u32 BE decompressed size][u32 BE compressed size][data].
Status HadoopLz4(std::string_view in, char* out, size_t out_size) {
  size_t ip = 0, op = 0;
  auto be32 = [&](size_t at) {
    const auto* b = reinterpret_cast<const unsigned char*>(in.data() + at);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  };
  while (ip + 8 <= in.size()) {
    const uint32_t raw = be32(ip), comp = be32(ip + 4);
    ip += 8;
    if (comp > in.size() - ip || raw > out_size - op) return Status::Corruption("LZ4 (Hadoop) page: block runs past the page");
    const int n = LZ4_decompress_safe(in.data() + ip, out + op, static_cast<int>(comp), static_cast<int>(raw));
    if (n < 0 || static_cast<uint32_t>(n) != raw) return Status::Corruption("LZ4 (Hadoop) page: corrupt block");
    ip += comp;
    op += raw;
  }
  return ip == in.size() && op == out_size ? Status::Ok() : Status::Corruption("LZ4 (Hadoop) page: size mismatch");
}

}  // namespace

int32_t ParquetCodecFor(const std::string& compression) {
  if (compression == "none") return static_cast<int32_t>(PqCodec::kUncompressed);
  if (compression == "snappy") return static_cast<int32_t>(PqCodec::kSnappy);
  if (compression == "gzip") return static_cast<int32_t>(PqCodec::kGzip);
  if (compression == "zstd") return static_cast<int32_t>(PqCodec::kZstd);
  if (compression == "lz4") return static_cast<int32_t>(PqCodec::kLz4Raw);
  return -1;
}

Status ParquetCompress(int32_t codec, std::string_view in, std::string* out) {
  out->clear();
  switch (static_cast<PqCodec>(codec)) {
    case PqCodec::kUncompressed:
      out->assign(in);
      return Status::Ok();
    case PqCodec::kSnappy: {
      size_t n = snappy_max_compressed_length(in.size());
      out->resize(n);
      if (snappy_compress(in.data(), in.size(), out->data(), &n) != SNAPPY_OK) return Status::IoError("snappy: compress failed");
      out->resize(n);
      return Status::Ok();
    }
    case PqCodec::kGzip:
      return Gzip(in, out);
    case PqCodec::kZstd: {
      out->resize(ZSTD_compressBound(in.size()));
      const size_t n = ZSTD_compress(out->data(), out->size(), in.data(), in.size(), 1);  // Arrow's default level
      if (ZSTD_isError(n)) return Status::IoError(std::string("zstd: ") + ZSTD_getErrorName(n));
      out->resize(n);
      return Status::Ok();
    }
    case PqCodec::kLz4Raw: {
      out->resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(in.size()))));
      const int n = LZ4_compress_default(in.data(), out->data(), static_cast<int>(in.size()), static_cast<int>(out->size()));
      if (n <= 0) return Status::IoError("lz4: compress failed");
      out->resize(static_cast<size_t>(n));
      return Status::Ok();
    }
    default:
      return Status::Unsupported(std::string("writing Parquet codec ") + PqCodecName(codec));
  }
}

Status ParquetDecompress(int32_t codec, std::string_view in, char* out, size_t out_size) {
  switch (static_cast<PqCodec>(codec)) {
    case PqCodec::kUncompressed:
      if (in.size() != out_size) return Status::Corruption("uncompressed page: size mismatch");
      std::memcpy(out, in.data(), out_size);
      return Status::Ok();
    case PqCodec::kSnappy: {
      size_t n = out_size;
      if (snappy_uncompress(in.data(), in.size(), out, &n) != SNAPPY_OK || n != out_size) {
        return Status::Corruption("snappy page: corrupt or wrong size");
      }
      return Status::Ok();
    }
    case PqCodec::kGzip:
      return Gunzip(in, out, out_size);
    case PqCodec::kZstd: {
      const size_t n = ZSTD_decompress(out, out_size, in.data(), in.size());
      if (ZSTD_isError(n) || n != out_size) return Status::Corruption("zstd page: corrupt or wrong size");
      return Status::Ok();
    }
    case PqCodec::kLz4Raw: {
      const int n = LZ4_decompress_safe(in.data(), out, static_cast<int>(in.size()), static_cast<int>(out_size));
      if (n < 0 || static_cast<size_t>(n) != out_size) return Status::Corruption("LZ4_RAW page: corrupt or wrong size");
      return Status::Ok();
    }
    case PqCodec::kLz4: {
      // Older writers put raw LZ4 blocks under this id; Hadoop's framing is tried first, as Arrow does.
      if (HadoopLz4(in, out, out_size).ok()) return Status::Ok();
      const int n = LZ4_decompress_safe(in.data(), out, static_cast<int>(in.size()), static_cast<int>(out_size));
      if (n < 0 || static_cast<size_t>(n) != out_size) return Status::Corruption("LZ4 page: corrupt or wrong size");
      return Status::Ok();
    }
    default:
      return Status::Unsupported(std::string("Parquet codec ") + PqCodecName(codec) + " is not read");
  }
}

}  // namespace feedrate
