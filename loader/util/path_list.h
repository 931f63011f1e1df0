// The dataset's file paths by file index, in one arena: a million-file listing is one allocation, not a million
// strings, and a rank holds only the paths of the files it reads (the others are indices without a path).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loader/status.h"

namespace feedrate {

class PathList {
 public:
  PathList() = default;
  // Every path held, in order (tests, tools, small listings).
  explicit PathList(const std::vector<std::string>& paths);

  // Appends index size(): with `path` (not empty), or absent. Pointers from c_str() stay valid only until the next
  // Add. Fails when the arena would pass 4 GiB of paths (offsets are 32-bit: 4 bytes per file).
  Status Add(std::string_view path);
  void AddAbsent() { at_.push_back(0); }
  // Appends `other`'s indices after this list's (the validation files after the training files).
  Status Append(const PathList& other);
  void Reserve(size_t files, size_t path_bytes);

  size_t size() const { return at_.size(); }
  bool held(size_t i) const { return at_[i] != 0; }
  // The path of file i, NUL-terminated; "" when absent. Valid while the list lives unchanged.
  const char* c_str(size_t i) const { return arena_.data() + at_[i]; }
  std::string_view view(size_t i) const { return {c_str(i)}; }
  // The held paths' count, and the first held index (size() when none).
  size_t held_count() const;
  size_t first_held() const;
  // Bytes the list holds (arena and offsets): what a listing costs a rank.
  size_t bytes() const { return arena_.capacity() + at_.capacity() * sizeof(uint32_t); }

 private:
  std::string arena_ = std::string(1, '\0');  // offset 0: the empty path of every absent file
  std::vector<uint32_t> at_;                  // per file: where its path starts in arena_ (0: absent)
};

}  // namespace feedrate
