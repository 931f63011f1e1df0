// s3:// URLs, request URLs and credential loading.
#include "loader/s3/s3_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace feedrate {

Result<S3Location> ParseS3Url(std::string_view url) {
  constexpr std::string_view kScheme = "s3://";
  if (!url.starts_with(kScheme)) return Status::InvalidArgument("'" + std::string(url) + "' is not an s3:// URL");
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  S3Location loc;
  loc.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) loc.prefix = std::string(rest.substr(slash + 1));
  while (!loc.prefix.empty() && loc.prefix.back() == '/') loc.prefix.pop_back();
  // Bucket names: 3-63 characters of lower-case letters, digits, '-' and '.' (S3's rules, simplified).
  bool valid = loc.bucket.size() >= 3 && loc.bucket.size() <= 63;
  for (char c : loc.bucket) valid = valid && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
  if (!valid) return Status::InvalidArgument("'" + std::string(url) + "': '" + loc.bucket + "' is not a valid bucket name");
  return loc;
}

void AppendS3UriEncoded(std::string* out, std::string_view text, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  for (unsigned char c : text) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                       c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
    if (plain) {
      *out += static_cast<char>(c);
    } else {
      *out += '%';
      *out += kHex[c >> 4];
      *out += kHex[c & 15];
    }
  }
}

std::string S3UriEncode(std::string_view text, bool keep_slash) {
  std::string out;
  out.reserve(text.size());
  AppendS3UriEncoded(&out, text, keep_slash);
  return out;
}

void BuildS3RequestUrl(std::string* url, const S3Endpoint& e, std::string_view bucket, std::string_view key,
                       std::string_view query) {
  url->clear();
  if (e.path_style) {
    url->append(e.url).append("/").append(bucket);
    if (!key.empty()) {
      *url += '/';
      AppendS3UriEncoded(url, key, true);
    }
  } else {
    const size_t scheme = e.url.find("://");
    const size_t host = scheme == std::string::npos ? 0 : scheme + 3;
    const std::string_view base(e.url);
    url->append(base.substr(0, host)).append(bucket).append(".").append(base.substr(host)).append("/");
    AppendS3UriEncoded(url, key, true);
  }
  if (!query.empty()) url->append("?").append(query);
}

std::string S3RequestUrl(const S3Endpoint& e, const std::string& bucket, const std::string& key, const std::string& query) {
  std::string url;
  BuildS3RequestUrl(&url, e, bucket, key, query);
  return url;
}

namespace {

std::string Trim(std::string s) {
  const size_t b = s.find_first_not_of(" \t\r");
  const size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

Result<S3Credentials> ParseAwsCredentials(std::string_view text, const std::string& profile, const std::string& path) {
  std::istringstream in{std::string(text)};
  std::string line, section;
  S3Credentials c;
  bool found = false;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(line.substr(1, line.size() - 2));
      found = found || section == profile;
      continue;
    }
    if (section != profile) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = Trim(line.substr(0, eq)), v = Trim(line.substr(eq + 1));
    if (k == "aws_access_key_id") c.access_key = v;
    if (k == "aws_secret_access_key") c.secret_key = v;
    if (k == "aws_session_token") c.session_token = v;
  }
  if (!found) return Status::NotFound(path + ": no [" + profile + "] profile");
  if (c.access_key.empty() || c.secret_key.empty()) {
    return Status::InvalidArgument(path + " [" + profile + "]: aws_access_key_id and aws_secret_access_key are both needed");
  }
  c.source = path + " [" + profile + "]";
  return c;
}

Result<S3Credentials> LoadS3Credentials() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  S3Credentials c;
  c.access_key = env("AWS_ACCESS_KEY_ID");
  c.secret_key = env("AWS_SECRET_ACCESS_KEY");
  c.session_token = env("AWS_SESSION_TOKEN");
  if (!c.access_key.empty() && !c.secret_key.empty()) {
    c.source = "environment (AWS_ACCESS_KEY_ID)";
    return c;
  }
  std::string path = env("AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty()) path = env("HOME").empty() ? "" : env("HOME") + "/.aws/credentials";
  const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
  std::ifstream in(path);
  if (path.empty() || !in) {
    return Status::NotFound("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give a [" + profile +
                            "] profile in " + (path.empty() ? "~/.aws/credentials" : path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseAwsCredentials(text.str(), profile, path);
}

}  // namespace feedrate
