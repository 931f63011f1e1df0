// Inspection of .npy/.npz files (format detected from content), hashing array data.
#include "loader/format/inspect.h"

#include "loader/format/sha256.h"
#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

Result<std::string> Sha256OfArray(int fd, const NpArray& a, const std::string& path) {
  Sha256 h;
  uint64_t seen = 0;
  Status st = StreamArrayData(fd, a, path, [&](const char* d, size_t n) {
    seen += n;
    return h.Update(d, n);
  });
  if (!st.ok()) return st;
  if (seen != a.header.nbytes) {
    return Status::Corruption(path + ": array '" + a.name + "' has " + std::to_string(seen) + " data bytes, expected " +
                              std::to_string(a.header.nbytes));
  }
  return h.FinishHex();
}

}  // namespace

Result<FileReport> InspectNumpyFile(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd.get(), path));
  FEEDRATE_ASSIGN_OR_RETURN(auto kind, DetectNumpyFileKind(fd.get(), size, path));
  FileReport report;
  report.path = path;
  report.size = size;
  std::vector<NpArray> arrays;
  if (kind == NumpyFileKind::kNpy) {
    report.kind = "npy";
    FEEDRATE_ASSIGN_OR_RETURN(auto a, ReadNpyFile(fd.get(), size, path));
    arrays.push_back(std::move(a));
  } else if (kind == NumpyFileKind::kNpz) {
    report.kind = "npz";
    FEEDRATE_ASSIGN_OR_RETURN(auto as, ReadNpzArrays(fd.get(), size, path));
    arrays = std::move(as);
  } else {
    return Status::Corruption(path + ": neither a .npy file nor a zip/.npz archive (unrecognised magic bytes)");
  }
  for (auto& a : arrays) {
    FEEDRATE_ASSIGN_OR_RETURN(auto h, Sha256OfArray(fd.get(), a, path));
    report.arrays.push_back({std::move(a), std::move(h)});
  }
  return report;
}

}  // namespace feedrate
