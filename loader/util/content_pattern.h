// Verifiable dataset content (`datagen --content verifiable`, `run --verify`): every payload byte is a pure function
// of (seed, the file's path relative to the data folder, the byte's offset in the file), so a reader can prove that
// the bytes it got came from this dataset and from that place, not from a stale, wrong or zeroed source.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "loader/status.h"
#include "loader/util/choices.h"

namespace feedrate {

// The per-file key: FNV-1a of the relative path (e.g. "train/img_001_of_168.npz") mixed with the seed.
uint64_t ContentKey(uint64_t seed, std::string_view relative_path);
// Byte o of the file is byte (o mod 8) of Word(o / 8), little-endian; Word is splitmix64 of key and word index.
void FillContent(uint64_t key, uint64_t file_offset, char* p, size_t n);
// Offset in [0, n) of the first byte of `p` (file bytes from `file_offset`) that differs from the pattern, or -1.
int64_t FirstContentMismatch(uint64_t key, uint64_t file_offset, const char* p, size_t n);
uint8_t ExpectedContentByte(uint64_t key, uint64_t file_offset);

// The payload within one sample's bytes (the part the pattern covers), as [begin, end) offsets into `data`:
// npy/npz after the npy header when the sample starts with one; tfrecord the Example's "image" bytes (found by
// walking the protobuf framing); raw/indexed_binary all of it. Formats whose stored bytes are not the payload
// (hdf5 through libhdf5, jpeg/png compressed) are Unsupported.
Result<std::pair<uint64_t, uint64_t>> ContentRange(DataFormat format, const char* data, uint64_t len);
// Whether datagen can write verifiable content for the format (and run --verify check it).
bool ContentVerifiable(DataFormat format);

// The marker datagen leaves in the data folder: "<data_folder>/.feedrate-content" with "verifiable seed=<N>".
std::string ContentMarkerPath(const std::string& data_folder);
std::string ContentMarkerText(uint64_t seed);
// The seed from a data folder's marker; NotFound when the dataset was not generated verifiable.
Result<uint64_t> ReadContentMarker(const std::string& data_folder);
// The seed in a marker's text (`where` names it in the error).
Result<uint64_t> ParseContentMarker(const std::string& text, const std::string& where);

}  // namespace feedrate
