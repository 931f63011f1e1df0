// Page-aligned heap buffer with RAII ownership; the unit of the loader's buffer pool.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

namespace feedrate {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 4096;  // O_DIRECT- and page-friendly

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size, size_t alignment = kAlignment) : size_(size) {
    if (size == 0) return;
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    data_ = static_cast<char*>(std::aligned_alloc(alignment, rounded));
    if (data_ == nullptr) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace feedrate
