// The queue between the prefetchers and an engine's I/O threads: a bounded lock-free MPMC queue of read requests
// and a semaphore counting them, so a batch is queued with one wake-up and an idle I/O thread sleeps.
#pragma once

#include <atomic>
#include <cstddef>
#include <semaphore>
#include <span>
#include <thread>

#include "loader/io/io_engine.h"
#include "loader/io/mpmc_queue.h"

namespace feedrate {

// Thread-safe. Push never blocks while the requests outstanding stay within `capacity` (the prefetchers' bound:
// EngineOptions::queue_capacity); past it, it yields until a consumer makes room.
class RequestQueue {
 public:
  explicit RequestQueue(size_t capacity) : queue_(capacity) {}

  // Queues the requests in order, then announces them with one semaphore release (one futex wake at most).
  void Push(std::span<const ReadRequest> requests) {
    for (const ReadRequest& r : requests) {
      while (!queue_.TryPush(r)) std::this_thread::yield();
    }
    if (!requests.empty()) ready_.release(static_cast<std::ptrdiff_t>(requests.size()));
  }
  // Blocks until a request is announced; false once Stop() has been called and none is left to take (then every
  // later Pop and TryPop, by any consumer, is false at once too: a stop token is never used up).
  bool Pop(ReadRequest* out) {
    ready_.acquire();
    return Take(out);
  }
  // Takes an announced request without blocking; false when none is announced, or when stopping with none left.
  bool TryPop(ReadRequest* out) { return ready_.try_acquire() && Take(out); }
  // Makes `threads` consumers blocked in Pop (or about to be) return false.
  void Stop(size_t threads) {
    stopping_.store(true, std::memory_order_release);
    ready_.release(static_cast<std::ptrdiff_t>(threads));
  }

 private:
  // After a token: with several producers the cell at the head may still be mid-publication, so retry rather than
  // drop the token (which would strand a request). A stop token finds the queue empty and is put back, so a
  // consumer that meets it in TryPop while its own reads finish still finds one for its last Pop.
  bool Take(ReadRequest* out) {
    while (!queue_.TryPop(out)) {
      if (stopping_.load(std::memory_order_acquire)) {
        ready_.release();
        return false;
      }
      std::this_thread::yield();
    }
    return true;
  }

  MpmcQueue<ReadRequest> queue_;
  std::counting_semaphore<> ready_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace feedrate
