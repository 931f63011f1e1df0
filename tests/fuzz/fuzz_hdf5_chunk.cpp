// Fuzzes the HDF5 filtered-chunk decoder (deflate, shuffle, Fletcher-32 reversed in pipeline order, filter masks):
// the first bytes choose the pipeline, the chunk size and the mask; the rest is the stored chunk.
#include <cstdint>
#include <cstddef>

#include "loader/format/hdf5_chunk_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedrate;
  if (size < 4) return 0;
  Hdf5ChunkCodec codec;
  const uint8_t pipe = data[0];
  // Up to three stages in write order, each a known filter (bits 0-1, 2-3, 4-5; 3 = none).
  for (int i = 0; i < 3; ++i) {
    const int s = (pipe >> (2 * i)) & 3;
    if (s == 0) codec.stages.push_back(Hdf5ChunkCodec::Stage::kShuffle);
    if (s == 1) codec.stages.push_back(Hdf5ChunkCodec::Stage::kDeflate);
    if (s == 2) codec.stages.push_back(Hdf5ChunkCodec::Stage::kFletcher32);
  }
  codec.shuffle_itemsize = 1u << (data[1] & 3);  // 1, 2, 4, 8
  codec.chunk_bytes = (static_cast<uint64_t>(data[2]) << 4) + (data[3] & 15);  // up to 4095 decoded bytes
  const uint32_t mask = pipe >> 6;
  static Hdf5ChunkDecoder decoder;  // one per thread in the loader; reused across inputs as there
  const char* out = nullptr;
  (void)decoder.Decode(codec, mask, reinterpret_cast<const char*>(data) + 4, size - 4, &out);
  return 0;
}
