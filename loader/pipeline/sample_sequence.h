// One accelerator's sample ids for an epoch, in read order: a list, or a contiguous run computed on demand (DLIO's
// PyTorch order), so an epoch of a 4.8-billion-row dataset (MLPerf Storage v3.0's DLRM) costs no memory.
#pragma once

#include <cstdint>
#include <vector>

namespace feedrate {

// A window into a sequence from some position: ids[i] is the sequence's id at that position + i. Valid while the
// sequence it came from is neither changed nor destroyed.
class SampleIds {
 public:
  uint64_t operator[](uint64_t i) const { return list_ != nullptr ? list_[i] : first_ + i; }

 private:
  friend class SampleSequence;
  SampleIds(const uint64_t* list, uint64_t first) : list_(list), first_(first) {}
  const uint64_t* list_;  // nullptr: contiguous from first_
  uint64_t first_;
};

class SampleSequence {
 public:
  SampleSequence() = default;
  // The ids first, first + 1, ..., first + count - 1.
  static SampleSequence Range(uint64_t first, uint64_t count) {
    SampleSequence s;
    s.AssignRange(first, count);
    return s;
  }
  // A view of `count` ids at `ids`, which must outlive the sequence (tests, callers that own their list).
  static SampleSequence View(const uint64_t* ids, uint64_t count) {
    SampleSequence s;
    s.list_ = ids;
    s.count_ = count;
    return s;
  }
  // Copies would point into the original's storage; moves keep the vector's buffer, and so the pointer, valid.
  SampleSequence(const SampleSequence&) = delete;
  SampleSequence& operator=(const SampleSequence&) = delete;
  SampleSequence(SampleSequence&&) noexcept = default;
  SampleSequence& operator=(SampleSequence&&) noexcept = default;

  void AssignRange(uint64_t first, uint64_t count) {
    storage_.clear();
    list_ = nullptr;
    first_ = first;
    count_ = count;
  }
  // The owned list, emptied, for the caller to fill (its capacity is kept between epochs); then Seal.
  std::vector<uint64_t>& StartList() {
    storage_.clear();
    return storage_;
  }
  // Ends a list started with StartList at its first `count` ids (the list must hold at least that many).
  void Seal(uint64_t count) {
    list_ = storage_.data();
    first_ = 0;
    count_ = count;
  }
  // Adds `delta` to every id (a range or an owned list; not a View).
  void Shift(uint64_t delta) {
    if (list_ == nullptr) {
      first_ += delta;
      return;
    }
    for (uint64_t& id : storage_) id += delta;
  }

  uint64_t size() const { return count_; }
  bool contiguous() const { return list_ == nullptr; }
  uint64_t first() const { return list_ != nullptr ? (count_ > 0 ? list_[0] : 0) : first_; }
  uint64_t operator[](uint64_t i) const { return list_ != nullptr ? list_[i] : first_ + i; }
  SampleIds From(uint64_t i) const { return list_ != nullptr ? SampleIds(list_ + i, 0) : SampleIds(nullptr, first_ + i); }
  std::vector<uint64_t> ToVector() const {
    std::vector<uint64_t> v(count_);
    for (uint64_t i = 0; i < count_; ++i) v[i] = (*this)[i];
    return v;
  }

 private:
  std::vector<uint64_t> storage_;
  const uint64_t* list_ = nullptr;  // storage_.data() or a caller's list; nullptr: contiguous from first_
  uint64_t first_ = 0;
  uint64_t count_ = 0;
};

}  // namespace feedrate
