// S3Client: one curl multi handle driving up to max_parallel easy handles (kept, so their connections are reused).
#include "loader/s3/s3_client.h"

#include <unistd.h>
#include <cstdlib>
#include <curl/curl.h>
#include <libxml/parser.h>

#include <algorithm>
#include <set>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace feedrate {
namespace {

using Clock = std::chrono::steady_clock;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    xmlInitParser();
  });
}

const char* MethodName(S3Request::Method m) {
  switch (m) {
    case S3Request::Method::kGet: return "GET";
    case S3Request::Method::kHead: return "HEAD";
    case S3Request::Method::kPut: return "PUT";
    case S3Request::Method::kPost: return "POST";
    case S3Request::Method::kDelete: return "DELETE";
  }
  return "?";
}

bool RetryableCurl(CURLcode c) {
  return c == CURLE_COULDNT_CONNECT || c == CURLE_OPERATION_TIMEDOUT || c == CURLE_RECV_ERROR ||
         c == CURLE_SEND_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE || c == CURLE_SSL_CONNECT_ERROR;
}

bool RetryableHttp(long code) { return code >= 500 || code == 429; }

struct Slot {
  CURL* easy = nullptr;
  S3Request* req = nullptr;
  char error[CURL_ERROR_SIZE] = {};
  bool overflow = false;  // the object did not fit in dest
  std::string url;        // reused: built in place for each request (curl copies it)
  char range[48] = {};    // "begin-end"
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* slot = static_cast<Slot*>(user);
  S3Request& r = *slot->req;
  const size_t len = size * n;
  long code = 0;
  curl_easy_getinfo(slot->easy, CURLINFO_RESPONSE_CODE, &code);
  if (r.dest != nullptr && r.dest_wraps && code >= 200 && code < 300 && r.dest_capacity > 0) {
    for (size_t done = 0, at = r.bytes % r.dest_capacity; done < len; at = 0) {
      const size_t piece = std::min<size_t>(len - done, r.dest_capacity - at);
      std::memcpy(r.dest + at, data + done, piece);
      done += piece;
    }
  } else if (r.dest != nullptr && code >= 200 && code < 300) {
    if (r.bytes + len > r.dest_capacity) {
      slot->overflow = true;
      return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    std::memcpy(r.dest + r.bytes, data, len);
  } else {
    if (r.text.size() + len > (16u << 20)) return 0;  // an error or XML body this large is not S3's
    r.text.append(data, len);
  }
  r.bytes += len;
  return len;
}

size_t OnUpload(char* buf, size_t size, size_t n, void* user) {
  auto* r = static_cast<S3Request*>(user);
  const size_t len = std::min<uint64_t>(size * n, r->body_size - r->sent);
  std::memcpy(buf, r->body + r->sent, len);
  r->sent += len;
  return len;
}

// Case-insensitive header name comparison; `lower` is lower case.
bool NameIs(std::string_view name, std::string_view lower) {
  if (name.size() != lower.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) != lower[i]) return false;
  }
  return true;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<S3Request*>(user);
  const size_t len = size * n;
  std::string_view h(data, len);
  const size_t colon = h.find(':');
  if (colon != std::string_view::npos) {  // (nothing allocated: this runs for every header of every GET)
    const std::string_view name = h.substr(0, colon);
    std::string_view value = h.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    if (NameIs(name, "etag")) r->etag.assign(value);
    if (NameIs(name, "content-length")) std::from_chars(value.data(), value.data() + value.size(), r->content_length);
  }
  return len;
}

}  // namespace

struct S3Client::Impl {
  S3Endpoint endpoint;
  S3Credentials credentials;
  std::string bucket;
  S3ClientOptions options;
  std::string sigv4;        // "aws:amz:<region>:s3"
  curl_slist* headers = nullptr;
  CURLM* multi = nullptr;
  std::vector<Slot> slots;
  std::atomic<bool> sleeping{false};  // a Serve loop waits in curl_multi_poll for work

  void Loop(const std::function<S3Request*()>& next, const std::function<void(S3Request&)>& done,
            const std::atomic<bool>* stop, const std::function<int64_t()>* due_ms = nullptr);
  struct Pass;  // one Loop call's state and steps

  ~Impl() {
    for (auto& s : slots) {
      if (s.easy != nullptr) curl_easy_cleanup(s.easy);
    }
    if (multi != nullptr) curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
  }

