// MpmcQueue: capacity, FIFO order, full and empty, and many producers and consumers handing over every item exactly
// once (run under ThreadSanitizer in CI, which also checks the value hand-over is ordered by the cell sequence).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "loader/io/mpmc_queue.h"

namespace feedrate {
namespace {

TEST(MpmcQueue, RoundsCapacityUpAndRefusesWhenFullOrEmpty) {
  MpmcQueue<int> q(5);
  EXPECT_EQ(q.capacity(), 8u);
  int v = 0;
  EXPECT_FALSE(q.TryPop(&v));
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(q.TryPush(i));
  EXPECT_FALSE(q.TryPush(8)) << "a full queue takes nothing more";
  for (int round = 0; round < 3; ++round) {  // wraps around: FIFO across the ring's end
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(q.TryPop(&v));
      EXPECT_EQ(v, round * 8 + i);
      ASSERT_TRUE(q.TryPush((round + 1) * 8 + i));
    }
  }
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(q.TryPop(&v));
  EXPECT_FALSE(q.TryPop(&v));
}

// 4 producers x 20,000 items through a queue of 64 to 4 consumers: each item arrives exactly once, and each
// producer's items arrive in the order it pushed them.
TEST(MpmcQueue, ManyProducersAndConsumersHandOverEveryItemOnce) {
  constexpr int kProducers = 4, kConsumers = 4, kPerProducer = 20000;
  struct Item {
    uint32_t producer;
    uint32_t n;
  };
  MpmcQueue<Item> q(64);
  std::vector<std::atomic<uint8_t>> seen(static_cast<size_t>(kProducers) * kPerProducer);
  std::atomic<int> consumed{0};
  std::atomic<bool> out_of_order{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        while (!q.TryPush(Item{static_cast<uint32_t>(p), static_cast<uint32_t>(i)})) std::this_thread::yield();
      }
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&] {
      std::vector<int64_t> last(kProducers, -1);  // per producer, the last item this consumer took
      Item it{};
      while (consumed.load(std::memory_order_relaxed) < kProducers * kPerProducer) {
        if (!q.TryPop(&it)) {
          std::this_thread::yield();
          continue;
        }
        if (static_cast<int64_t>(it.n) <= last[it.producer]) out_of_order = true;
        last[it.producer] = it.n;
        seen[static_cast<size_t>(it.producer) * kPerProducer + it.n].fetch_add(1, std::memory_order_relaxed);
        consumed.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(out_of_order) << "a consumer saw a producer's items out of order";
  size_t twice = 0, missing = 0;
  for (auto& s : seen) {
    const uint8_t n = s.load();
    if (n == 0) ++missing;
    if (n > 1) ++twice;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(twice, 0u);
}

}  // namespace
}  // namespace feedrate
