// The S3 side of `feedrate iobench` (a --path of s3://bucket/prefix).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace feedrate::cli {

struct S3IobenchArgs {
  std::string url, endpoint = "https://s3.amazonaws.com", region = "us-east-1", results_dir;
  bool virtual_host = false;
  std::vector<std::string> ops{"get"};
  std::vector<uint64_t> object_sizes{16u << 20};
  uint64_t part_size = 8u << 20;
  std::vector<unsigned> concurrency{1, 8, 32};
  double runtime = 5;
};

int RunS3Iobench(const S3IobenchArgs& a);
// Writes <dir>/<name>.json and <name>.csv (temporary name, rename) and says where; the exit code (0, or 2 with
// the error printed). Both iobench flavours end with it.
int WriteBenchResults(const std::string& dir, const std::string& name, const std::string& json, const std::string& csv);

}  // namespace feedrate::cli
