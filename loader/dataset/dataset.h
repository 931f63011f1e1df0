// DLIO dataset layout: file naming (train/img_007_of_168.npz, optional subfolders) and file discovery.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loader/status.h"
#include "loader/util/choices.h"
#include "loader/util/path_list.h"

namespace feedrate {

// "7" padded to `width` digits: "007".
std::string ZeroPad(uint64_t i, size_t width);
// DLIO's file name for index i of n: "<prefix>_<i padded to len(str(n))>_of_<n>.<format>".
std::string DlioFileName(const std::string& prefix, uint64_t i, uint64_t n, DataFormat format);
// Full path: <folder>/<split>/[<i % nsub padded>/]<name>, subfolders only when num_subfolders > 1.
std::string DlioFilePath(const std::string& data_folder, const std::string& split, const std::string& prefix, uint64_t i,
                         uint64_t n, uint64_t num_subfolders, DataFormat format);

// Whether a file (or object) name is one of the split's data files: it ends with the format (DLIO's endswith test;
// TFRecord also takes ".tfrecords") and is not hidden (Feedrate's generator writes hidden temporary names first).
bool DatasetFileNameMatches(std::string_view name, DataFormat format);
// The split's files out of everything listed under `where` (a directory or an S3 prefix): the subfolder count
// checked, sorted by basename (DLIO's order), trimmed to `num_files`; too few is NotFound naming `where`.
Result<std::vector<std::string>> SelectDatasetFiles(const std::string& where, std::vector<std::string> files,
                                                    uint64_t subfolders_found, const std::string& split,
                                                    DataFormat format, uint64_t num_files, uint64_t num_subfolders);
// DLIO names file i of a datagen of n files "<prefix>_<i>_of_<n>.<format>": the n of `name` (a basename or a
// relative path), 0 for a name not in that form.
uint64_t GenerationOf(std::string_view name);
// Files of more than one datagen in one split (n -> count, from Generations or CountGenerations): a run would read
// a mixture of them (the first num_files in DLIO's order); an error naming `dir`, the counts and what to do. Names
// not in DLIO's form are not a generation of their own.
Status CheckOneGeneration(const std::string& dir, DataFormat format, const std::map<uint64_t, uint64_t>& generations);
// The same counts over a split folder on disk, one level of subfolders included; empty when it is not there.
Result<std::map<uint64_t, uint64_t>> CountGenerations(const std::string& split_dir, DataFormat format);

// One split's files in DLIO's order, held compactly: each path relative to the split's folder ("name", or
// "subfolder/name") in one arena (a million-file listing is ~40 MB, not ~110 MB of strings, and none to free).
class DatasetListing {
 public:
  DatasetListing(std::string dir, PathList relative, std::vector<uint32_t> order)
      : dir_(std::move(dir)), relative_(std::move(relative)), order_(std::move(order)) {}
  size_t size() const { return order_.size(); }
  // Appends file i's path (the split's folder, '/', its relative path) to *out.
  void AppendPath(size_t i, std::string* out) const;
  std::string Path(size_t i) const;
  // Every file of the format the folder holds (size() is those kept: the first num_files in DLIO's order).
  size_t found() const { return relative_.size(); }
  // The datagens the folder's files come from (GenerationOf each one found): n -> files.
  std::map<uint64_t, uint64_t> Generations() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  PathList relative_;            // in listing order
  std::vector<uint32_t> order_;  // DLIO's order: file i is relative_[order_[i]]
};

// The files of one split, in DLIO's order (sorted by basename), trimmed to `num_files`.
// Errors: missing directory, fewer files than needed, subfolder layout not matching num_subfolders.
Result<DatasetListing> ListDatasetFiles(const std::string& data_folder, const std::string& split, DataFormat format,
                                        uint64_t num_files, uint64_t num_subfolders);
// The same as paths (tests and small listings).
// Errors: missing directory, fewer files than needed, subfolder layout not matching num_subfolders.
Result<std::vector<std::string>> DiscoverFiles(const std::string& data_folder, const std::string& split,
                                               DataFormat format, uint64_t num_files, uint64_t num_subfolders);

}  // namespace feedrate
