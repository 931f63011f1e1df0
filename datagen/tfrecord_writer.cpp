// DLIO TFRecord writer: hand-serialized tf.train.Example (the bytes libprotobuf's deterministic serialization
// gives: map entries in key order, packed int64), records streamed through one buffer with CRC-32C as they go.
#include "datagen/tfrecord_writer.h"

#include <algorithm>
#include <cstring>

#include "datagen/temp_file.h"
#include "loader/format/crc32c.h"

namespace feedrate {
namespace {

void Varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
uint64_t VarintSize(uint64_t v) {
  uint64_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
// Tag + length of a length-delimited field.
void Len(std::string* out, int field, uint64_t len) {
  out->push_back(static_cast<char>((field << 3) | 2));
  Varint(out, len);
}

}  // namespace

ExampleFraming DlioExampleFraming(uint64_t image_bytes) {
  ExampleFraming f;
  f.image_bytes = image_bytes;
  // Feature{bytes_list: BytesList{value: [image]}}
  const uint64_t bytes_list = 1 + VarintSize(image_bytes) + image_bytes;
  const uint64_t image_feature = 1 + VarintSize(bytes_list) + bytes_list;
  const uint64_t image_entry = 1 + 1 + 5 + 1 + VarintSize(image_feature) + image_feature;  // key "image", value
  // Feature{int64_list: Int64List{value: [image_bytes]}} (packed)
  const uint64_t packed = VarintSize(image_bytes);
  const uint64_t int64_list = 1 + VarintSize(packed) + packed;
  const uint64_t size_feature = 1 + VarintSize(int64_list) + int64_list;
  const uint64_t size_entry = 1 + 1 + 4 + 1 + VarintSize(size_feature) + size_feature;  // key "size", value
  const uint64_t features = 1 + VarintSize(image_entry) + image_entry + 1 + VarintSize(size_entry) + size_entry;

  std::string& p = f.prefix;
  Len(&p, 1, features);      // Example.features
  Len(&p, 1, image_entry);   // Features.feature map entry
  Len(&p, 1, 5);             // entry.key
  p += "image";
  Len(&p, 2, image_feature);  // entry.value
  Len(&p, 1, bytes_list);     // Feature.bytes_list
  Len(&p, 1, image_bytes);    // BytesList.value
  std::string& s = f.suffix;
  Len(&s, 1, size_entry);
  Len(&s, 1, 4);
  s += "size";
  Len(&s, 2, size_feature);
  Len(&s, 3, int64_list);  // Feature.int64_list
  Len(&s, 1, packed);      // Int64List.value, packed
  Varint(&s, image_bytes);
  return f;
}

uint64_t DlioTfRecordFileSize(const TfRecordFileSpec& spec) {
  return spec.samples * (DlioExampleFraming(spec.d1 * spec.d2).payload_bytes() + kTfRecordOverhead);
}

Result<std::vector<TfRecordEntry>> WriteDlioTfRecord(const std::string& path, const TfRecordFileSpec& spec,
                                                     const ContentSpec& content, AlignedBuffer* scratch) {
  const ExampleFraming fr = DlioExampleFraming(spec.d1 * spec.d2);
  const uint64_t payload = fr.payload_bytes();
  FEEDRATE_ASSIGN_OR_RETURN(auto file, TempFile::Create(path));
  ContentSource rng(content);
  char* buf = scratch->data();
  const size_t cap = scratch->size();
  size_t used = 0;
  uint64_t file_off = 0;
  auto flush = [&]() -> Status {
    Status st = file.WriteAt(buf, used, file_off);
    file_off += used;
    used = 0;
    return st;
  };
  // Appends bytes produced by `produce(dst, n)` in buffer-sized pieces, extending the record's CRC over them.
  uint32_t crc = 0;
  auto append = [&](uint64_t n, auto&& produce, bool in_crc) -> Status {
    while (n > 0) {
      if (used == cap) FEEDRATE_RETURN_IF_ERROR(flush());
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, cap - used));
      produce(buf + used, k);
      if (in_crc) crc = Crc32cExtend(crc, buf + used, k);
      used += k;
      n -= k;
    }
    return Status::Ok();
  };
  auto copy_from = [](const char* src) {
    return [src](char* dst, size_t k) mutable {
      std::memcpy(dst, src, k);
      src += k;
    };
  };
  std::vector<TfRecordEntry> entries;
  entries.reserve(spec.samples);
  for (uint64_t r = 0; r < spec.samples; ++r) {
    entries.push_back({r * (payload + kTfRecordOverhead), payload});
    char header[kTfRecordHeaderBytes];
    EncodeTfRecordHeader(payload, header);
    crc = 0;
    FEEDRATE_RETURN_IF_ERROR(append(sizeof header, copy_from(header), false));
    FEEDRATE_RETURN_IF_ERROR(append(fr.prefix.size(), copy_from(fr.prefix.data()), true));
    FEEDRATE_RETURN_IF_ERROR(append(fr.image_bytes, [&](char* dst, size_t k) { rng.Fill(dst, file_off + static_cast<uint64_t>(dst - buf), k); }, true));
    FEEDRATE_RETURN_IF_ERROR(append(fr.suffix.size(), copy_from(fr.suffix.data()), true));
    uint32_t footer = MaskCrc(crc);
    FEEDRATE_RETURN_IF_ERROR(append(sizeof footer, copy_from(reinterpret_cast<const char*>(&footer)), false));
  }
  if (used > 0) FEEDRATE_RETURN_IF_ERROR(flush());
  FEEDRATE_RETURN_IF_ERROR(file.Commit());
  return entries;
}

}  // namespace feedrate
