// An S3 client on libcurl: SigV4 signing by curl (CURLOPT_AWS_SIGV4, with the x-amz-content-sha256 header S3
// needs), many concurrent requests on one curl multi handle (no thread per request), connections reused,
// retries with backoff for 5xx / SlowDown / dropped connections, and every failure named with the bucket, key,
// HTTP status and S3 error code.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loader/s3/s3_config.h"
#include "loader/s3/s3_xml.h"
#include "loader/status.h"

namespace feedrate {

struct S3ClientOptions {
  unsigned max_parallel = 16;       // requests in flight at once (each on its own reused connection)
  int retries = 4;                  // further attempts after 5xx, 429/503 SlowDown, a dropped connection or a timeout
  double retry_base_seconds = 0.05; // backoff before the first retry, doubled for each further one
  long connect_timeout_ms = 10000;
  long stall_timeout_s = 30;        // a transfer that moves nothing for this long fails (and is retried)
  // A loop over what the server returns (List's pages) stops at its next request once this is raised (SIGINT); not
  // owned, may be null.
  const std::atomic<bool>* stop = nullptr;
  uint64_t max_list_pages = 100000;  // List: at most this many pages (of 1000 keys: 10^8 objects)
};

struct S3Request {
  enum class Method { kGet, kHead, kPut, kPost, kDelete };
  Method method = Method::kGet;
  std::string key;    // "" = the bucket itself
  std::string query;  // already S3-encoded, parameters in sorted order (it is signed as given)
  uint64_t range_begin = 0, range_length = 0;     // GET: bytes [begin, begin + length); length 0: the whole object
  const char* body = nullptr;                     // PUT / POST payload (kept alive by the caller)
  uint64_t body_size = 0;
  char* dest = nullptr;                           // GET: the object bytes go here (up to dest_capacity) ...
  uint64_t dest_capacity = 0;                     // ... else, like every error body, into `text`
  bool dest_wraps = false;                        // GET: past dest_capacity, bytes land again from dest's start (a
                                                  // reader that keeps none of them: any size, no overflow)
  // Results.
  Status status;
  long http_status = 0;
  uint64_t bytes = 0;           // body bytes received (into dest or text)
  uint64_t content_length = 0;  // the response's Content-Length (HEAD: the object size)
  double ttfb_seconds = 0;      // request start to the first response byte (last attempt)
  double seconds = 0;           // the whole last attempt
  int attempts = 0;
  std::string etag;             // the response's ETag header, quotes included
  std::string text;
  uint64_t sent = 0;            // (upload progress within an attempt)
};

class S3Client {
 public:
  static Result<std::unique_ptr<S3Client>> Create(S3Endpoint endpoint, S3Credentials credentials, std::string bucket,
                                                 S3ClientOptions options = {});
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // Runs every request, up to max_parallel at once; each gets its own status. Returns the first failure, or OK.
  Status Run(std::span<S3Request* const> requests);
  Status Run(S3Request& r);
  // Streaming form: whenever a slot is free, next() gives the next request (nullptr: no more; the run ends once
  // the rest are done); done() gets each finished one, its status set. A request stays in use until done() has it.
  void RunStream(const std::function<S3Request*()>& next, const std::function<void(S3Request&)>& done);
  // Server form for an engine thread: like RunStream, but next() returning nullptr means "nothing now": the loop
  // then sleeps in curl_multi_poll until Wakeup() or a transfer needs it, and returns only once *stop is set
  // and nothing is left in flight. `due_ms`, if given, says in how many ms next() will have work without a
  // Wakeup (a timer of the caller's: -1 none); the loop's sleeps end by then.
  void Serve(const std::function<S3Request*()>& next, const std::function<void(S3Request&)>& done,
             const std::atomic<bool>& stop, const std::function<int64_t()>* due_ms = nullptr);
  // Wakes a sleeping Serve loop (thread-safe; a no-op, without a syscall, when it is not sleeping). Callers that
  // publish work first and then call this need a seq_cst fence in between (the loop re-checks next() after
  // announcing that it sleeps).
  void Wakeup(bool always = false);

  Status CreateBucket();
  Status Put(const std::string& key, const char* data, uint64_t size);
  // Bytes [begin, begin + length) of `key` into dest (length 0: the whole object); the number of bytes received.
  Result<uint64_t> Get(const std::string& key, uint64_t begin, uint64_t length, char* dest, uint64_t capacity);
  Result<uint64_t> Size(const std::string& key);  // HEAD
  // Every object under `prefix` (ListObjectsV2, page after page).
  Result<std::vector<S3ObjectEntry>> List(const std::string& prefix);
  Status Delete(const std::string& key);
  Result<std::string> StartMultipart(const std::string& key);
  // Part `number` (1-based) of an upload; its ETag in *etag.
  Status PutPart(const std::string& key, const std::string& upload_id, int number, const char* data, uint64_t size,
                 std::string* etag);
  Status CompleteMultipart(const std::string& key, const std::string& upload_id, const std::vector<std::string>& etags);
  Status AbortMultipart(const std::string& key, const std::string& upload_id);

  const std::string& bucket() const;
  const S3Endpoint& endpoint() const;
  // "GET s3://bucket/key (bytes 0-1023)": how messages name a request.
  std::string Describe(const S3Request& r) const;

 private:
  struct Impl;
  explicit S3Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace feedrate
