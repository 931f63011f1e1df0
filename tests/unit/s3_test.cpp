// S3 request construction without a server: URLs and key encoding, credentials files, the XML Feedrate reads, and
// SigV4: a verifier written from AWS's specification (checked on AWS's published GET example) recomputes the
// signature of a request S3Client really sent to a local socket, so the signed headers and canonical form are right.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "loader/s3/s3_client.h"
#include "loader/s3/s3_config.h"
#include "loader/s3/s3_engine.h"
#include "loader/s3/s3_xml.h"

namespace feedrate {
namespace {

TEST(S3Config, UrlsAndKeyEncoding) {
  auto loc = ParseS3Url("s3://my-bucket/data/unet3d/");
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc.value().bucket, "my-bucket");
  EXPECT_EQ(loc.value().prefix, "data/unet3d");
  EXPECT_EQ(ParseS3Url("s3://bkt").value().prefix, "");
  EXPECT_FALSE(ParseS3Url("http://bkt/x").ok());
  EXPECT_NE(ParseS3Url("s3://Bad_Bucket/x").status().message().find("not a valid bucket name"), std::string::npos);
  EXPECT_EQ(S3UriEncode("train/img 1+2=3~.npz", true), "train/img%201%2B2%3D3~.npz");
  EXPECT_EQ(S3UriEncode("a/b", false), "a%2Fb");
  S3Endpoint e{"http://127.0.0.1:7480", "us-east-1", true, {}};
  EXPECT_EQ(S3RequestUrl(e, "bkt", "train/a b.npz", ""), "http://127.0.0.1:7480/bkt/train/a%20b.npz");
  EXPECT_EQ(S3RequestUrl(e, "bkt", "", "list-type=2"), "http://127.0.0.1:7480/bkt?list-type=2");
  e.path_style = false;
  e.url = "https://s3.example.com";
  EXPECT_EQ(S3RequestUrl(e, "bkt", "k", "uploads="), "https://bkt.s3.example.com/k?uploads=");
  // A request slot rebuilds its URL in place: the old contents never leak into the next one, and a long URL
  // followed by a shorter one keeps the buffer.
  std::string url = "left over from the previous request";
  e.path_style = true;
  e.url = "http://h:1";
  BuildS3RequestUrl(&url, e, "bkt", "train/img_000001_of_000100.npz", "");
  EXPECT_EQ(url, "http://h:1/bkt/train/img_000001_of_000100.npz");
  const char* const data = url.data();
  BuildS3RequestUrl(&url, e, "bkt", "x y", "partNumber=2");
  EXPECT_EQ(url, "http://h:1/bkt/x%20y?partNumber=2");
  EXPECT_EQ(url.data(), data);
}

TEST(S3Config, CredentialsFileProfiles) {
  const char* text =
      "# comment\n[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key=secretdefault\n\n"
      "[bench]\naws_access_key_id=AKBENCH\naws_secret_access_key = secretbench\naws_session_token = tok\n[broken]\n"
      "aws_access_key_id=AKONLY\n";
  auto d = ParseAwsCredentials(text, "default", "/h/.aws/credentials");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d.value().access_key, "AKDEFAULT");
  EXPECT_EQ(d.value().secret_key, "secretdefault");
  EXPECT_EQ(d.value().source, "/h/.aws/credentials [default]");
  auto b = ParseAwsCredentials(text, "bench", "f");
  EXPECT_EQ(b.value().session_token, "tok");
  auto broken = ParseAwsCredentials(text, "broken", "f");
  EXPECT_NE(broken.status().message().find("both needed"), std::string::npos);
  EXPECT_EQ(broken.status().message().find("AKONLY"), std::string::npos);  // keys are never printed
  EXPECT_EQ(ParseAwsCredentials(text, "nope", "f").status().message(), "f: no [nope] profile");
}

