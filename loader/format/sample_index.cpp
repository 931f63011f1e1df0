// Per-format sample extents for training reads.
#include "loader/format/sample_index.h"

#include <atomic>
#include <mutex>
#include <thread>

#include "loader/format/npz.h"
#include "loader/io/unique_fd.h"

namespace feedrate {

bool TrainingFormatSupported(const std::string& format) { return format == "npz" || format == "npy"; }

Result<SampleExtent> IndexTrainingFile(const std::string& path, const std::string& format, uint64_t samples_per_file) {
  auto fd = OpenForRead(path);
  if (!fd.ok()) return fd.status();
  auto size = FileSize(fd->get(), path);
  if (!size.ok()) return size.status();
  const NpyHeader* header = nullptr;
  SampleExtent e;
  NpArray array;
  if (format == "npz") {
    auto arrays = ReadNpzArrays(fd->get(), *size, path);
    if (!arrays.ok()) return arrays.status();
    bool found = false;
    for (auto& a : *arrays) {
      if (a.name == "x") {
        array = std::move(a);
        found = true;
        break;
      }
    }
    if (!found) return Status::Corruption(path + ": npz has no 'x' array (DLIO's npz reader reads f['x'])");
    e.offset = array.member->data_offset;
    e.length = array.member->compressed_size;
  } else if (format == "npy") {
    auto a = ReadNpyFile(fd->get(), *size, path);
    if (!a.ok()) return a.status();
    array = std::move(*a);
    e.offset = 0;
    e.length = array.header.data_offset + array.header.nbytes;
  } else {
    return Status::Unsupported(path + ": format '" + format + "' is not supported for training reads yet");
  }
  header = &array.header;
  // DLIO takes sample k as arr[..., k]: the last axis must hold every sample of the file.
  if (header->shape.empty() || header->shape.back() < samples_per_file) {
    std::string last = header->shape.empty() ? "a 0-d array" : "last axis " + std::to_string(header->shape.back());
    return Status::Corruption(path + ": array has " + last + ", fewer than dataset.num_samples_per_file=" +
                              std::to_string(samples_per_file) + " samples");
  }
  return e;
}

Result<std::vector<SampleExtent>> IndexTrainingFiles(const std::vector<std::string>& paths, const std::string& format,
                                                     uint64_t samples_per_file, size_t threads) {
  std::vector<SampleExtent> out(paths.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex err_mu;  // setup path only: guards the first error
  Status first_error;
  size_t first_index = paths.size();
  auto work = [&] {
    for (size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < paths.size();) {
      auto e = IndexTrainingFile(paths[i], format, samples_per_file);
      if (!e.ok()) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (i < first_index) {
          first_index = i;
          first_error = e.status();
        }
        failed.store(true, std::memory_order_relaxed);
        return;
      }
      out[i] = *e;
      out[i].file = static_cast<uint32_t>(i);
    }
  };
  std::vector<std::thread> pool;
  size_t n = std::max<size_t>(1, std::min(threads, paths.size()));
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failed.load()) return first_error;
  return out;
}

}  // namespace feedrate
