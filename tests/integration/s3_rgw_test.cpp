// The S3 client against a real S3 server: Ceph's RADOS Gateway on 127.0.0.1, started once for these tests by
// scripts/s3-test-server.sh (a CTest fixture). Objects round-trip, ranged reads equal the bytes written, listings
// page, multipart uploads complete and abort, and failures name the bucket, key, HTTP status and S3 error code.
// Skipped, saying why, where the server could not start (Ceph not installed).
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <unistd.h>

#include "harness.h"
#include "loader/s3/s3_client.h"
#include "s3_rgw.h"

namespace feedrate::it {
namespace {

std::string Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(S3Rgw, ObjectsRangesListingsAndDeletes) {
  RGW_OR_SKIP(srv);
  auto c = S3Client::Create(srv.endpoint, srv.credentials, Bucket("objects"), {.max_parallel = 8});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  S3Client& s3 = *c.value();
  ASSERT_TRUE(s3.CreateBucket().ok());
  const std::string big = Random(3 << 20, 1), small = "tiny object";
  ASSERT_TRUE(s3.Put("train/img_0.npz", big.data(), big.size()).ok());
  ASSERT_TRUE(s3.Put("train/img_1.npz", small.data(), small.size()).ok());
  ASSERT_TRUE(s3.Put("eval/other", small.data(), small.size()).ok());
  // Whole object, then 32 ranged reads at once (8 in flight), each equal to the bytes written.
  std::string whole(big.size() + 10, '\0');
  auto n = s3.Get("train/img_0.npz", 0, 0, whole.data(), whole.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n.value(), big.size());
  EXPECT_EQ(whole.substr(0, big.size()), big);
  std::vector<S3Request> reqs(32);
  std::vector<std::string> bufs(32, std::string(100000, '\0'));
  std::vector<S3Request*> ptrs;
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].key = "train/img_0.npz";
    reqs[i].range_begin = i * 98304 + 7;
    reqs[i].range_length = 65536 + i;
    reqs[i].dest = bufs[i].data();
    reqs[i].dest_capacity = bufs[i].size();
    ptrs.push_back(&reqs[i]);
  }
  ASSERT_TRUE(s3.Run(ptrs).ok());
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].http_status, 206);
    EXPECT_EQ(bufs[i].substr(0, reqs[i].range_length), big.substr(reqs[i].range_begin, reqs[i].range_length)) << i;
    EXPECT_GT(reqs[i].ttfb_seconds, 0);
  }
  EXPECT_EQ(s3.Size("train/img_0.npz").value(), big.size());
  auto listed = s3.List("train/");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed.value().size(), 2u);
  EXPECT_EQ(listed.value()[0].key, "train/img_0.npz");
  EXPECT_EQ(listed.value()[0].size, big.size());
  EXPECT_EQ(listed.value()[1].size, small.size());
  // A buffer too small for the object is an error, not a silent truncation.
  char tiny[4];
  EXPECT_NE(s3.Get("train/img_1.npz", 0, 0, tiny, sizeof tiny).status().message().find("larger than the 4-byte buffer"),
            std::string::npos);
  // Deleted: the next read names the bucket, key, status and S3 code.
  for (const char* k : {"train/img_0.npz", "train/img_1.npz", "eval/other"}) ASSERT_TRUE(s3.Delete(k).ok());
  auto gone = s3.Get("train/img_0.npz", 0, 10, whole.data(), whole.size());
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(gone.status().message(), "GET s3://" + s3.bucket() + "/train/img_0.npz (bytes 0-9): HTTP 404 NoSuchKey");
  S3Request del_bucket;
  del_bucket.method = S3Request::Method::kDelete;
  EXPECT_TRUE(s3.Run(del_bucket).ok());
}

TEST(S3Rgw, MultipartCompletesAbortsAndEnforcesPartSizes) {
  RGW_OR_SKIP(srv);
  auto c = S3Client::Create(srv.endpoint, srv.credentials, Bucket("multipart"));
  ASSERT_TRUE(c.ok());
  S3Client& s3 = *c.value();
  ASSERT_TRUE(s3.CreateBucket().ok());
  const std::string data = Random((5 << 20) * 2 + 12345, 2);
  auto id = s3.StartMultipart("big.bin");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::vector<std::string> etags(3);
  const size_t part = 5 << 20;
  for (int p = 0; p < 3; ++p) {
    const size_t off = static_cast<size_t>(p) * part;
    ASSERT_TRUE(s3.PutPart("big.bin", id.value(), p + 1, data.data() + off, std::min(part, data.size() - off), &etags[p]).ok());
  }
  ASSERT_TRUE(s3.CompleteMultipart("big.bin", id.value(), etags).ok());
  EXPECT_EQ(s3.Size("big.bin").value(), data.size());
  std::string back(data.size(), '\0');
  ASSERT_TRUE(s3.Get("big.bin", 0, 0, back.data(), back.size()).ok());
  EXPECT_EQ(back, data);
  // Aborted: the key never appears.
  auto id2 = s3.StartMultipart("aborted.bin");
  ASSERT_TRUE(id2.ok());
  std::string etag;
  ASSERT_TRUE(s3.PutPart("aborted.bin", id2.value(), 1, data.data(), part, &etag).ok());
  ASSERT_TRUE(s3.AbortMultipart("aborted.bin", id2.value()).ok());
  EXPECT_EQ(s3.Size("aborted.bin").status().code(), Status::Code::kNotFound);
  // Parts below 5 MiB (but the last) are refused as real S3 does, and the error says so.
  auto id3 = s3.StartMultipart("small-parts.bin");
  ASSERT_TRUE(id3.ok());
  std::vector<std::string> small(2);
  ASSERT_TRUE(s3.PutPart("small-parts.bin", id3.value(), 1, data.data(), 1000, &small[0]).ok());
  ASSERT_TRUE(s3.PutPart("small-parts.bin", id3.value(), 2, data.data(), 1000, &small[1]).ok());
  const Status too_small = s3.CompleteMultipart("small-parts.bin", id3.value(), small);
  EXPECT_NE(too_small.message().find("EntityTooSmall"), std::string::npos) << too_small.ToString();
  EXPECT_TRUE(s3.AbortMultipart("small-parts.bin", id3.value()).ok());
  EXPECT_TRUE(s3.Delete("big.bin").ok());
}

