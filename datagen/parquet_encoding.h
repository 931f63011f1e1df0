// Parquet value encodings as Apache Arrow's C++ writer (pyarrow, DLIO's Parquet generator) produces them: the
// RLE/bit-packed hybrid for levels and dictionary indices, and the dictionary of a column chunk's values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace feedrate {

// Arrow's RleEncoder (arrow/util/rle_encoding.h), byte for byte: values are buffered 8 at a time; a group of 8
// equal values, counted from a group boundary, starts a repeated run (varint count<<1, then the value in
// ceil(width/8) little-endian bytes) that lasts while the value does; every other group joins a bit-packed literal
// run (one header byte, (groups<<1)|1, at most 63 groups); the last literal group is padded with zeros.
// Widths 0..32. Not thread-safe; reuse with Reset (it keeps its buffer).
class RleHybridEncoder {
 public:
  explicit RleHybridEncoder(int bit_width = 1) { Reset(bit_width); }
  void Reset(int bit_width);
  void Put(uint64_t value);
  // The same bytes as `count` calls of Put(value); O(1) for the part that extends a repeated run.
  void PutRun(uint64_t value, uint64_t count);
  // Ends the pending run and returns the encoded bytes (valid until the next Reset).
  const std::string& Finish();

  // Arrow's bounds: the most bytes `values` values can take, and the most one run can take. The dictionary
  // writer's page-size estimate is built from them (pages close on the estimate, not on the real size).
  static uint64_t MaxBufferSize(int bit_width, uint64_t values);
  static uint64_t MinBufferSize(int bit_width);

 private:
  void FlushBufferedValues(bool done);
  void FlushLiteralRun(bool update_indicator);
  void FlushRepeatedRun();

  int width_ = 1;
  std::string out_;
  uint64_t buffered_[8] = {};
  int num_buffered_ = 0;
  uint64_t current_ = 0;
  uint64_t repeat_ = 0;
  uint64_t literal_count_ = 0;
  size_t indicator_at_ = std::string::npos;  // the reserved header byte of the open literal run
};

// Arrow's bit width for dictionary indices: 0 for an empty dictionary, 1 for one entry, else ceil(log2(entries)).
int DictionaryIndexWidth(uint64_t entries);

// The distinct values of one column chunk in first-seen order, numbered as Arrow's memo table numbers them.
// Values are fixed-width (1..8 bytes) and compared by their bits (DLIO's draws hold no NaN and no -0.0, where
// Arrow's float comparison would differ). Memory: 12 bytes per entry plus the table; Clear keeps it.
class ValueDictionary {
 public:
  explicit ValueDictionary(size_t width = 4) : width_(width) {}
  // The index of the `width` bytes at `value` (little-endian), added when new.
  uint32_t IndexOf(const char* value);
  // IndexOf of each of the `n` values at `values` (back to back), appended to `out`: one call per batch, the
  // width resolved once (a call and a run-time-sized copy per value were most of DLRM's datagen time).
  void AppendIndices(const char* values, uint64_t n, std::vector<uint32_t>* out);
  uint64_t entries() const { return keys_.size(); }
  // The dictionary page's PLAIN size, what Arrow compares with dictionary_pagesize_limit.
  uint64_t encoded_bytes() const { return keys_.size() * width_; }
  // The dictionary page's PLAIN body: every entry in order, `width` bytes each.
  void AppendPlain(std::string* out) const;
  // Empties the dictionary for values of `width` bytes (the next chunk), keeping the memory.
  void Clear(size_t width);

 private:
  void Grow();
  template <typename T>
  void AppendIndicesOf(const char* values, uint64_t n, std::vector<uint32_t>* out);
  uint32_t Find(uint64_t key);
  size_t width_;
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> slots_;  // open addressing: entry index + 1, 0 empty
};

}  // namespace feedrate
