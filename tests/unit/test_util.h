// Helpers shared by the unit tests: temporary directories and small file writers.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace feedrate::test {

// A fresh directory under TMPDIR, removed when the object goes away.
class TempDir {
 public:
  // Under `base` (default TMPDIR); /var/tmp is on a disk on Debian, where page-cache tests need a real file system.
  explicit TempDir(const std::string& base = std::filesystem::temp_directory_path().string()) {
    std::string templ = base + "/feedrate-test-XXXXXX";
    path_ = ::mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// tests/fixtures: third-party reference files with their MANIFEST.json (tests/fixtures/README.md).
inline std::string FixturesDir() { return FEEDRATE_FIXTURES_DIR; }

}  // namespace feedrate::test