TEST(S3Xml, ErrorsListingsAndMultipart) {
  const auto e = ParseS3Error(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchKey</Code><Message>The specified key does not "
      "exist.</Message><BucketName>b</BucketName><RequestId>tx1</RequestId></Error>");
  EXPECT_EQ(e.code, "NoSuchKey");
  EXPECT_EQ(e.message, "The specified key does not exist.");
  EXPECT_EQ(ParseS3Error("not xml").code, "");
  // As RGW 16.2 answers ListObjectsV2 (namespaced, truncated).
  auto page = ParseListObjectsV2(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><Prefix>train/</Prefix><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>"
      "<Contents><Key>train/img_0.npz</Key><LastModified>2026-12-01T00:00:00.000Z</LastModified>"
      "<ETag>&quot;abc&quot;</ETag><Size>146600628</Size><StorageClass>STANDARD</StorageClass></Contents>"
      "<Contents><Key>train/img_1.npz</Key><ETag>&quot;def&quot;</ETag><Size>12</Size></Contents>"
      "<NextContinuationToken>tok+/=</NextContinuationToken><KeyCount>2</KeyCount></ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page.value().objects.size(), 2u);
  EXPECT_EQ(page.value().objects[0].key, "train/img_0.npz");
  EXPECT_EQ(page.value().objects[0].size, 146600628u);
  EXPECT_EQ(page.value().objects[0].etag, "\"abc\"");
  EXPECT_TRUE(page.value().truncated);
  EXPECT_EQ(page.value().next_token, "tok+/=");
  EXPECT_FALSE(ParseListObjectsV2("<ListBucketResult><Contents><Key>k</Key><Size>x</Size></Contents></ListBucketResult>").ok());
  EXPECT_FALSE(ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>").ok());
  EXPECT_FALSE(ParseListObjectsV2("<Error/>").ok());
  EXPECT_EQ(ParseUploadId("<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>2~abc</UploadId>"
                          "</InitiateMultipartUploadResult>").value(), "2~abc");
  EXPECT_FALSE(ParseUploadId("<InitiateMultipartUploadResult/>").ok());
  EXPECT_EQ(CompleteMultipartXml({"\"e1\"", "\"e2\""}),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part>"
            "<Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part></CompleteMultipartUpload>");
}

// --- SigV4, from the specification ---------------------------------------------------------------------------

std::string Hex(const unsigned char* p, size_t n) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += k[p[i] >> 4];
    s += k[p[i] & 15];
  }
  return s;
}
std::string Sha256Hex(const std::string& data) {
  unsigned char md[32];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return Hex(md, len);
}
std::string Hmac(const std::string& key, const std::string& data) {
  unsigned char md[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), md, &len);
  return std::string(reinterpret_cast<char*>(md), len);
}

// The signature for a request: method, path and query already canonical; headers = the signed ones (lower-case
// names, trimmed values).
std::string SigV4(const std::string& method, const std::string& path, const std::string& query,
                  const std::map<std::string, std::string>& headers, const std::string& payload_hash,
                  const std::string& secret, const std::string& region) {
  std::string canonical_headers, signed_headers;
  for (const auto& [k, v] : headers) {
    canonical_headers += k + ":" + v + "\n";
    signed_headers += (signed_headers.empty() ? "" : ";") + k;
  }
  const std::string canonical = method + "\n" + path + "\n" + query + "\n" + canonical_headers + "\n" + signed_headers +
                                "\n" + payload_hash;
  const std::string date = headers.at("x-amz-date"), day = date.substr(0, 8);
  const std::string scope = day + "/" + region + "/s3/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + date + "\n" + scope + "\n" + Sha256Hex(canonical);
  const std::string key = Hmac(Hmac(Hmac(Hmac("AWS4" + secret, day), region), "s3"), "aws4_request");
  const std::string sig = Hmac(key, to_sign);
  return Hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}

