// Uploads a generated file as an S3 object: one PUT up to the part size, a multipart upload beyond it (parts
// sent several at a time, aborted on any failure), so no half-written object ever carries its final key.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loader/s3/s3_dataset.h"

namespace feedrate {

class S3Uploader {
 public:
  // `part_size` >= 5 MiB (S3's minimum for all parts but the last); `parallel` parts in flight.
  static Result<std::unique_ptr<S3Uploader>> Create(const S3Store& store, uint64_t part_size = 16 << 20, unsigned parallel = 4);
  // The file at `path` becomes object `key`; its size in *bytes. Errors name the file or the key.
  Status Upload(const std::string& path, const std::string& key, uint64_t* bytes);
  S3Client& client() { return *client_; }
  uint64_t requests() const { return requests_; }

 private:
  S3Uploader(std::unique_ptr<S3Client> client, uint64_t part_size, unsigned parallel);
  Status Multipart(int fd, const std::string& path, const std::string& key, uint64_t size);

  std::unique_ptr<S3Client> client_;
  uint64_t part_size_;
  unsigned parallel_;
  std::vector<std::string> buffers_;  // one per part in flight, reused
  uint64_t requests_ = 0;
};

}  // namespace feedrate
