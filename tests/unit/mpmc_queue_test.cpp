// MpmcQueue: capacity, FIFO order, full and empty, and many producers and consumers handing over every item exactly
// once (run under ThreadSanitizer in CI, which also checks the value hand-over is ordered by the cell sequence);
// RequestQueue: batches queued as spans, taken by blocking and non-blocking consumers, and the stop.
// RequestRing: a lane's ring of queued requests.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "loader/io/mpmc_queue.h"
#include "loader/io/request_queue.h"
#include "loader/io/request_ring.h"

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

TEST(RequestQueue, SpansInOrderTryPopAndStop) {
  RequestQueue q(16);
  ReadRequest out;
  EXPECT_FALSE(q.TryPop(&out)) << "nothing announced";
  std::vector<ReadRequest> batch(5);
  for (size_t i = 0; i < batch.size(); ++i) batch[i].tag = i;
  q.Push(batch);
  q.Push(std::span<const ReadRequest>());  // an empty span announces nothing
  for (uint64_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(i % 2 == 0 ? q.Pop(&out) : q.TryPop(&out));
    EXPECT_EQ(out.tag, i);
  }
  EXPECT_FALSE(q.TryPop(&out));
  std::thread blocked([&] { EXPECT_FALSE(q.Pop(&out)); });  // waits until the stop
  q.Stop(1);
  blocked.join();
  // A consumer that meets the stop in TryPop (an io_uring thread with reads still in flight) and later blocks in
  // Pop must not wait for a token it used up.
  EXPECT_FALSE(q.TryPop(&out));
  EXPECT_FALSE(q.Pop(&out));
  EXPECT_FALSE(q.Pop(&out));
}

TEST(RequestQueue, ManyProducersOfBatchesAndBlockingConsumersTakeEveryRequestOnce) {
  constexpr int kProducers = 3, kBatches = 200, kBatch = 7, kConsumers = 4;
  RequestQueue q(64);
  std::vector<std::atomic<int>> seen(kProducers * kBatches * kBatch);
  std::atomic<int> taken{0};
  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      ReadRequest r;
      while (q.Pop(&r)) {
        seen[r.tag].fetch_add(1);
        taken.fetch_add(1);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      std::vector<ReadRequest> batch(kBatch);
      for (int b = 0; b < kBatches; ++b) {
        for (int i = 0; i < kBatch; ++i) batch[i].tag = static_cast<uint64_t>((p * kBatches + b) * kBatch + i);
        q.Push(batch);
      }
    });
  }
  for (auto& t : producers) t.join();
  while (taken.load() < kProducers * kBatches * kBatch) std::this_thread::yield();
  q.Stop(kConsumers);
  for (auto& t : consumers) t.join();
  for (auto& n : seen) EXPECT_EQ(n.load(), 1);
}

// A lane's ring: first in, first out across its wrap, and a full ring refuses rather than growing (the engines then
// fail the request with LaneFull, naming the lane).
TEST(RequestRing, FifoAcrossTheWrapAndFullRefuses) {
  RequestRing ring(3);
  auto req = [](uint64_t tag) {
    ReadRequest r;
    r.tag = tag;
    return r;
  };
  EXPECT_TRUE(ring.empty());
  for (uint64_t t : {1, 2, 3}) EXPECT_TRUE(ring.Push(req(t)));
  EXPECT_FALSE(ring.Push(req(4)));
  EXPECT_EQ(ring.Pop().tag, 1u);
  EXPECT_TRUE(ring.Push(req(5)));  // wraps
  EXPECT_EQ(ring.size(), 3u);
  for (uint64_t t : {2, 3, 5}) EXPECT_EQ(ring.Pop().tag, t);
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(LaneFull("S3Engine", 7).ToString().find("lane 7 has more requests queued") != std::string::npos, true);
}

}  // namespace
}  // namespace feedrate
