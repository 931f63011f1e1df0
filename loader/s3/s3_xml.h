// The few S3 XML documents Feedrate reads (libxml2): error bodies, ListObjectsV2 pages, InitiateMultipartUpload;
// and the one it writes (CompleteMultipartUpload).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loader/status.h"

namespace feedrate {

struct S3ErrorBody {
  std::string code;     // "NoSuchKey", "SignatureDoesNotMatch", "SlowDown", ...; "" when the body is not an S3 error
  std::string message;
};
S3ErrorBody ParseS3Error(std::string_view xml);

struct S3ObjectEntry {
  std::string key;
  uint64_t size = 0;
  std::string etag;
};
struct S3ListPage {
  std::vector<S3ObjectEntry> objects;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken when truncated
};
Result<S3ListPage> ParseListObjectsV2(std::string_view xml);

Result<std::string> ParseUploadId(std::string_view xml);  // InitiateMultipartUploadResult's UploadId
// <CompleteMultipartUpload> with parts 1..N and their ETags (as the server returned them, quotes included).
std::string CompleteMultipartXml(const std::vector<std::string>& etags);

}  // namespace feedrate
