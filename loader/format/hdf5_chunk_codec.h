// Decoding HDF5 filtered chunks read raw by the I/O engines: the filters h5py and most writers use (deflate,
// shuffle, Fletcher-32), reversed in pipeline order, without the library (its filter pipeline is not public API).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loader/io/aligned_buffer.h"
#include "loader/status.h"

namespace feedrate {

struct H5DatasetInfo;

// One dataset's filter pipeline, in write order (the first filter was applied first).
struct Hdf5ChunkCodec {
  enum class Stage : uint8_t { kDeflate, kShuffle, kFletcher32 };
  std::vector<Stage> stages;
  uint32_t shuffle_itemsize = 1;
  uint64_t chunk_bytes = 0;  // decoded size of one chunk
  std::string description;   // "shuffle+deflate+fletcher32"
};

// The codec for a chunked dataset's filters; Unsupported naming the dataset and the filter when a filter is not
// one of those above (szip, scale-offset, n-bit, plugins such as LZF).
Result<Hdf5ChunkCodec> MakeHdf5ChunkCodec(const H5DatasetInfo& d, const std::string& where);

// HDF5's Fletcher-32 (H5_checksum_fletcher32: big-endian 16-bit words, an odd last byte as the high byte).
uint32_t Hdf5Fletcher32(const void* data, size_t n);

// Decodes stored chunks; owns its zlib stream and two buffers, grown to the largest chunk seen, so decoding
// allocates nothing per chunk. One per thread.
class Hdf5ChunkDecoder {
 public:
  Hdf5ChunkDecoder() = default;
  ~Hdf5ChunkDecoder();
  Hdf5ChunkDecoder(const Hdf5ChunkDecoder&) = delete;
  Hdf5ChunkDecoder& operator=(const Hdf5ChunkDecoder&) = delete;

  // Reverses codec's stages on the `n` stored bytes at `in`, skipping stage i when bit i of `filter_mask` is set
  // (the writer skipped an optional filter for this chunk, e.g. deflate that did not shrink it). On success *out
  // points at codec.chunk_bytes decoded bytes (valid until the next call). Errors say what failed; the caller
  // adds the file and offset.
  Status Decode(const Hdf5ChunkCodec& codec, uint32_t filter_mask, const char* in, size_t n, const char** out);

 private:
  char* Scratch(int which, size_t n);
  z_stream zs_{};
  bool zs_ready_ = false;
  AlignedBuffer buf_[2];
};

}  // namespace feedrate
