// Writes DLIO-layout TFRecord files: num_samples records, each a tf.train.Example {image: bytes (d1*d2 uint8),
// size: int64 [d1*d2]} with valid CRCs, and the DALI/DLIO index (one "<offset> <size>" line per record).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/format/tfrecord.h"
#include "loader/io/aligned_buffer.h"
#include "datagen/temp_file.h"
#include "loader/status.h"

namespace feedrate {

using TfRecordFileSpec = DlioFileShape;

// The serialized tf.train.Example around the image bytes: payload = prefix + image + suffix.
struct ExampleFraming {
  std::string prefix, suffix;
  uint64_t image_bytes = 0;
  uint64_t payload_bytes() const { return prefix.size() + image_bytes + suffix.size(); }
};
ExampleFraming DlioExampleFraming(uint64_t image_bytes);

// Exact size of the file WriteDlioTfRecord produces.
uint64_t DlioTfRecordFileSize(const TfRecordFileSpec& spec);

// Writes `path` through a temporary name (renamed when complete); each record's image is distinct pseudo-random
// bytes from `content` (random, or the verifiable pattern). Returns the records' index entries for the .idx file.
Result<std::vector<TfRecordEntry>> WriteDlioTfRecord(const std::string& path, const TfRecordFileSpec& spec,
                                                     const ContentSpec& content, AlignedBuffer* scratch);

}  // namespace feedrate
