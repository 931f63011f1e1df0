// Fuzzes TFRecord framing: the header walk, the three-header probe of uniform files, the in-memory record check
// (length, length CRC, payload CRC), DLIO/DALI .idx files against a data file size taken from the input, and the
// Example walk that finds the payload --verify checks.
#include <cstring>

#include "fuzz_util.h"
#include "loader/format/tfrecord.h"
#include "loader/util/content_pattern.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedrate;
  fuzz::MemFile f(data, size);
  (void)ScanTfRecordFile(f.fd(), f.size(), "fuzz.tfrecord");
  (void)ProbeUniformTfRecordFile(f.fd(), f.size(), "fuzz.tfrecord");
  if (size >= kTfRecordHeaderBytes) {
    uint64_t length = 0;
    std::memcpy(&length, data, sizeof length);
    // CheckTfRecord's contract: length + 16 bytes follow `rec`; only call it when they do.
    if (length <= size - kTfRecordOverhead && size >= kTfRecordOverhead) {
      (void)CheckTfRecord(reinterpret_cast<const char*>(data), length, true, "fuzz.tfrecord", 0, 0);
    }
  }
  // The same bytes as an index file, for a data file of (first 4 bytes) bytes.
  uint32_t data_size = 0;
  if (size >= 4) std::memcpy(&data_size, data, 4);
  (void)ReadTfRecordIndex(f.path(), data_size);
  // The same bytes as one framed record whose Example is walked for its "image" payload (run --verify).
  auto range = ContentRange(DataFormat::kTfRecord, reinterpret_cast<const char*>(data), size);
  if (range.ok() && (range->first > range->second || range->second > size)) __builtin_trap();
  return 0;
}
