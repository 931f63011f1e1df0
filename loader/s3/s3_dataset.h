// A dataset in an S3 bucket as the loader sees it: where it is, discovery by ListObjectsV2 in DLIO's key naming
// (<prefix>/<split>/[<subfolder>/]<name>), and objects as ByteSources (ranged GETs) for the header indexers.
#pragma once

#include <atomic>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/format/sample_index.h"
#include "loader/io/byte_source.h"
#include "loader/s3/s3_client.h"

namespace feedrate {

// Where a dataset lives in S3 and how to reach it.
struct S3Store {
  S3Endpoint endpoint;
  S3Credentials credentials;
  std::string bucket;
  std::string prefix;  // the dataset folder inside the bucket (no leading or trailing '/'; "" = the bucket root)
  const std::atomic<bool>* stop = nullptr;  // the clients' loops stop once it is raised (S3ClientOptions::stop)
  // "<prefix>/<rest>" (or just rest at the bucket root).
  std::string Key(const std::string& rest) const { return prefix.empty() ? rest : prefix + "/" + rest; }
  // "s3://bucket/key": how messages and results name an object.
  std::string Url(const std::string& key) const { return "s3://" + bucket + "/" + key; }
  Result<std::unique_ptr<S3Client>> Connect(unsigned max_parallel) const;
};

struct WorkloadConfig;
// The store a workload names (storage.storage_root, storage_options, dataset.data_folder as the prefix), with
// credentials from the environment or ~/.aws/credentials.
Result<S3Store> S3StoreFor(const WorkloadConfig& cfg);
// A small object's whole text (markers, indexes); NotFound when it does not exist.
Result<std::string> GetS3Text(S3Client& client, const std::string& key, uint64_t max_bytes = 1 << 20);

// Sizes of listed objects by key.
using S3SizeMap = std::unordered_map<std::string, uint64_t>;

// The keys of split `split`'s objects under store.prefix, as DiscoverFiles finds files: names ending with the
// format, subfolders counted, sorted by basename, trimmed to num_files. Their sizes go into *sizes.
Result<std::vector<std::string>> DiscoverS3Objects(S3Client& client, const S3Store& store, const std::string& split,
                                                   DataFormat format, uint64_t num_files, uint64_t num_subfolders,
                                                   S3SizeMap* sizes);

// One object read by ranged GETs. Small reads fetch a whole block (64 KiB) and serve later reads inside it from
// memory: a zip directory, its local header and the .npy header then take one or two requests.
class S3ObjectSource final : public ByteSource {
 public:
  S3ObjectSource(S3Client& client, std::string key, std::string url, uint64_t size);
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return url_; }
  Status ReadAt(void* buf, size_t len, uint64_t offset) const override;
  uint64_t requests() const { return requests_; }

 private:
  static constexpr uint64_t kBlock = uint64_t{64} * 1024;
  S3Client& client_;
  std::string key_, url_;
  uint64_t size_;
  mutable std::string block_;
  mutable uint64_t block_offset_ = 0;
  mutable uint64_t requests_ = 0;
};

// Opens objects of one bucket for the indexers (several threads): each open borrows a client from a pool.
class S3SourceOpener final : public SourceOpener {
 public:
  S3SourceOpener(S3Store store, S3SizeMap sizes) : store_(std::move(store)), sizes_(std::move(sizes)) {}
  ~S3SourceOpener() override;
  // `name` is a key; its size from the listing, else a HEAD request.
  Result<std::unique_ptr<ByteSource>> Open(const std::string& name) const override;
  const char* kind() const override { return "S3"; }

 private:
  class Lease;
  S3Store store_;
  S3SizeMap sizes_;
  mutable std::mutex mu_;  // setup path only: guards the idle clients
  mutable std::vector<std::unique_ptr<S3Client>> idle_;
};

}  // namespace feedrate
