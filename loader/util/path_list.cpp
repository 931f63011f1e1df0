// PathList: paths by file index in one arena (path_list.h).
#include "loader/util/path_list.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace feedrate {

PathList::PathList(const std::vector<std::string>& paths) {
  size_t bytes = 0;
  for (const auto& p : paths) bytes += p.size() + 1;
  Reserve(paths.size(), bytes);
  for (const auto& p : paths) {
    // Construction from a vector is for small listings: a path too long for the arena is a programming error.
    if (!Add(p).ok()) throw std::length_error("PathList: more than 4 GiB of paths");
  }
}

Status PathList::Add(std::string_view path) {
  if (path.empty()) {
    AddAbsent();
    return Status::Ok();
  }
  if (arena_.size() + path.size() + 1 > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("the file list passes 4 GiB of paths (at file " + std::to_string(size()) + ")");
  }
  at_.push_back(static_cast<uint32_t>(arena_.size()));
  arena_.append(path);
  arena_.push_back('\0');
  return Status::Ok();
}

Status PathList::Append(const PathList& other) {
  Reserve(size() + other.size(), arena_.size() + other.arena_.size());
  for (size_t i = 0; i < other.size(); ++i) FEEDRATE_RETURN_IF_ERROR(Add(other.view(i)));
  return Status::Ok();
}

void PathList::Reserve(size_t files, size_t path_bytes) {
  at_.reserve(files);
  arena_.reserve(std::max(arena_.size(), path_bytes + 1));
}

size_t PathList::held_count() const {
  size_t n = 0;
  for (uint32_t a : at_) n += a != 0;
  return n;
}

size_t PathList::first_held() const {
  for (size_t i = 0; i < at_.size(); ++i) {
    if (at_[i] != 0) return i;
  }
  return at_.size();
}

}  // namespace feedrate
