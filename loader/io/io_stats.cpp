// Snapshots of the live read statistics.
#include "loader/io/io_stats.h"

#include <algorithm>

namespace feedrate {

IoSnapshot IoSnapshot::Since(const IoSnapshot& earlier) const {
  IoSnapshot d;
  d.reads = reads - earlier.reads;
  d.bytes = bytes - earlier.bytes;
  d.latency_sum_ns = latency_sum_ns - earlier.latency_sum_ns;
  uint64_t total = 0, top = 0;
  auto& counts = d.latency.counts();
  const auto& now = latency.counts();
  const auto& then = earlier.latency.counts();
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    counts[i] = now[i] - then[i];
    total += counts[i];
    if (counts[i] > 0) top = LatencyHistogram::UpperBound(i);
  }
  d.latency.set_total_and_max(total, std::min(top, latency.max()));
  return d;
}

IoStats::IoStats(size_t shards) {
  const size_t n = shards == 0 ? 1 : shards;
  shards_.reserve(n);
  for (size_t i = 0; i < n; ++i) shards_.push_back(std::make_unique<Shard>());
}

IoSnapshot IoStats::Take() const {
  IoSnapshot s;
  uint64_t total = 0, max = 0;
  auto& counts = s.latency.counts();
  for (const auto& sh : shards_) {
    s.reads += sh->reads.load(std::memory_order_relaxed);
    s.bytes += sh->bytes.load(std::memory_order_relaxed);
    s.latency_sum_ns += sh->latency_sum.load(std::memory_order_relaxed);
    max = std::max(max, sh->max.load(std::memory_order_relaxed));
    for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
      const uint64_t c = sh->latency[i].load(std::memory_order_relaxed);
      counts[i] += c;
      total += c;
    }
  }
  s.latency.set_total_and_max(total, max);
  return s;
}

}  // namespace feedrate
