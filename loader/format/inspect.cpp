// Inspection of .npy/.npz files (format detected from content), hashing array data with OpenSSL.
#include "loader/format/inspect.h"

#include <openssl/evp.h>

#include <memory>

#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

Result<std::string> Sha256OfArray(int fd, const NpArray& a, const std::string& path) {
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return Status::IoError("OpenSSL sha256 init failed");
  uint64_t seen = 0;
  Status st = StreamArrayData(fd, a, path, [&](const char* d, size_t n) {
    seen += n;
    return EVP_DigestUpdate(ctx.get(), d, n) == 1 ? Status::Ok() : Status::IoError("OpenSSL sha256 update failed");
  });
  if (!st.ok()) return st;
  if (seen != a.header.nbytes) {
    return Status::Corruption(path + ": array '" + a.name + "' has " + std::to_string(seen) + " data bytes, expected " +
                              std::to_string(a.header.nbytes));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) return Status::IoError("OpenSSL sha256 final failed");
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex.push_back(kHex[md[i] >> 4]);
    hex.push_back(kHex[md[i] & 15]);
  }
  return hex;
}

}  // namespace

Result<FileReport> InspectNumpyFile(const std::string& path) {
  auto fd = OpenForRead(path);
  if (!fd.ok()) return fd.status();
  auto size = FileSize(fd->get(), path);
  if (!size.ok()) return size.status();
  auto kind = DetectNumpyFileKind(fd->get(), *size, path);
  if (!kind.ok()) return kind.status();
  FileReport report;
  report.path = path;
  report.size = *size;
  std::vector<NpArray> arrays;
  if (*kind == NumpyFileKind::kNpy) {
    report.kind = "npy";
    auto a = ReadNpyFile(fd->get(), *size, path);
    if (!a.ok()) return a.status();
    arrays.push_back(std::move(*a));
  } else if (*kind == NumpyFileKind::kNpz) {
    report.kind = "npz";
    auto as = ReadNpzArrays(fd->get(), *size, path);
    if (!as.ok()) return as.status();
    arrays = std::move(*as);
  } else {
    return Status::Corruption(path + ": neither a .npy file nor a zip/.npz archive (unrecognised magic bytes)");
  }
  for (auto& a : arrays) {
    auto h = Sha256OfArray(fd->get(), a, path);
    if (!h.ok()) return h.status();
    report.arrays.push_back({std::move(a), std::move(*h)});
  }
  return report;
}

}  // namespace feedrate
