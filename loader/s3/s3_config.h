// Where an S3 dataset lives and who may read it: s3:// URLs, endpoints (path-style or virtual-host URLs),
// credentials from the AWS environment variables or ~/.aws/credentials (never printed, never written to results).
#pragma once

#include <string>
#include <string_view>

#include "loader/status.h"

namespace feedrate {

struct S3Endpoint {
  std::string url = "https://s3.amazonaws.com";  // scheme://host[:port], no trailing slash
  std::string region = "us-east-1";              // the SigV4 signing region
  bool path_style = true;                        // http://host/bucket/key; false: http://bucket.host/key
  // The CA certificates an https endpoint is verified against (a PEM file: an in-house object store's private CA);
  // "" = $AWS_CA_BUNDLE when set (as the AWS CLI and SDKs read it), else the system's trust store.
  std::string ca_bundle;
};

struct S3Location {
  std::string bucket;
  std::string prefix;  // "" or ending without '/', e.g. "datasets/unet3d"
};
// "s3://bucket" or "s3://bucket/some/prefix/" (the trailing '/' is dropped).
Result<S3Location> ParseS3Url(std::string_view url);

// S3's URI encoding (RFC 3986 unreserved characters kept; '/' kept when `keep_slash`, as in object keys).
std::string S3UriEncode(std::string_view text, bool keep_slash);
void AppendS3UriEncoded(std::string* out, std::string_view text, bool keep_slash);
// The request URL for `key` in `bucket` ("" key: the bucket itself), with `query` ("uploads", "list-type=2&...").
std::string S3RequestUrl(const S3Endpoint& e, const std::string& bucket, const std::string& key, const std::string& query);
// The same into `url` (cleared first; its capacity is reused, so a request slot builds its URLs without allocating).
void BuildS3RequestUrl(std::string* url, const S3Endpoint& e, std::string_view bucket, std::string_view key,
                       std::string_view query);

struct S3Credentials {
  std::string access_key, secret_key, session_token;
  std::string source;  // where they came from ("environment", "/root/.aws/credentials [default]"): safe to print
};
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN) when set, else the profile (AWS_PROFILE, else
// "default") of AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials. The error says where it looked, never a key.
Result<S3Credentials> LoadS3Credentials();
// The [profile] section of an ~/.aws/credentials text (`path` only names it in messages).
Result<S3Credentials> ParseAwsCredentials(std::string_view text, const std::string& profile, const std::string& path);

}  // namespace feedrate
