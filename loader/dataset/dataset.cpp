// DLIO naming and discovery (dlio_benchmark main.py initialize; data_generator.py generate).
#include "loader/dataset/dataset.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace feedrate {
namespace fs = std::filesystem;

std::string ZeroPad(uint64_t i, size_t width) {
  std::string s = std::to_string(i);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

std::string DlioFileName(const std::string& prefix, uint64_t i, uint64_t n, DataFormat format) {
  return prefix + "_" + ZeroPad(i, std::to_string(n).size()) + "_of_" + std::to_string(n) + "." + Name(format);
}

std::string DlioFilePath(const std::string& data_folder, const std::string& split, const std::string& prefix, uint64_t i,
                         uint64_t n, uint64_t num_subfolders, DataFormat format) {
  fs::path p = fs::path(data_folder) / split;
  if (num_subfolders > 1) p /= ZeroPad(i % num_subfolders, std::to_string(num_subfolders).size());
  return (p / DlioFileName(prefix, i, n, format)).string();
}

namespace {

// Regular files in `dir` whose name ends with the format (DLIO's endswith test; TFRecord also takes the common
// ".tfrecords" spelling), skipping hidden files (Feedrate's generator writes to hidden temporary names first).
Status ListFormatFiles(const fs::path& dir, DataFormat format, std::vector<std::string>* out) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!DatasetFileNameMatches(it->path().filename().string(), format)) continue;
    if (it->is_regular_file(ec)) out->push_back(it->path().string());
  }
  if (ec) return Status::Errno("cannot list " + dir.string(), ec.value());
  return Status::Ok();
}

}  // namespace

bool DatasetFileNameMatches(const std::string& name, DataFormat format) {
  const bool match = name.ends_with(Name(format)) || (format == DataFormat::kTfRecord && name.ends_with(".tfrecords"));
  return match && !name.empty() && name[0] != '.';
}

Result<std::vector<std::string>> SelectDatasetFiles(const std::string& where, std::vector<std::string> files,
                                                    uint64_t subfolders_found, const std::string& split,
                                                    DataFormat format, uint64_t num_files, uint64_t num_subfolders) {
  if (num_subfolders > 1 && subfolders_found != num_subfolders) {
    return Status::InvalidArgument(where + ": found " + std::to_string(subfolders_found) + " subfolders, dataset.num_subfolders_" +
                                   split + " is " + std::to_string(num_subfolders));
  }
  const size_t found = files.size();
  // Sort by basename: index order, spread evenly over subfolders (DLIO's rule). In one folder that is the paths'
  // order, sorted in place; across subfolders the basenames are found once, not per comparison. (A million-file
  // listing sorts in well under a second and holds one copy of its paths.)
  std::vector<std::string> sorted;
  if (subfolders_found <= 1) {
    std::sort(files.begin(), files.end());
    if (files.size() > num_files) {
      files.resize(num_files);
      files.shrink_to_fit();
    }
    sorted = std::move(files);
  } else {
    std::vector<std::pair<std::string_view, uint32_t>> keys(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      const size_t slash = files[i].rfind('/');
      keys[i] = {std::string_view(files[i]).substr(slash == std::string::npos ? 0 : slash + 1), static_cast<uint32_t>(i)};
    }
    std::sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : files[a.second] < files[b.second];
    });
    sorted.reserve(std::min<size_t>(files.size(), num_files));
    for (size_t i = 0; i < keys.size() && i < num_files; ++i) sorted.push_back(std::move(files[keys[i].second]));
  }
  if (found < num_files) {
    std::string hint = num_subfolders <= 1 ? "" : " across its subfolders";
    return Status::NotFound(where + ": found " + std::to_string(found) + " ." + Name(format) + " files" + hint +
                            ", the workload needs dataset.num_files_" + (split == "train" ? "train" : "eval") + "=" +
                            std::to_string(num_files) + " (run `feedrate datagen` or lower it)");
  }
  return sorted;
}

Result<std::vector<std::string>> DiscoverFiles(const std::string& data_folder, const std::string& split,
                                               DataFormat format, uint64_t num_files, uint64_t num_subfolders) {
  fs::path dir = fs::path(data_folder) / split;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound(dir.string() + ": data directory not found (generate it with `feedrate datagen`)");
  }
  std::vector<std::string> files;
  // The workload says how many files to expect: reserving them spares a million-file listing the vector's
  // doubling (2^21 slots for 1.17M files, and both arrays alive while it grows).
  files.reserve(static_cast<size_t>(std::min<uint64_t>(num_files, uint64_t{1} << 26)));
  uint64_t subdirs = 0;
  if (num_subfolders > 1) {
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_directory(ec)) continue;
      ++subdirs;
      FEEDRATE_RETURN_IF_ERROR(ListFormatFiles(it->path(), format, &files));
    }
    if (ec) return Status::Errno("cannot list " + dir.string(), ec.value());
  } else {
    FEEDRATE_RETURN_IF_ERROR(ListFormatFiles(dir, format, &files));
  }
  return SelectDatasetFiles(dir.string(), std::move(files), subdirs, split, format, num_files, num_subfolders);
}

}  // namespace feedrate
