// Live read statistics: samples read, bytes and a latency histogram, kept per I/O thread (one writer per shard,
// relaxed atomics, no lock) and summed by a sampler at any time, e.g. once a second for the time series.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "loader/util/latency_histogram.h"

namespace feedrate {

struct IoSnapshot {
  uint64_t reads = 0;  // samples (or coalesced sample runs) completed
  uint64_t bytes = 0;
  uint64_t latency_sum_ns = 0;  // the reads' latencies summed (a Prometheus histogram's _sum)
  LatencyHistogram latency;  // read latency, ns
  // What happened between `earlier` and this snapshot (the maximum becomes the top bucket's upper bound).
  IoSnapshot Since(const IoSnapshot& earlier) const;
};

class IoStats {
 public:
  explicit IoStats(size_t shards);
  size_t shards() const { return shards_.size(); }
  // One completed read of `bytes` that took `latency_ns`; only shard `shard`'s own thread calls this.
  void Record(size_t shard, uint64_t bytes, int64_t latency_ns) {
    Shard& s = *shards_[shard % shards_.size()];
    const uint64_t ns = latency_ns > 0 ? static_cast<uint64_t>(latency_ns) : 0;
    s.reads.fetch_add(1, std::memory_order_relaxed);
    s.bytes.fetch_add(bytes, std::memory_order_relaxed);
    s.latency_sum.fetch_add(ns, std::memory_order_relaxed);
    s.latency[LatencyHistogram::Index(ns)].fetch_add(1, std::memory_order_relaxed);
    if (ns > s.max.load(std::memory_order_relaxed)) s.max.store(ns, std::memory_order_relaxed);  // single writer
  }
  IoSnapshot Take() const;

 private:
  struct alignas(64) Shard {
    std::atomic<uint64_t> reads{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> max{0};
    std::atomic<uint64_t> latency_sum{0};
    std::array<std::atomic<uint64_t>, LatencyHistogram::kBuckets> latency{};
  };
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace feedrate
