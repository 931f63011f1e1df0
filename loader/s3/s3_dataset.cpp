// S3 dataset discovery and object sources.
#include "loader/s3/s3_dataset.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "loader/config/workload_config.h"
#include "loader/dataset/dataset.h"

namespace feedrate {

Result<std::unique_ptr<S3Client>> S3Store::Connect(unsigned max_parallel) const {
  S3ClientOptions o;
  o.max_parallel = max_parallel;
  o.stop = stop;
  return S3Client::Create(endpoint, credentials, bucket, o);
}

Result<S3Store> S3StoreFor(const WorkloadConfig& cfg) {
  S3Store s;
  FEEDRATE_ASSIGN_OR_RETURN(auto cred, LoadS3Credentials());
  s.credentials = std::move(cred);
  s.endpoint.region = cfg.s3_region;
  s.endpoint.path_style = cfg.s3_path_style;
  if (!cfg.s3_endpoint.empty()) s.endpoint.url = cfg.s3_endpoint;
  s.bucket = cfg.storage_root;
  s.prefix = cfg.S3DataPrefix();
  return s;
}

Result<std::string> GetS3Text(S3Client& client, const std::string& key, uint64_t max_bytes) {
  std::string text(max_bytes, '\0');
  FEEDRATE_ASSIGN_OR_RETURN(auto got, client.Get(key, 0, 0, text.data(), text.size()));
  text.resize(got);
  return text;
}

Result<std::vector<std::string>> DiscoverS3Objects(S3Client& client, const S3Store& store, const std::string& split,
                                                   DataFormat format, uint64_t num_files, uint64_t num_subfolders,
                                                   S3SizeMap* sizes) {
  const std::string dir = store.Key(split) + "/";
  auto listed = client.List(dir);
  if (!listed.ok()) return listed.status().WithContext("listing the dataset");
  if (listed->empty()) {
    return Status::NotFound(store.Url(dir) + ": no objects under this prefix (generate the dataset with `feedrate datagen "
                            "--storage s3://...`)");
  }
  std::vector<std::string> keys;
  std::set<std::string> subfolders;
  for (const auto& o : *listed) {
    const std::string rel = o.key.substr(dir.size());
    const size_t slash = rel.find('/');
    const std::string base = rel.substr(rel.rfind('/') + 1);
    if (!DatasetFileNameMatches(base, format)) continue;
    if (num_subfolders > 1) {
      if (slash == std::string::npos || rel.find('/', slash + 1) != std::string::npos) continue;
      subfolders.insert(rel.substr(0, slash));
    } else if (slash != std::string::npos) {
      continue;
    }
    keys.push_back(o.key);
    (*sizes)[o.key] = o.size;
  }
  return SelectDatasetFiles(store.Url(dir), std::move(keys), subfolders.size(), split, format, num_files, num_subfolders);
}

S3ObjectSource::S3ObjectSource(S3Client& client, std::string key, std::string url, uint64_t size)
    : client_(client), key_(std::move(key)), url_(std::move(url)), size_(size) {}

Status S3ObjectSource::ReadAt(void* buf, size_t len, uint64_t offset) const {
  if (offset > size_ || len > size_ - offset) {
    return Status::Corruption(url_ + ": object is truncated: expected " + std::to_string(len) + " bytes at offset " +
                              std::to_string(offset) + ", the object has " + std::to_string(size_));
  }
  if (len == 0) return Status::Ok();
  if (!block_.empty() && offset >= block_offset_ && offset + len <= block_offset_ + block_.size()) {
    std::memcpy(buf, block_.data() + (offset - block_offset_), len);
    return Status::Ok();
  }
  ++requests_;
  if (len >= kBlock) {
    FEEDRATE_ASSIGN_OR_RETURN(auto got, client_.Get(key_, offset, len, static_cast<char*>(buf), len));
    if (got != len) return Status::Corruption(url_ + ": " + std::to_string(got) + " bytes at offset " + std::to_string(offset));
    return Status::Ok();
  }
  const uint64_t n = std::min<uint64_t>(kBlock, size_ - offset);
  block_.resize(n);
  auto got = client_.Get(key_, offset, n, block_.data(), n);
  if (!got.ok() || *got != n) {
    block_.clear();
    if (!got.ok()) return got.status();
    return Status::Corruption(url_ + ": " + std::to_string(*got) + " bytes at offset " + std::to_string(offset));
  }
  block_offset_ = offset;
  std::memcpy(buf, block_.data(), len);
  return Status::Ok();
}

// A source holding a pooled client, given back when the source goes.
class S3SourceOpener::Lease final : public ByteSource {
 public:
  Lease(const S3SourceOpener& owner, std::unique_ptr<S3Client> client, const std::string& key, uint64_t size)
      : owner_(owner), client_(std::move(client)), src_(*client_, key, owner.store_.Url(key), size) {}
  ~Lease() override {
    std::lock_guard<std::mutex> lock(owner_.mu_);
    owner_.idle_.push_back(std::move(client_));
  }
  uint64_t size() const override { return src_.size(); }
  const std::string& name() const override { return src_.name(); }
  Status ReadAt(void* buf, size_t len, uint64_t offset) const override { return src_.ReadAt(buf, len, offset); }

 private:
  const S3SourceOpener& owner_;
  std::unique_ptr<S3Client> client_;
  S3ObjectSource src_;
};

S3SourceOpener::~S3SourceOpener() = default;

Result<std::unique_ptr<ByteSource>> S3SourceOpener::Open(const std::string& name) const {
  std::unique_ptr<S3Client> client;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      client = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (client == nullptr) {
    FEEDRATE_ASSIGN_OR_RETURN(auto c, store_.Connect(1));
    client = std::move(c);
  }
  uint64_t size = 0;
  if (auto it = sizes_.find(name); it != sizes_.end()) {
    size = it->second;
  } else {
    auto s = client->Size(name);
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      idle_.push_back(std::move(client));
      return s.status();
    }
    size = *s;
  }
  return std::unique_ptr<ByteSource>(std::make_unique<Lease>(*this, std::move(client), name, size));
}

}  // namespace feedrate