  void Setup(Slot& s, S3Request& r) {
    CURL* e = s.easy;
    curl_easy_reset(e);  // keeps the handle's live connection and caches
    s.req = &r;
    s.error[0] = '\0';
    s.overflow = false;
    r.bytes = r.sent = r.content_length = 0;
    r.etag.clear();
    r.text.clear();
    r.http_status = 0;
    ++r.attempts;
    BuildS3RequestUrl(&s.url, endpoint, bucket, r.key, r.query);
    curl_easy_setopt(e, CURLOPT_URL, s.url.c_str());  // (copied by curl)
    curl_easy_setopt(e, CURLOPT_PRIVATE, &s);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s.error);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(e, CURLOPT_USERNAME, credentials.access_key.c_str());
    curl_easy_setopt(e, CURLOPT_PASSWORD, credentials.secret_key.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, options.connect_timeout_ms);
    if (!endpoint.ca_bundle.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, endpoint.ca_bundle.c_str());
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, options.stall_timeout_s);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &r);
    // Large bodies: bigger receive chunks mean fewer recv() calls and body callbacks per byte (curl's 16 KiB
    // default costs measurably more CPU per GiB).
    if (r.method == S3Request::Method::kGet && (r.range_length == 0 || r.range_length >= (1u << 20))) {
      curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
    }
    switch (r.method) {
      case S3Request::Method::kGet:
        if (r.range_length > 0) {
          char* end = std::to_chars(s.range, s.range + sizeof s.range, r.range_begin).ptr;
          *end++ = '-';
          end = std::to_chars(end, s.range + sizeof s.range - 1, r.range_begin + r.range_length - 1).ptr;
          *end = '\0';
          curl_easy_setopt(e, CURLOPT_RANGE, s.range);
        }
        break;
      case S3Request::Method::kHead:
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        break;
      case S3Request::Method::kPut:
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, OnUpload);
        curl_easy_setopt(e, CURLOPT_READDATA, &r);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body_size));
        break;
      case S3Request::Method::kPost:
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body != nullptr ? r.body : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body_size));
        break;
      case S3Request::Method::kDelete:
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
        break;
    }
  }

  std::string Describe(const S3Request& r) const {
    std::string d = std::string(MethodName(r.method)) + " s3://" + bucket + "/" + r.key;
    if (!r.query.empty()) d += "?" + r.query;
    if (r.method == S3Request::Method::kGet && r.range_length > 0) {
      d += " (bytes " + std::to_string(r.range_begin) + "-" + std::to_string(r.range_begin + r.range_length - 1) + ")";
    }
    return d;
  }

  // After an attempt: true when it should be tried again.
  bool Finish(Slot& s, CURLcode result) {
    S3Request& r = *s.req;
    curl_easy_getinfo(s.easy, CURLINFO_RESPONSE_CODE, &r.http_status);
    curl_off_t ttfb = 0, total = 0;
    curl_easy_getinfo(s.easy, CURLINFO_STARTTRANSFER_TIME_T, &ttfb);
    curl_easy_getinfo(s.easy, CURLINFO_TOTAL_TIME_T, &total);
    r.ttfb_seconds = static_cast<double>(ttfb) / 1e6;
    r.seconds = static_cast<double>(total) / 1e6;
    const bool more = r.attempts <= options.retries;
    const std::string tries = r.attempts > 1 ? " (after " + std::to_string(r.attempts) + " attempts)" : "";
    if (result != CURLE_OK) {
      if (s.overflow) {
        r.status = Status::Corruption(Describe(r) + ": the object is larger than the " + std::to_string(r.dest_capacity) +
                                      "-byte buffer for it");
        return false;
      }
      if (RetryableCurl(result) && more) return true;
      r.status = Status::IoError(Describe(r) + ": " + (s.error[0] != '\0' ? s.error : curl_easy_strerror(result)) + tries);
      return false;
    }
    if (r.http_status >= 200 && r.http_status < 300) {
      if (r.method == S3Request::Method::kGet && r.range_length > 0 && r.bytes != r.range_length &&
          r.bytes != r.content_length) {
        r.status = Status::Corruption(Describe(r) + ": " + std::to_string(r.bytes) + " bytes received");
        return false;
      }
      r.status = Status::Ok();
      return false;
    }
    const S3ErrorBody err = ParseS3Error(r.text);
    if (RetryableHttp(r.http_status) && more) return true;
    std::string msg = Describe(r) + ": HTTP " + std::to_string(r.http_status);
    if (!err.code.empty()) msg += " " + err.code;
    if (!err.message.empty()) msg += ": " + err.message;
    msg += tries;
    r.status = r.http_status == 404 ? Status::NotFound(msg) : Status::IoError(msg);
    return false;
  }
};

