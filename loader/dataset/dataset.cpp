// DLIO naming and discovery (dlio_benchmark main.py initialize; data_generator.py generate).
#include "loader/dataset/dataset.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <string_view>
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

// The type of entry `name` in the directory `dirfd`, following symbolic links as stat does (d_type when the file
// system gives it: no stat per file of a million-file folder).
unsigned char EntryType(int dirfd, const dirent* e) {
  if (e->d_type != DT_UNKNOWN && e->d_type != DT_LNK) return e->d_type;
  struct stat st {};
  if (::fstatat(dirfd, e->d_name, &st, 0) != 0) return DT_UNKNOWN;
  return S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR : DT_UNKNOWN;
}

// Calls f(entry) for every entry of `dir` but . and ..; Errno naming `dir` when it cannot be listed.
template <typename F>
Status ForEachEntry(const std::string& dir, F&& f) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return Status::Errno("cannot list " + dir, errno);
  errno = 0;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string_view name(e->d_name);
    if (name != "." && name != "..") FEEDRATE_RETURN_IF_ERROR(f(::dirfd(d.get()), e));
    errno = 0;
  }
  if (errno != 0) return Status::Errno("cannot list " + dir, errno);
  return Status::Ok();
}

// Regular files in `dir` whose name ends with the format (DLIO's endswith test; TFRecord also takes the common
// ".tfrecords" spelling), skipping hidden files (Feedrate's generator writes to hidden temporary names first),
// added to *out as `prefix` + name.
Status ListFormatFiles(const std::string& dir, const std::string& prefix, DataFormat format, PathList* out) {
  std::string rel = prefix;
  return ForEachEntry(dir, [&](int dirfd, const dirent* e) {
    if (!DatasetFileNameMatches(e->d_name, format) || EntryType(dirfd, e) != DT_REG) return Status::Ok();
    rel.resize(prefix.size());
    rel += e->d_name;
    return out->Add(rel);
  });
}

// Where the basename of a relative path starts.
std::string_view Basename(std::string_view rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string_view::npos ? rel : rel.substr(slash + 1);
}

}  // namespace

void DatasetListing::AppendPath(size_t i, std::string* out) const {
  out->append(dir_).push_back('/');
  out->append(relative_.view(order_[i]));
}

std::string DatasetListing::Path(size_t i) const {
  std::string p;
  AppendPath(i, &p);
  return p;
}

Result<PathList> DatasetListing::Keep(std::span<const char> keep) const {
  PathList l;
  l.Reserve(size(), 0);
  std::string path;
  for (size_t i = 0; i < size(); ++i) {
    if (i >= keep.size() || !keep[i]) {
      l.AddAbsent();
      continue;
    }
    path.clear();
    AppendPath(i, &path);
    FEEDRATE_RETURN_IF_ERROR(l.Add(path));
  }
  return l;
}

bool DatasetFileNameMatches(std::string_view name, DataFormat format) {
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

Result<DatasetListing> ListDatasetFiles(const std::string& data_folder, const std::string& split, DataFormat format,
                                        uint64_t num_files, uint64_t num_subfolders) {
  const std::string dir = (fs::path(data_folder) / split).string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound(dir + ": data directory not found (generate it with `feedrate datagen`)");
  }
  PathList rel;
  // The workload says how many files to expect: ~32 bytes of name each spares the arena most of its doubling.
  const size_t expect = static_cast<size_t>(std::min<uint64_t>(num_files, uint64_t{1} << 26));
  rel.Reserve(expect, expect * 32);
  uint64_t subdirs = 0;
  if (num_subfolders > 1) {
    FEEDRATE_RETURN_IF_ERROR(ForEachEntry(dir, [&](int dirfd, const dirent* e) {
      if (EntryType(dirfd, e) != DT_DIR) return Status::Ok();
      ++subdirs;
      return ListFormatFiles(dir + "/" + e->d_name, std::string(e->d_name) + "/", format, &rel);
    }));
    if (subdirs != num_subfolders) {
      return Status::InvalidArgument(dir + ": found " + std::to_string(subdirs) + " subfolders, dataset.num_subfolders_" +
                                     split + " is " + std::to_string(num_subfolders));
    }
  } else {
    FEEDRATE_RETURN_IF_ERROR(ListFormatFiles(dir, "", format, &rel));
  }
  if (rel.size() < num_files) {
    std::string hint = num_subfolders <= 1 ? "" : " across its subfolders";
    return Status::NotFound(dir + ": found " + std::to_string(rel.size()) + " ." + Name(format) + " files" + hint +
                            ", the workload needs dataset.num_files_" + (split == "train" ? "train" : "eval") + "=" +
                            std::to_string(num_files) + " (run `feedrate datagen` or lower it)");
  }
  // DLIO's order: by basename (index order, spread evenly over subfolders), then by the whole relative path. The
  // keys are found once (not per comparison: a million-file sort makes ~24 million).
  struct Key {
    std::string_view base;
    uint32_t file;
  };
  std::vector<Key> keys(rel.size());
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = {Basename(rel.view(i)), static_cast<uint32_t>(i)};
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    return a.base != b.base ? a.base < b.base : rel.view(a.file) < rel.view(b.file);
  });
  std::vector<uint32_t> order(num_files);
  for (size_t i = 0; i < order.size(); ++i) order[i] = keys[i].file;
  keys = {};
  return DatasetListing(dir, std::move(rel), std::move(order));
}

Result<std::vector<std::string>> DiscoverFiles(const std::string& data_folder, const std::string& split,
                                               DataFormat format, uint64_t num_files, uint64_t num_subfolders) {
  FEEDRATE_ASSIGN_OR_RETURN(auto listing, ListDatasetFiles(data_folder, split, format, num_files, num_subfolders));
  std::vector<std::string> files;
  files.reserve(listing.size());
  for (size_t i = 0; i < listing.size(); ++i) files.push_back(listing.Path(i));
  return files;
}

}  // namespace feedrate
