// Inspection of TFRecord files (every record's framing, CRCs and payload), and content-based format detection.
#include <sys/stat.h>

#include <cstring>

#include "loader/format/crc32c.h"
#include "loader/format/inspect.h"
#include "loader/format/sha256.h"
#include "loader/io/unique_fd.h"

namespace feedrate {

Result<TfRecordReport> InspectTfRecordFile(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd.get(), path));
  FEEDRATE_ASSIGN_OR_RETURN(auto entries, ScanTfRecordFile(fd.get(), size, path));
  TfRecordReport report;
  report.path = path;
  report.size = size;
  std::vector<char> buf;
  for (size_t k = 0; k < entries.size(); ++k) {
    const TfRecordEntry& e = entries[k];
    buf.resize(e.framed());
    FEEDRATE_RETURN_IF_ERROR(PreadFull(fd.get(), buf.data(), buf.size(), e.offset, path));
    FEEDRATE_RETURN_IF_ERROR(CheckTfRecord(buf.data(), e.length, true, path, k, e.offset));
    TfRecordRecordReport r;
    r.entry = e;
    std::memcpy(&r.payload_crc, buf.data() + kTfRecordHeaderBytes + e.length, 4);
    r.payload_sha256 = Sha256Hex(buf.data() + kTfRecordHeaderBytes, e.length);
    r.payload = SummarizeTfRecordPayload(buf.data() + kTfRecordHeaderBytes, e.length);
    if (report.payload_type.empty()) {
      report.payload_type = r.payload.type;
    } else if (report.payload_type != r.payload.type) {
      report.payload_type = "mixed";
    }
    report.records.push_back(std::move(r));
  }
  if (report.records.empty()) report.payload_type = "none";
  return report;
}

Result<FileFormat> DetectFileFormat(const std::string& path) {
  // Only a regular file is a dataset file: opening a FIFO would wait for a writer, forever.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Errno("cannot open " + path, errno);
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISCHR(st.st_mode) ? "a character device" : S_ISBLK(st.st_mode) ? "a block device" : "not a file";
    return Status::InvalidArgument(path + ": not a regular file (" + std::string(what) + ")");
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd.get(), path));
  char head[12] = {};
  size_t n = static_cast<size_t>(std::min<uint64_t>(size, sizeof head));
  if (n > 0) FEEDRATE_RETURN_IF_ERROR(PreadFull(fd.get(), head, n, 0, path));
  if (n >= 6 && std::memcmp(head, "\x93NUMPY", 6) == 0) return FileFormat::kNpy;
  if (n >= 4 && std::memcmp(head, "PK", 2) == 0) return FileFormat::kNpz;
  if (n >= 8 && std::memcmp(head, "\x89HDF\r\n\x1a\n", 8) == 0) return FileFormat::kHdf5;
  if (n >= 8 && std::memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0) return FileFormat::kPng;
  if (n >= 3 && std::memcmp(head, "\xFF\xD8\xFF", 3) == 0) return FileFormat::kJpeg;
  if (n >= 4 && std::memcmp(head, "PAR1", 4) == 0) return FileFormat::kParquet;
  if (n == 12) {
    uint32_t stored;
    std::memcpy(&stored, head + 8, 4);
    if (stored == MaskCrc(Crc32c(head, 8))) return FileFormat::kTfRecord;
  }
  return FileFormat::kUnknown;
}

}  // namespace feedrate