S3Client::S3Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Client::~S3Client() = default;
const std::string& S3Client::bucket() const { return impl_->bucket; }
const S3Endpoint& S3Client::endpoint() const { return impl_->endpoint; }
std::string S3Client::Describe(const S3Request& r) const { return impl_->Describe(r); }

Result<std::unique_ptr<S3Client>> S3Client::Create(S3Endpoint endpoint, S3Credentials credentials, std::string bucket,
                                                   S3ClientOptions options) {
  GlobalInit();
  auto impl = std::make_unique<Impl>();
  while (!endpoint.url.empty() && endpoint.url.back() == '/') endpoint.url.pop_back();
  if (endpoint.url.rfind("http://", 0) != 0 && endpoint.url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("S3 endpoint '" + endpoint.url + "' is not an http:// or https:// URL");
  }
  if (endpoint.ca_bundle.empty()) {
    if (const char* env = std::getenv("AWS_CA_BUNDLE"); env != nullptr) endpoint.ca_bundle = env;
  }
  if (!endpoint.ca_bundle.empty() && ::access(endpoint.ca_bundle.c_str(), R_OK) != 0) {
    return Status::Errno("the CA bundle " + endpoint.ca_bundle + " (AWS_CA_BUNDLE) cannot be read", errno);
  }
  impl->endpoint = std::move(endpoint);
  impl->credentials = std::move(credentials);
  impl->bucket = std::move(bucket);
  impl->options = options;
  impl->options.max_parallel = std::max(1u, options.max_parallel);
  impl->sigv4 = "aws:amz:" + impl->endpoint.region + ":s3";
  // curl 7.88 signs but does not add the payload hash S3 requires; unsigned payloads are what SDKs send over TLS.
  impl->headers = curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (!impl->credentials.session_token.empty()) {
    impl->headers = curl_slist_append(impl->headers, ("x-amz-security-token: " + impl->credentials.session_token).c_str());
  }
  impl->multi = curl_multi_init();
  if (impl->multi == nullptr || impl->headers == nullptr) return Status::IoError("cannot initialise libcurl");
  impl->slots.resize(impl->options.max_parallel);
  for (auto& s : impl->slots) {
    s.easy = curl_easy_init();
    if (s.easy == nullptr) return Status::IoError("cannot initialise libcurl");
    s.url.reserve(512);
  }
  return std::unique_ptr<S3Client>(new S3Client(std::move(impl)));
}

Status S3Client::Run(S3Request& r) {
  S3Request* p = &r;
  return Run(std::span<S3Request* const>(&p, 1));
}

Status S3Client::Run(std::span<S3Request* const> requests) {
  size_t next = 0;
  RunStream([&]() -> S3Request* { return next < requests.size() ? requests[next++] : nullptr; }, [](S3Request&) {});
  for (S3Request* r : requests) {
    if (!r->status.ok()) return r->status;
  }
  return Status::Ok();
}

void S3Client::RunStream(const std::function<S3Request*()>& next, const std::function<void(S3Request&)>& done) {
  impl_->Loop(next, done, nullptr);
}

void S3Client::Serve(const std::function<S3Request*()>& next, const std::function<void(S3Request&)>& done,
                     const std::atomic<bool>& stop, const std::function<int64_t()>* due_ms) {
  impl_->Loop(next, done, &stop, due_ms);
}

void S3Client::Wakeup(bool always) {
  if (always || impl_->sleeping.load(std::memory_order_seq_cst)) curl_multi_wakeup(impl_->multi);
}

// One Loop call: the free slots, transfers in flight, retries waiting out their backoff, and the steps of a turn.
struct S3Client::Impl::Pass {
  struct Retry {
    Clock::time_point at;
    S3Request* req;
  };
  enum class Idle { kEnd, kAgain, kGo };  // nothing in flight: the loop ends, turns again, or goes on to perform

  Impl& m;
  const std::function<S3Request*()>& next;
  const std::function<void(S3Request&)>& done;
  const std::atomic<bool>* stop;  // serving until set; nullptr: run until the source is empty
  const std::function<int64_t()>* due_ms;  // serving: ms until the source has work of its own (Serve's due_ms), or null
  std::deque<S3Request*> ready;   // retries whose backoff is over
  std::vector<Retry> retries;
  std::vector<Slot*> free_slots;
  size_t active = 0;
  bool source_empty = false;

  void Start(S3Request* r) {
    Slot* s = free_slots.back();
    free_slots.pop_back();
    m.Setup(*s, *r);
    curl_multi_add_handle(m.multi, s->easy);
    ++active;
  }

