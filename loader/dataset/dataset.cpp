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

// DLIO's order of `count` listed paths (view(i): entry i, whole or relative to `where`), trimmed to num_files: by
// basename (index order, spread evenly over subfolders), then by the whole path. Refuses a subfolder count other
// than the workload's and fewer files than it needs, naming `where`. The sort keys are found once, not per
// comparison (a million-file sort makes ~24 million).
template <typename View>
Result<std::vector<uint32_t>> DlioOrder(const std::string& where, size_t count, View view, uint64_t subfolders_found,
                                        const std::string& split, DataFormat format, uint64_t num_files,
                                        uint64_t num_subfolders) {
  if (num_subfolders > 1 && subfolders_found != num_subfolders) {
    return Status::InvalidArgument(where + ": found " + std::to_string(subfolders_found) + " subfolders, dataset.num_subfolders_" +
                                   split + " is " + std::to_string(num_subfolders));
  }
  if (count < num_files) {
    std::string hint = num_subfolders <= 1 ? "" : " across its subfolders";
    return Status::NotFound(where + ": found " + std::to_string(count) + " ." + Name(format) + " files" + hint +
                            ", the workload needs dataset.num_files_" + (split == "train" ? "train" : "eval") + "=" +
                            std::to_string(num_files) + " (run `feedrate datagen` or lower it)");
  }
  struct Key {
    std::string_view base;
    uint32_t file;
  };
  std::vector<Key> keys(count);
  for (size_t i = 0; i < count; ++i) keys[i] = {Basename(view(i)), static_cast<uint32_t>(i)};
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    return a.base != b.base ? a.base < b.base : view(a.file) < view(b.file);
  });
  std::vector<uint32_t> order(num_files);
  for (size_t i = 0; i < order.size(); ++i) order[i] = keys[i].file;
  return order;
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

bool DatasetFileNameMatches(std::string_view name, DataFormat format) {
  const bool match = name.ends_with(Name(format)) || (format == DataFormat::kTfRecord && name.ends_with(".tfrecords"));
  return match && !name.empty() && name[0] != '.';
}

Result<std::vector<std::string>> SelectDatasetFiles(const std::string& where, std::vector<std::string> files,
                                                    uint64_t subfolders_found, const std::string& split,
                                                    DataFormat format, uint64_t num_files, uint64_t num_subfolders) {
  FEEDRATE_ASSIGN_OR_RETURN(auto order, DlioOrder(where, files.size(), [&](size_t i) { return std::string_view(files[i]); },
                                                  subfolders_found, split, format, num_files, num_subfolders));
  std::vector<std::string> sorted;
  sorted.reserve(order.size());
  for (uint32_t i : order) sorted.push_back(std::move(files[i]));
  return sorted;
}

Result<DatasetListing> ListDatasetFiles(const std::string& data_folder, const std::string& split, DataFormat format,
                                        uint64_t num_files, uint64_t num_subfolders) {
  const std::string dir = (fs::path(data_folder) / split).string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    struct stat st {};
    const int err = ::stat(dir.c_str(), &st) == 0 ? ENOTDIR : errno;
    if (err != ENOENT) return Status::Errno(dir + ": not a data directory", err);  // a loop, a file, no permission
    return Status::NotFound(dir + ": data directory not found (generate it with `feedrate datagen`)");
  }
  PathList rel;
  // The workload says how many files to expect: ~32 bytes of name each spares the arena most of its doubling. Up to
  // a million: a count the folder may not hold (10^8 asked of 8) must not reserve gigabytes before the listing
  // answers (a sanitizer's allocator touches a reservation's shadow: 2.15 GB reserved cost 0.5 GB of RSS there).
  const size_t expect = static_cast<size_t>(std::min<uint64_t>(num_files, uint64_t{1} << 20));
  rel.Reserve(expect, expect * 32);
  uint64_t subdirs = 0;
  if (num_subfolders > 1) {
    FEEDRATE_RETURN_IF_ERROR(ForEachEntry(dir, [&](int dirfd, const dirent* e) {
      if (EntryType(dirfd, e) != DT_DIR) return Status::Ok();
      ++subdirs;
      return ListFormatFiles(dir + "/" + e->d_name, std::string(e->d_name) + "/", format, &rel);
    }));
  } else {
    FEEDRATE_RETURN_IF_ERROR(ListFormatFiles(dir, "", format, &rel));
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto order, DlioOrder(dir, rel.size(), [&](size_t i) { return rel.view(i); }, subdirs, split,
                                                  format, num_files, num_subfolders));
  return DatasetListing(dir, std::move(rel), std::move(order));
}

uint64_t GenerationOf(std::string_view name) {
  name = Basename(name);
  const size_t of = name.rfind("_of_");
  if (of == std::string_view::npos) return 0;
  uint64_t n = 0;
  size_t i = of + 4;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && n < (uint64_t{1} << 60); ++i) n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  return i > of + 4 && i < name.size() && name[i] == '.' ? n : 0;
}

std::map<uint64_t, uint64_t> DatasetListing::Generations() const {
  std::map<uint64_t, uint64_t> g;
  for (size_t i = 0; i < relative_.size(); ++i) ++g[GenerationOf(relative_.view(i))];
  return g;
}

Status CheckOneGeneration(const std::string& dir, DataFormat format, const std::map<uint64_t, uint64_t>& generations) {
  std::string kinds;
  size_t datagens = 0;
  for (const auto& [n, count] : generations) {
    if (n == 0) continue;
    ++datagens;
    kinds += (kinds.empty() ? "" : ", ") + std::to_string(count) + " named *_of_" + std::to_string(n) + "." + Name(format);
  }
  if (datagens <= 1) return Status::Ok();
  return Status::InvalidArgument(dir + ": files of " + std::to_string(datagens) + " datagens in one folder (" + kinds +
                                 "): a run reads the first num_files in DLIO's order, a mixture of them; remove the "
                                 "files of the datagen you do not want (or generate into an empty folder)");
}

Result<std::map<uint64_t, uint64_t>> CountGenerations(const std::string& split_dir, DataFormat format) {
  std::map<uint64_t, uint64_t> g;
  std::error_code ec;
  if (!fs::is_directory(split_dir, ec)) return g;
  auto count = [&](int dirfd, const dirent* e) {
    if (DatasetFileNameMatches(e->d_name, format) && EntryType(dirfd, e) == DT_REG) ++g[GenerationOf(e->d_name)];
    return Status::Ok();
  };
  FEEDRATE_RETURN_IF_ERROR(ForEachEntry(split_dir, [&](int dirfd, const dirent* e) {
    if (EntryType(dirfd, e) == DT_DIR) return ForEachEntry(split_dir + "/" + e->d_name, count);
    return count(dirfd, e);
  }));
  return g;
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
