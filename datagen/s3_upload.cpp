// S3Uploader: PUT or multipart upload of a local file.
#include "datagen/s3_upload.h"

#include <algorithm>

#include "loader/io/unique_fd.h"

namespace feedrate {

Result<std::unique_ptr<S3Uploader>> S3Uploader::Create(const S3Store& store, uint64_t part_size, unsigned parallel) {
  if (part_size < (5u << 20)) return Status::InvalidArgument("S3 multipart part size must be at least 5 MiB");
  FEEDRATE_ASSIGN_OR_RETURN(auto client, store.Connect(std::max(1u, parallel)));
  return std::unique_ptr<S3Uploader>(new S3Uploader(std::move(client), part_size, std::max(1u, parallel)));
}

S3Uploader::S3Uploader(std::unique_ptr<S3Client> client, uint64_t part_size, unsigned parallel)
    : client_(std::move(client)), part_size_(part_size), parallel_(parallel), buffers_(parallel) {}

Status S3Uploader::Upload(const std::string& path, const std::string& key, uint64_t* bytes) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd.get(), path));
  *bytes = size;
  if (size > part_size_) return Multipart(fd.get(), path, key, size);
  std::string& buf = buffers_[0];
  buf.resize(size);
  if (size > 0) FEEDRATE_RETURN_IF_ERROR(PreadFull(fd.get(), buf.data(), buf.size(), 0, path));
  ++requests_;
  return client_->Put(key, buf.data(), buf.size());
}

Status S3Uploader::Multipart(int fd, const std::string& path, const std::string& key, uint64_t size) {
  FEEDRATE_ASSIGN_OR_RETURN(auto id, client_->StartMultipart(key));
  ++requests_;
  const uint64_t parts = (size + part_size_ - 1) / part_size_;
  std::vector<std::string> etags(parts);
  std::vector<S3Request> reqs(parallel_);
  std::vector<S3Request*> batch;
  Status st;
  for (uint64_t first = 0; first < parts && st.ok(); first += parallel_) {
    batch.clear();
    for (uint64_t p = first; p < std::min<uint64_t>(parts, first + parallel_) && st.ok(); ++p) {
      const uint64_t off = p * part_size_, len = std::min(part_size_, size - off);
      std::string& buf = buffers_[p - first];
      buf.resize(len);
      st = PreadFull(fd, buf.data(), len, off, path);
      S3Request& r = reqs[p - first];
      r = S3Request{};
      r.method = S3Request::Method::kPut;
      r.key = key;
      r.query = "partNumber=" + std::to_string(p + 1) + "&uploadId=" + S3UriEncode(id, false);
      r.body = buf.data();
      r.body_size = len;
      batch.push_back(&r);
    }
    if (st.ok()) st = client_->Run(std::span<S3Request* const>(batch));
    requests_ += batch.size();
    for (size_t i = 0; i < batch.size() && st.ok(); ++i) {
      if (batch[i]->etag.empty()) st = Status::Corruption(client_->Describe(*batch[i]) + ": no ETag in the response");
      etags[first + i] = batch[i]->etag;
    }
  }
  if (st.ok()) st = client_->CompleteMultipart(key, id, etags);
  if (!st.ok()) {
    // No object under the final key: the parts go, the key never appears.
    Status abort = client_->AbortMultipart(key, id);
    std::string why = st.ToString();
    if (!abort.ok()) why += " (and aborting the upload failed too: " + abort.ToString() + ")";
    return Status::IoError("uploading " + path + " to s3://" + client_->bucket() + "/" + key + ": " + why);
  }
  return Status::Ok();
}

}  // namespace feedrate