// AWS's documented example (S3 API reference, "Signature Calculations for the Authorization Header", GET Object).
TEST(S3SigV4, VerifierReproducesAwsGetObjectExample) {
  const std::string empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  EXPECT_EQ(Sha256Hex(""), empty);
  EXPECT_EQ(SigV4("GET", "/test.txt", "",
                  {{"host", "examplebucket.s3.amazonaws.com"}, {"range", "bytes=0-9"},
                   {"x-amz-content-sha256", empty}, {"x-amz-date", "20130524T000000Z"}},
                  empty, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1"),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// One HTTP request captured by a socket on 127.0.0.1, answered 200 with a small body.
struct CapturedRequest {
  std::string head;
};
std::string Header(const std::string& head, const std::string& name) {
  std::istringstream in(head);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
    if (k == name) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "";
}

TEST(S3SigV4, ClientRequestsCarryAValidSignature) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ASSERT_EQ(::listen(fd, 4), 0);
  const int port = ntohs(addr.sin_port);
  std::vector<CapturedRequest> seen;
  std::thread server([&] {
    for (int n = 0; n < 2; ++n) {
      int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        const ssize_t got = ::read(c, buf, sizeof buf);
        if (got <= 0) break;
        head.append(buf, static_cast<size_t>(got));
      }
      seen.push_back({head.substr(0, head.find("\r\n\r\n") + 2)});
      const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"e\"\r\nConnection: close\r\n\r\nhello";
      (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    }
  });
  S3Credentials cred{"AKIDTEST", "secret/key+value", "", "test"};
  auto client = S3Client::Create({"http://127.0.0.1:" + std::to_string(port), "eu-west-1", true, {}}, cred, "bkt");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  char dest[16];
  auto got = client.value()->Get("train/img 1.npz", 100, 5, dest, sizeof dest);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(std::string(dest, 5), "hello");
  S3Request list;
  list.query = "list-type=2&max-keys=1000&prefix=train%2F";
  ASSERT_TRUE(client.value()->Run(list).ok());
  server.join();
  ::close(fd);
  ASSERT_EQ(seen.size(), 2u);
  const std::vector<std::pair<std::string, std::string>> want = {{"/bkt/train/img%201.npz", ""},
                                                                 {"/bkt", "list-type=2&max-keys=1000&prefix=train%2F"}};
  for (size_t i = 0; i < 2; ++i) {
    const std::string& h = seen[i].head;
    EXPECT_EQ(h.substr(0, h.find('\r')), "GET " + want[i].first + (want[i].second.empty() ? "" : "?" + want[i].second) + " HTTP/1.1");
    if (i == 0) {
      EXPECT_EQ(Header(h, "range"), "bytes=100-104");
    }
    EXPECT_EQ(Header(h, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
    const std::string auth = Header(h, "authorization");
    ASSERT_EQ(auth.rfind("AWS4-HMAC-SHA256 Credential=AKIDTEST/", 0), 0u) << auth;
    EXPECT_NE(auth.find("/eu-west-1/s3/aws4_request"), std::string::npos) << auth;
    // The headers it says it signed, recomputed from what arrived.
    const size_t sh = auth.find("SignedHeaders=") + 14;
    const std::string signed_list = auth.substr(sh, auth.find(',', sh) - sh);
    EXPECT_NE(signed_list.find("x-amz-content-sha256"), std::string::npos) << signed_list;
    std::map<std::string, std::string> headers;
    std::istringstream names(signed_list);
    for (std::string name; std::getline(names, name, ';');) headers[name] = Header(h, name);
    const std::string sig = auth.substr(auth.find("Signature=") + 10);
    EXPECT_EQ(sig, SigV4("GET", want[i].first, want[i].second, headers, "UNSIGNED-PAYLOAD", cred.secret_key, "eu-west-1"))
        << h;
  }
}

// A server whose listing never ends (it hands back the continuation token it gave before, page after page): List
// stops at the second time it sees a token, naming it, instead of paging on with memory growing; a stop request
// ends it too, and so does the page bound.
TEST(S3Client, AListingThatNeverEndsIsStopped) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ASSERT_EQ(::listen(fd, 16), 0);
  const int port = ntohs(addr.sin_port);
  std::atomic<int> served{0};
  std::atomic<bool> done{false};
  std::thread server([&] {
    const std::string body = "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
                             "<NextContinuationToken>again</NextContinuationToken><Contents><Key>k</Key><Size>1</Size>"
                             "</Contents></ListBucketResult>";
    const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\nConnection: close\r\n\r\n" + body;
    while (!done.load()) {
      int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      std::string head;
      while (head.find("\r\n\r\n") == std::string::npos) {
        const ssize_t got = ::read(c, buf, sizeof buf);
        if (got <= 0) break;
        head.append(buf, static_cast<size_t>(got));
      }
      ++served;  // counted before the reply goes out: the client may check it the moment the reply lands
      (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    }
  });
  S3Credentials cred{"AKIDTEST", "secret", "", "test"};
  const S3Endpoint ep{"http://127.0.0.1:" + std::to_string(port), "us-east-1", true, {}};
  auto client = S3Client::Create(ep, cred, "bkt");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto listed = client.value()->List("train/");
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().ToString().find("continuation token 'again' a second time"), std::string::npos) << listed.status().ToString();
  EXPECT_EQ(served.load(), 2);
  std::atomic<bool> stop{true};
  auto stopped = S3Client::Create(ep, cred, "bkt", {.stop = &stop});
  ASSERT_TRUE(stopped.ok());
  EXPECT_NE(stopped.value()->List("train/").status().ToString().find("interrupted"), std::string::npos);
  auto bounded = S3Client::Create(ep, cred, "bkt", {.max_list_pages = 1});
  ASSERT_TRUE(bounded.ok());
  EXPECT_NE(bounded.value()->List("train/").status().ToString().find("more than 1 pages"), std::string::npos);
  done = true;
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  server.join();
}

// This process's threads whose scheduling policy is `policy` (/proc/self/task).
int ThreadsWithPolicy(int policy) {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (::sched_getscheduler(static_cast<pid_t>(std::stoi(task.path().filename()))) == policy) ++n;
  }
  return n;
}

// The engine's event loops take the run's I/O thread policy (--io-thread-policy), as the file engines' threads do:
// they copy bytes and parse HTTP, throughput work that must not delay the accelerator threads' wake-ups.
TEST(S3Engine, EventLoopsTakeTheIoThreadPolicy) {
  S3Store store;
  store.endpoint.url = "http://127.0.0.1:9";  // never asked: nothing is submitted
  store.bucket = "bucket";
  auto keys = FileTable::Create(std::vector<std::string>{"train/a.npz"}, FileOpenMode::kPerSample);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EngineOptions o;
  o.threads = 2;
  o.queue_depth = 1;
  o.transfer_size = 4096;
  o.thread_policy = IoThreadPolicy::kIdle;
  const int before = ThreadsWithPolicy(SCHED_IDLE);
  auto engine = S3Engine::Create(*keys, o, store);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  // Each loop applies the policy as it starts: wait until both have (or 10 s), then count.
  for (int i = 0; i < 1000 && ThreadsWithPolicy(SCHED_IDLE) < before + 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ThreadsWithPolicy(SCHED_IDLE), before + 2);
}

}  // namespace
}  // namespace feedrate