  void PromoteDueRetries() {
    const auto now = Clock::now();
    for (size_t i = 0; i < retries.size();) {
      if (retries[i].at <= now) {
        ready.push_back(retries[i].req);
        retries[i] = retries.back();
        retries.pop_back();
      } else {
        ++i;
      }
    }
  }

  // Every free slot gets a request: a retry whose time has come first, then the source's next.
  void FillSlots() {
    while (!free_slots.empty()) {
      S3Request* r = nullptr;
      if (!ready.empty()) {
        r = ready.front();
        ready.pop_front();
      } else if (!source_empty) {
        r = next();
        if (r == nullptr) {
          source_empty = stop == nullptr;  // serving: nothing now, ask again later
        } else {
          r->attempts = 0;
        }
      }
      if (r == nullptr) return;
      Start(r);
    }
  }

  // Asks the source once more after announcing the sleep: a producer publishes, fences, then wakes only a sleeper.
  bool TakeOneBeforeSleeping() {
    m.sleeping.store(true, std::memory_order_seq_cst);
    S3Request* r = next();
    if (r == nullptr) return false;
    m.sleeping.store(false, std::memory_order_relaxed);
    r->attempts = 0;
    Start(r);
    return true;
  }

  // Nothing in flight (the source is empty: slots were free): end, wait for work, or wait out the next retry.
  Idle WhenIdle() {
    if (retries.empty() && ready.empty()) {
      if (stop == nullptr || stop->load(std::memory_order_acquire)) return Idle::kEnd;
      if (TakeOneBeforeSleeping()) return Idle::kGo;
      curl_multi_poll(m.multi, nullptr, 0, PollMs(1000), nullptr);
      m.sleeping.store(false, std::memory_order_relaxed);
      return Idle::kAgain;
    }
    auto wake = retries.front().at;  // only retries waiting out their backoff
    for (const auto& r : retries) wake = std::min(wake, r.at);
    if (const int64_t due = due_ms != nullptr ? (*due_ms)() : -1; due >= 0) {
      wake = std::min(wake, Clock::now() + std::chrono::milliseconds(due));
    }
    std::this_thread::sleep_until(wake);
    return Idle::kAgain;
  }

  // Transfers that ended: retried after a backoff, or handed back.
  void Reap() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(m.multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Slot* s = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &s);
      const CURLcode result = msg->data.result;
      curl_multi_remove_handle(m.multi, s->easy);
      --active;
      S3Request* r = s->req;
      free_slots.push_back(s);
      if (m.Finish(*s, result)) {
        const double wait = m.options.retry_base_seconds * static_cast<double>(1u << std::min(r->attempts - 1, 10));
        retries.push_back({Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait)), r});
      } else {
        done(*r);
      }
    }
  }

  // Transfers out: wait for their next event; serving with a free slot, a new request must wake the poll.
  void Poll() {
    const bool wakeable = stop != nullptr && !free_slots.empty();
    if (wakeable && TakeOneBeforeSleeping()) return;
    curl_multi_poll(m.multi, nullptr, 0, PollMs(50), nullptr);
    if (wakeable) m.sleeping.store(false, std::memory_order_relaxed);
  }

  // A poll's longest wait: `most`, or less where the source has work due sooner (0: none in a millisecond).
  int PollMs(int most) const {
    if (due_ms == nullptr) return most;
    const int64_t due = (*due_ms)();
    return due < 0 ? most : static_cast<int>(std::min<int64_t>(most, due));
  }
};

