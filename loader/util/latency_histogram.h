// Log-linear latency histogram (16 linear sub-buckets per power of two, about 6% resolution): fixed size,
// no allocation per sample, and mergeable across threads and MPI ranks by adding the counts.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace feedrate {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr size_t kBuckets = 64 << kSubBits;

  void Add(uint64_t ns) {
    ++counts_[Index(ns)];
    ++total_;
    max_ = std::max(max_, ns);
  }
  void Merge(const LatencyHistogram& o) {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    max_ = std::max(max_, o.max_);
  }
  uint64_t total() const { return total_; }
  uint64_t max() const { return max_; }
  std::array<uint64_t, kBuckets>& counts() { return counts_; }
  const std::array<uint64_t, kBuckets>& counts() const { return counts_; }
  void set_total_and_max(uint64_t total, uint64_t max) {
    total_ = total;
    max_ = max;
  }
  // The value below which `pct` percent of samples fall (a bucket's upper bound; the max for 100).
  uint64_t Percentile(double pct) const {
    if (total_ == 0) return 0;
    if (pct >= 100) return max_;
    auto rank = static_cast<uint64_t>(pct / 100.0 * static_cast<double>(total_ - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(UpperBound(i), max_);
    }
    return max_;
  }

  static size_t Index(uint64_t v) {
    if (v < (1u << kSubBits)) return static_cast<size_t>(v);
    int msb = 63 - std::countl_zero(v);
    uint64_t sub = (v >> (msb - kSubBits)) & ((1u << kSubBits) - 1);
    return static_cast<size_t>((msb - kSubBits + 1) << kSubBits) + static_cast<size_t>(sub);
  }
  static uint64_t UpperBound(size_t index) {
    if (index < (1u << kSubBits)) return index;
    size_t group = index >> kSubBits;  // = msb - kSubBits + 1
    uint64_t sub = index & ((1u << kSubBits) - 1);
    int msb = static_cast<int>(group) + kSubBits - 1;
    uint64_t base = (uint64_t{1} << msb) | (sub << (msb - kSubBits));
    return base + (uint64_t{1} << (msb - kSubBits)) - 1;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
  uint64_t max_ = 0;
};

}  // namespace feedrate