TEST(S3Rgw, WrongKeysMissingBucketsAndDeadServersAreNamed) {
  RGW_OR_SKIP(srv);
  S3Credentials wrong = srv.credentials;
  wrong.secret_key = "not-the-secret";
  auto bad = S3Client::Create(srv.endpoint, wrong, "any-bucket");
  const Status denied = bad.value()->List("").status();
  EXPECT_NE(denied.message().find("GET s3://any-bucket/?list-type=2&max-keys=1000: HTTP 403 SignatureDoesNotMatch"),
            std::string::npos) << denied.ToString();
  EXPECT_EQ(denied.message().find(wrong.secret_key), std::string::npos);
  auto c = S3Client::Create(srv.endpoint, srv.credentials, Bucket("missing"));
  const Status missing = c.value()->Size("key").status();
  EXPECT_EQ(missing.message(), "HEAD s3://" + c.value()->bucket() + "/key: HTTP 404");  // HEAD has no body to name the code
  const Status no_bucket = c.value()->List("x").status();
  EXPECT_NE(no_bucket.message().find("HTTP 404 NoSuchBucket"), std::string::npos) << no_bucket.ToString();
  // Nothing listening: retried with backoff, then named with the attempts.
  auto dead = S3Client::Create({"http://127.0.0.1:9", "us-east-1", true, {}}, srv.credentials, "b",
                               {.retries = 2, .retry_base_seconds = 0.01});
  const Status refused = dead.value()->Size("k").status();
  EXPECT_NE(refused.message().find("HEAD s3://b/k: "), std::string::npos) << refused.ToString();
  EXPECT_NE(refused.message().find("(after 3 attempts)"), std::string::npos) << refused.ToString();
}

// `feedrate iobench --path s3://...`: the GET/PUT grid against the server, results without the keys; missing
// credentials and a missing bucket are clear errors.
TEST(S3Rgw, IobenchGridGetsAndPuts) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  auto c = S3Client::Create(srv.endpoint, srv.credentials, Bucket("iobench"));
  ASSERT_TRUE(c.value()->CreateBucket().ok());
  const std::string env = "AWS_ACCESS_KEY_ID=" + srv.credentials.access_key + " AWS_SECRET_ACCESS_KEY=" +
                          srv.credentials.secret_key + " ";
  const std::string args = " --endpoint " + srv.endpoint.url + " --rw write,read --object-size 1m --part-size 256k"
                           " --concurrency 1,4 --runtime 0.3 --results-dir " + dir / "r";
  auto run = Sh(env + Feedrate("iobench --path s3://" + c.value()->bucket() + "/bench" + args));
  ASSERT_EQ(run.code, 0) << run.output;
  const std::string json = test::ReadFile(dir / "r/s3bench.json");
  EXPECT_EQ(json.find(srv.credentials.secret_key), std::string::npos);
  EXPECT_EQ(json.find(srv.credentials.access_key), std::string::npos);
  auto j = ReadJson(dir / "r/s3bench.json");
  ASSERT_EQ(j["cells"].size(), 4u) << j.dump(2);
  for (const auto& cell : j["cells"]) {
    EXPECT_GT(cell["requests"].get<uint64_t>(), 0u) << cell.dump();
    EXPECT_EQ(cell["bytes"].get<uint64_t>(), cell["requests"].get<uint64_t>() * cell["request_size"].get<uint64_t>()) << cell.dump();
    EXPECT_GT(cell["lat_ms"]["p50"].get<double>(), 0) << cell.dump();
  }
  EXPECT_EQ(j["cells"][2]["op"], "get");
  EXPECT_EQ(j["cells"][2]["request_size"], 262144);
  // The objects the GET cells read are there, whole.
  EXPECT_EQ(c.value()->Size("bench/feedrate-s3bench/obj-1048576-0").value(), 1048576u);
  auto no_keys = Sh("env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=" + dir.path() + " " +
                    Feedrate("iobench --path s3://" + c.value()->bucket() + "/bench" + args));
  EXPECT_EQ(no_keys.code, 2);
  EXPECT_NE(no_keys.output.find("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"), std::string::npos)
      << no_keys.output;
  auto no_bucket = Sh(env + Feedrate("iobench --path s3://" + Bucket("absent") + "/x" + args));
  EXPECT_EQ(no_bucket.code, 2);
  EXPECT_NE(no_bucket.output.find("HTTP 404 NoSuchBucket"), std::string::npos) << no_bucket.output;
}

}  // namespace
}  // namespace feedrate::it
