// One DataLoader worker's queued requests (a lane of the DlioEngine or the S3 engine's DLIO pattern), in the order
// submitted: a fixed ring allocated once, so queuing a sample allocates nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "loader/io/io_engine.h"

namespace feedrate {

class RequestRing {
 public:
  RequestRing() = default;
  explicit RequestRing(uint64_t capacity)
      : capacity_(capacity == 0 ? 1 : capacity), queue_(std::make_unique<ReadRequest[]>(capacity_)) {}
  // False when the ring already holds `capacity` requests (more than the prefetchers keep in flight).
  bool Push(const ReadRequest& r) {
    if (count_ == capacity_) return false;
    queue_[(head_ + count_) % capacity_] = r;
    ++count_;
    return true;
  }
  // REQUIRES: !empty().
  ReadRequest Pop() {
    const ReadRequest r = queue_[head_];
    head_ = (head_ + 1) % capacity_;
    --count_;
    return r;
  }
  bool empty() const { return count_ == 0; }
  uint64_t size() const { return count_; }

 private:
  uint64_t capacity_ = 0, head_ = 0, count_ = 0;
  std::unique_ptr<ReadRequest[]> queue_;
};

// What a request refused by a full lane completes with: `engine` names the engine ("DlioEngine", "S3Engine").
inline Status LaneFull(const char* engine, uint32_t lane) {
  return Status::InvalidArgument(std::string(engine) + ": lane " + std::to_string(lane) +
                                 " has more requests queued than its capacity");
}

}  // namespace feedrate
