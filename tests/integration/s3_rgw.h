// The S3 test server for the integration tests: Ceph RGW started by scripts/s3-test-server.sh (CTest fixture);
// its endpoint and keys, or why the tests skip.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "harness.h"
#include "loader/s3/s3_config.h"

namespace feedrate::it {

struct Server {
  S3Endpoint endpoint;
  S3Credentials credentials;
  std::string skip;
  // "AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... " for command lines.
  std::string Env() const {
    return "AWS_ACCESS_KEY_ID=" + credentials.access_key + " AWS_SECRET_ACCESS_KEY=" + credentials.secret_key + " ";
  }
};

inline Server Rgw() {
  Server s;
  auto env = Sh(std::string(FEEDRATE_SOURCE_DIR) + "/scripts/s3-test-server.sh env");
  std::istringstream in(env.output);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "FEEDRATE_S3_ENDPOINT") s.endpoint.url = v;
    if (k == "AWS_ACCESS_KEY_ID") s.credentials.access_key = v;
    if (k == "AWS_SECRET_ACCESS_KEY") s.credentials.secret_key = v;
  }
  if (Sh("curl -s -o /dev/null " + s.endpoint.url + "/").code != 0) {
    s.skip = "no S3 server at " + s.endpoint.url + " (scripts/s3-test-server.sh start: Ceph RGW not installed?)";
  }
  return s;
}

#define RGW_OR_SKIP(s)                            \
  Server s = Rgw();                               \
  if (!(s).skip.empty()) GTEST_SKIP() << (s).skip

inline std::string Bucket(const char* what) { return std::string("feedrate-") + what + "-" + std::to_string(::getpid()); }

}  // namespace feedrate::it