void S3Client::Impl::Loop(const std::function<S3Request*()>& next, const std::function<void(S3Request&)>& done,
                          const std::atomic<bool>* stop, const std::function<int64_t()>* due_ms) {
  Pass p{*this, next, done, stop, due_ms, {}, {}, {}, 0, false};
  for (auto& s : slots) p.free_slots.push_back(&s);
  for (;;) {
    p.PromoteDueRetries();
    p.FillSlots();
    if (p.active == 0) {
      const Pass::Idle idle = p.WhenIdle();
      if (idle == Pass::Idle::kEnd) return;
      if (idle == Pass::Idle::kAgain) continue;
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    p.Reap();
    if (p.active > 0) p.Poll();
  }
}

Status S3Client::CreateBucket() {
  S3Request r;
  r.method = S3Request::Method::kPut;
  return Run(r);
}

Status S3Client::Put(const std::string& key, const char* data, uint64_t size) {
  S3Request r;
  r.method = S3Request::Method::kPut;
  r.key = key;
  r.body = data;
  r.body_size = size;
  return Run(r);
}

Result<uint64_t> S3Client::Get(const std::string& key, uint64_t begin, uint64_t length, char* dest, uint64_t capacity) {
  S3Request r;
  r.key = key;
  r.range_begin = begin;
  r.range_length = length;
  r.dest = dest;
  r.dest_capacity = capacity;
  Status st = Run(r);
  if (!st.ok()) return st;
  return r.bytes;
}

Result<uint64_t> S3Client::Size(const std::string& key) {
  S3Request r;
  r.method = S3Request::Method::kHead;
  r.key = key;
  Status st = Run(r);
  if (!st.ok()) return st;
  return r.content_length;
}

// Bounded whatever the server answers: a continuation token it gave before (a listing that would never end), more
// than max_list_pages pages, or a stop request ends it with the cause named.
Result<std::vector<S3ObjectEntry>> S3Client::List(const std::string& prefix) {
  std::vector<S3ObjectEntry> all;
  std::string token;
  std::set<std::string> seen;
  const std::string where = "s3://" + bucket() + "/" + prefix;
  for (uint64_t pages = 0;; ++pages) {
    const S3ClientOptions& opt = impl_->options;
    if (opt.stop != nullptr && opt.stop->load(std::memory_order_relaxed)) return Status::Stopped("listing " + where + ": interrupted");
    if (pages >= opt.max_list_pages) {
      return Status::IoError("listing " + where + ": more than " + std::to_string(opt.max_list_pages) + " pages (" +
                             std::to_string(all.size()) + " keys so far); the server's listing does not end");
    }
    S3Request r;
    // Parameters in sorted order: curl signs the query as given.
    r.query = (token.empty() ? "" : "continuation-token=" + S3UriEncode(token, false) + "&") + "list-type=2&max-keys=1000" +
              (prefix.empty() ? "" : "&prefix=" + S3UriEncode(prefix, false));
    Status st = Run(r);
    if (!st.ok()) return st;
    auto page = ParseListObjectsV2(r.text);
    if (!page.ok()) return page.status().WithContext("s3://" + bucket() + "/" + prefix);
    for (auto& o : page.value().objects) all.push_back(std::move(o));
    if (!page.value().truncated) return all;
    token = page.value().next_token;
    if (!seen.insert(token).second) {
      return Status::Corruption("listing " + where + ": the server returned continuation token '" + token.substr(0, 64) +
                                "' a second time (page " + std::to_string(pages + 1) + "): the listing would never end");
    }
  }
}

Status S3Client::Delete(const std::string& key) {
  S3Request r;
  r.method = S3Request::Method::kDelete;
  r.key = key;
  return Run(r);
}

Result<std::string> S3Client::StartMultipart(const std::string& key) {
  S3Request r;
  r.method = S3Request::Method::kPost;
  r.key = key;
  r.query = "uploads=";
  Status st = Run(r);
  if (!st.ok()) return st;
  auto id = ParseUploadId(r.text);
  if (!id.ok()) return id.status().WithContext(Describe(r));
  return id;
}

Status S3Client::PutPart(const std::string& key, const std::string& upload_id, int number, const char* data, uint64_t size,
                         std::string* etag) {
  S3Request r;
  r.method = S3Request::Method::kPut;
  r.key = key;
  r.query = "partNumber=" + std::to_string(number) + "&uploadId=" + S3UriEncode(upload_id, false);
  r.body = data;
  r.body_size = size;
  Status st = Run(r);
  if (st.ok() && r.etag.empty()) st = Status::Corruption(Describe(r) + ": no ETag in the response");
  if (st.ok()) *etag = r.etag;
  return st;
}

Status S3Client::CompleteMultipart(const std::string& key, const std::string& upload_id, const std::vector<std::string>& etags) {
  const std::string xml = CompleteMultipartXml(etags);
  S3Request r;
  r.method = S3Request::Method::kPost;
  r.key = key;
  r.query = "uploadId=" + S3UriEncode(upload_id, false);
  r.body = xml.data();
  r.body_size = xml.size();
  Status st = Run(r);
  // A 200 can still carry an error document (S3 reports late failures that way).
  if (st.ok() && !ParseS3Error(r.text).code.empty()) {
    const S3ErrorBody e = ParseS3Error(r.text);
    st = Status::IoError(Describe(r) + ": " + e.code + ": " + e.message);
  }
  return st;
}

Status S3Client::AbortMultipart(const std::string& key, const std::string& upload_id) {
  S3Request r;
  r.method = S3Request::Method::kDelete;
  r.key = key;
  r.query = "uploadId=" + S3UriEncode(upload_id, false);
  return Run(r);
}

}  // namespace feedrate
