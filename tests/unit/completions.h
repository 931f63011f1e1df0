// An engine's completion target for tests: records each request's status, bytes and (when the engine hands it
// over) its data by tag; Wait() blocks until every request has completed.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "loader/io/io_engine.h"

namespace feedrate::test {

class Collector final : public CompletionTarget {
 public:
  explicit Collector(size_t n) : status_(n), bytes_(n), handed_(n), had_data_(n) {}
  void OnComplete(uint64_t tag, uint64_t bytes, const Status& st, const char* data) override {
    status_[tag] = st;
    bytes_[tag] = bytes;
    if (data != nullptr) handed_[tag] = std::string(data, bytes);  // valid only during the call
    had_data_[tag] = data != nullptr;
    if (done_.fetch_add(1) + 1 == status_.size()) done_.notify_all();
  }
  void Wait() {
    for (size_t d; (d = done_.load()) < status_.size();) done_.wait(d);
  }
  std::vector<Status> status_;
  std::vector<uint64_t> bytes_;
  std::vector<std::string> handed_;
  std::vector<char> had_data_;
  std::atomic<size_t> done_{0};
};

}  // namespace feedrate::test
