// `feedrate inspect` model: everything about the arrays in an .npy/.npz file, including a sha256 of each
// array's data bytes exactly as stored (F order for Fortran arrays, the file's byte order); every record of a
// TFRecord file (offsets, lengths, CRCs, payload type and features). The format is decided from the content.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loader/format/npz.h"
#include "loader/format/parquet.h"
#include "loader/format/parquet_decode.h"
#include "loader/format/tf_example.h"
#include "loader/format/tfrecord.h"
#include "loader/status.h"

namespace feedrate {

struct ArrayReport {
  NpArray array;
  std::string sha256;  // hex
};

struct FileReport {
  std::string path;
  std::string kind;  // "npy" or "npz"
  uint64_t size = 0;
  std::vector<ArrayReport> arrays;
};

// Decides the format from the content; errors name the file and the cause.
Result<FileReport> InspectNumpyFile(const std::string& path);

struct TfRecordRecordReport {
  TfRecordEntry entry;
  uint32_t payload_crc = 0;    // as stored (masked), verified
  std::string payload_sha256;  // hex
  PayloadSummary payload;
};

struct TfRecordReport {
  std::string path;
  uint64_t size = 0;
  std::vector<TfRecordRecordReport> records;
  std::string payload_type;  // the records' common type, or "mixed"; "none" for an empty file
};

// Walks every record and checks both CRCs of each; a framing or CRC error is Corruption naming the record.
Result<TfRecordReport> InspectTfRecordFile(const std::string& path);

enum class FileFormat { kNpy, kNpz, kTfRecord, kHdf5, kJpeg, kPng, kParquet, kUnknown };
// By content: npy magic, zip signature, HDF5 superblock signature, JPEG SOI / PNG signature, or a first TFRecord
// header whose length CRC verifies. An empty file is kUnknown.
Result<FileFormat> DetectFileFormat(const std::string& path);

struct ImageReport {
  std::string path;
  std::string format;  // "jpeg" or "png"
  uint64_t size = 0;
  uint32_t width = 0, height = 0, channels = 0;
  uint64_t pixel_bytes = 0;
  std::string pixels_sha256;  // of the decoded pixels, row by row (what np.asarray(PIL.Image.open(f)) holds)
};

// Decodes the whole image (libjpeg-turbo / libpng); a truncated or corrupt image is Corruption naming the file.
Result<ImageReport> InspectImageFile(const std::string& path);

struct ParquetChunkPages {
  uint64_t data_pages = 0, dictionary_pages = 0, other_pages = 0;
  uint64_t values = 0;  // summed over data pages
};

struct ParquetReport {
  std::string path;
  uint64_t size = 0;
  PqFileMetaData meta;
  std::vector<std::vector<ParquetChunkPages>> pages;  // [row group][column]
  // With decode: per leaf column, summed over the row groups (values decoded, nulls, column bytes, sums).
  std::vector<PqChunkStats> decoded;
  double decode_seconds = 0;
};

// Reads the footer and walks every page header of every column chunk: each header must parse, the pages must
// tile the chunk exactly and the data pages' values add up to the chunk's; errors name the file, row group,
// column and offset.
// `decode`: also reads every chunk and decompresses and decodes every page (ParquetChunkDecoder), as training
// with feedrate.decode does, and sums each numeric column's values (for checks against other readers).
Result<ParquetReport> InspectParquetFile(const std::string& path, bool decode = false);

}  // namespace feedrate
