// Arrow-identical RLE/bit-packed hybrid encoding and chunk dictionaries (see parquet_encoding.h).
#include "datagen/parquet_encoding.h"

#include <algorithm>
#include <cstring>

namespace feedrate {

namespace {

constexpr uint64_t kGroupsPerLiteralRun = 63;  // Arrow: a literal run ends when one more group would need 64

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer: spreads float bit patterns over the table
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

void RleHybridEncoder::Reset(int bit_width) {
  width_ = bit_width;
  out_.clear();
  num_buffered_ = 0;
  current_ = 0;
  repeat_ = 0;
  literal_count_ = 0;
  indicator_at_ = std::string::npos;
}

// Arrow's RleEncoder::Put: a value equal to the last one extends the count; a ninth equal value in a row is a
// repeated run's continuation and is not buffered.
void RleHybridEncoder::Put(uint64_t value) {
  if (value == current_) {
    if (++repeat_ > 8) return;
  } else {
    if (repeat_ >= 8) FlushRepeatedRun();
    repeat_ = 1;
    current_ = value;
  }
  buffered_[num_buffered_] = value;
  if (++num_buffered_ == 8) FlushBufferedValues(false);
}

void RleHybridEncoder::PutRun(uint64_t value, uint64_t count) {
  // Once a repeated run of `value` is under way, Put only counts.
  for (; count > 0 && !(value == current_ && repeat_ >= 8); --count) Put(value);
  repeat_ += count;
}

void RleHybridEncoder::FlushBufferedValues(bool done) {
  if (repeat_ >= 8) {  // the 8 buffered values are the start of a repeated run
    num_buffered_ = 0;
    if (literal_count_ != 0) FlushLiteralRun(true);
    return;
  }
  literal_count_ += static_cast<uint64_t>(num_buffered_);
  FlushLiteralRun(done || literal_count_ / 8 + 1 > kGroupsPerLiteralRun);
  repeat_ = 0;
}

void RleHybridEncoder::FlushLiteralRun(bool update_indicator) {
  if (indicator_at_ == std::string::npos) {
    indicator_at_ = out_.size();
    out_.push_back('\0');
  }
  // A group of 8 values takes exactly `width` bytes, so every group starts on a byte.
  uint64_t acc = 0;
  int bits = 0;
  for (int i = 0; i < num_buffered_; ++i) {
    acc |= (buffered_[i] & ((uint64_t{1} << width_) - 1)) << bits;  // width_ <= 32
    bits += width_;
    for (; bits >= 8; bits -= 8, acc >>= 8) out_.push_back(static_cast<char>(acc & 0xff));
  }
  num_buffered_ = 0;
  if (update_indicator) {
    out_[indicator_at_] = static_cast<char>(((literal_count_ / 8) << 1) | 1);
    indicator_at_ = std::string::npos;
    literal_count_ = 0;
  }
}

void RleHybridEncoder::FlushRepeatedRun() {
  AppendVarint(repeat_ << 1, &out_);
  for (int b = 0; b < (width_ + 7) / 8; ++b) out_.push_back(static_cast<char>((current_ >> (8 * b)) & 0xff));
  num_buffered_ = 0;
  repeat_ = 0;
}

// Arrow's RleEncoder::Flush: what is pending is a repeated run when nothing but equal values is, else the last
// literal group, padded with zeros to 8 values.
const std::string& RleHybridEncoder::Finish() {
  if (literal_count_ > 0 || repeat_ > 0 || num_buffered_ > 0) {
    const bool all_repeat = literal_count_ == 0 && (repeat_ == static_cast<uint64_t>(num_buffered_) || num_buffered_ == 0);
    if (repeat_ > 0 && all_repeat) {
      FlushRepeatedRun();
    } else {
      for (; num_buffered_ != 0 && num_buffered_ < 8; ++num_buffered_) buffered_[num_buffered_] = 0;
      literal_count_ += static_cast<uint64_t>(num_buffered_);
      FlushLiteralRun(true);
      repeat_ = 0;
    }
  }
  return out_;
}

uint64_t RleHybridEncoder::MaxBufferSize(int bit_width, uint64_t values) {
  const uint64_t runs = (values + 7) / 8;
  const uint64_t literal_max = runs + runs * static_cast<uint64_t>(bit_width);
  const uint64_t repeated_max = runs * (1 + (static_cast<uint64_t>(bit_width) + 7) / 8);
  return std::max(literal_max, repeated_max);
}

uint64_t RleHybridEncoder::MinBufferSize(int bit_width) {
  const uint64_t literal = 1 + (512 * static_cast<uint64_t>(bit_width) + 7) / 8;  // 64 groups of 8
  const uint64_t repeated = 5 + (static_cast<uint64_t>(bit_width) + 7) / 8;      // a 5-byte varint and the value
  return std::max(literal, repeated);
}

int DictionaryIndexWidth(uint64_t entries) {
  if (entries <= 1) return static_cast<int>(entries);
  return 64 - __builtin_clzll(entries - 1);
}

inline uint32_t ValueDictionary::Find(uint64_t key) {
  if ((keys_.size() + 1) * 2 > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  for (size_t s = Mix(key) & mask;; s = (s + 1) & mask) {
    if (slots_[s] == 0) {
      keys_.push_back(key);
      slots_[s] = static_cast<uint32_t>(keys_.size());
      return slots_[s] - 1;
    }
    if (keys_[slots_[s] - 1] == key) return slots_[s] - 1;
  }
}

uint32_t ValueDictionary::IndexOf(const char* value) {
  uint64_t key = 0;
  std::memcpy(&key, value, width_);
  return Find(key);
}

template <typename T>
void ValueDictionary::AppendIndicesOf(const char* values, uint64_t n, std::vector<uint32_t>* out) {
  for (uint64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, values + i * sizeof(T), sizeof(T));
    out->push_back(Find(static_cast<uint64_t>(v)));
  }
}

void ValueDictionary::AppendIndices(const char* values, uint64_t n, std::vector<uint32_t>* out) {
  switch (width_) {
    case 1: return AppendIndicesOf<uint8_t>(values, n, out);
    case 2: return AppendIndicesOf<uint16_t>(values, n, out);
    case 4: return AppendIndicesOf<uint32_t>(values, n, out);
    case 8: return AppendIndicesOf<uint64_t>(values, n, out);
    default:
      for (uint64_t i = 0; i < n; ++i) out->push_back(IndexOf(values + i * width_));
  }
}

void ValueDictionary::Grow() {
  slots_.assign(std::max<size_t>(1024, slots_.size() * 2), 0);
  const size_t mask = slots_.size() - 1;
  for (size_t i = 0; i < keys_.size(); ++i) {
    size_t s = Mix(keys_[i]) & mask;
    while (slots_[s] != 0) s = (s + 1) & mask;
    slots_[s] = static_cast<uint32_t>(i + 1);
  }
}

void ValueDictionary::AppendPlain(std::string* out) const {
  const size_t at = out->size();
  out->resize(at + keys_.size() * width_);
  char* dst = out->data() + at;
  for (uint64_t k : keys_) {
    std::memcpy(dst, &k, width_);
    dst += width_;
  }
}

void ValueDictionary::Clear(size_t width) {
  width_ = width;
  keys_.clear();
  std::fill(slots_.begin(), slots_.end(), 0);
}

}  // namespace feedrate
