// TFRecord framing: u64 length, u32 masked CRC-32C of the length, payload, u32 masked CRC-32C of the payload.
// Indexing (walking headers, or DLIO/DALI `.idx` files), per-record checks, and encoding for the writer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loader/io/byte_source.h"
#include "loader/status.h"

namespace feedrate {

constexpr uint64_t kTfRecordHeaderBytes = 12;  // length + its CRC
constexpr uint64_t kTfRecordFooterBytes = 4;   // payload CRC
constexpr uint64_t kTfRecordOverhead = kTfRecordHeaderBytes + kTfRecordFooterBytes;

struct TfRecordEntry {
  uint64_t offset = 0;  // where the record's 12-byte header starts
  uint64_t length = 0;  // payload bytes
  uint64_t framed() const { return length + kTfRecordOverhead; }
};

void EncodeTfRecordHeader(uint64_t length, char out[kTfRecordHeaderBytes]);
// The masked CRC-32C footer of a payload (pass the previous crc to extend over several pieces).
uint32_t TfRecordPayloadCrc(const void* payload, uint64_t n);

// Checks one record held in memory (`rec` points at its header, `length + 16` bytes follow): the length field
// equals `expected_length`, its CRC matches, and with `verify_payload` the payload CRC matches. Errors name the
// file, the record and its offset, and the expected vs found values.
Status CheckTfRecord(const char* rec, uint64_t expected_length, bool verify_payload, std::string_view path,
                     uint64_t record_index, uint64_t offset);

// TensorFlow's record reader over one file's stream, checking as the bytes go by (the DLIO pattern's fills land in
// a buffer a record spans several of): each record's length CRC and, with verify_payload, its payload CRC and
// footer. Trivially copyable: it lives in the engine's per-lane state. Call order: Reset, then Feed with the
// stream's bytes in order from offset 0, then End at the end of the file. Errors name the file, record and offset.
struct TfRecordStreamCheck {
  void Reset(bool verify_payload);
  Status Feed(const char* data, uint64_t n, std::string_view path);
  // The stream met the end of the file: a record cut short is Corruption.
  Status End(std::string_view path) const;

  uint64_t pos = 0;        // stream bytes fed so far
  uint64_t record = 0;     // the record being parsed, and where it starts
  uint64_t record_at = 0;
  uint64_t left = 0;       // its payload bytes still to come
  uint32_t crc = 0;        // the payload's CRC-32C so far
  uint8_t phase = 0;       // 0: header, 1: payload, 2: footer
  uint8_t have = 0;        // header or footer bytes gathered
  bool verify = true;
  char buf[kTfRecordHeaderBytes] = {};
};

// Walks the file's headers (length CRCs checked; payloads skipped), reading ahead in large blocks so small
// records cost no syscall each. A truncated header, a length past the end of the file or a bad length CRC is
// Corruption naming the record and its offset.
Result<std::vector<TfRecordEntry>> ScanTfRecordFile(const ByteSource& src);
inline Result<std::vector<TfRecordEntry>> ScanTfRecordFile(int fd, uint64_t file_size, const std::string& path) {
  return ScanTfRecordFile(FdByteSource(fd, file_size, path));
}

// Indexes a file whose records all have the same length (what DLIO writes) from three headers: the first, the
// middle and the last. Returns an empty vector when the file is not uniform (the caller then scans it).
Result<std::vector<TfRecordEntry>> ProbeUniformTfRecordFile(const ByteSource& src);
inline Result<std::vector<TfRecordEntry>> ProbeUniformTfRecordFile(int fd, uint64_t file_size, const std::string& path) {
  return ProbeUniformTfRecordFile(FdByteSource(fd, file_size, path));
}

// Reads a DLIO/DALI index file: one "<offset> <size>" line per record, size counting header and footer. The
// records must tile the data file exactly; anything else is Corruption naming the index file and line.
Result<std::vector<TfRecordEntry>> ReadTfRecordIndex(const std::string& idx_path, uint64_t data_file_size);
Result<std::vector<TfRecordEntry>> ReadTfRecordIndex(const ByteSource& idx, uint64_t data_file_size);
// The index text for `entries` (what DLIO writes under <data_folder>/index/<split>/<file>.idx).
std::string FormatTfRecordIndex(const std::vector<TfRecordEntry>& entries);
// DLIO's index location for a data file: <data_folder>/index/<split>/<basename>.idx.
std::string TfRecordIndexPath(const std::string& data_folder, const std::string& split, const std::string& data_path);

}  // namespace feedrate
