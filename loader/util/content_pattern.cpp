// Verifiable content: the pattern, its check, and where the payload sits in each format's samples.
#include "loader/util/content_pattern.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace feedrate {
namespace {

uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Word(uint64_t key, uint64_t index) { return Mix(key ^ (index * 0xd1b54a32d192ed03ULL)); }

// Protobuf wire reading for the TFRecord payload walk.
bool Varint(const unsigned char*& p, const unsigned char* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const unsigned char b = *p++;
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Finds length-delimited field `field` in [p, end): its value's bounds. Other fields are skipped by wire type.
bool FindLen(const unsigned char* p, const unsigned char* end, uint64_t field, const unsigned char** begin,
             const unsigned char** stop, const unsigned char** resume = nullptr) {
  while (p < end) {
    uint64_t tag = 0, n = 0;
    if (!Varint(p, end, &tag)) return false;
    switch (tag & 7) {
      case 0:
        if (!Varint(p, end, &n)) return false;
        continue;
      case 1: p += 8; continue;
      case 5: p += 4; continue;
      case 2:
        if (!Varint(p, end, &n) || n > static_cast<uint64_t>(end - p)) return false;
        if ((tag >> 3) == field) {
          *begin = p;
          *stop = p + n;
          if (resume != nullptr) *resume = p + n;
          return true;
        }
        p += n;
        continue;
      default: return false;
    }
  }
  return false;
}

}  // namespace

uint64_t ContentKey(uint64_t seed, std::string_view relative_path) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : relative_path) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return Mix(h ^ Mix(seed));
}

uint8_t ExpectedContentByte(uint64_t key, uint64_t file_offset) {
  return static_cast<uint8_t>(Word(key, file_offset / 8) >> (8 * (file_offset % 8)));
}

void FillContent(uint64_t key, uint64_t file_offset, char* p, size_t n) {
  size_t i = 0;
  for (; i < n && (file_offset + i) % 8 != 0; ++i) p[i] = static_cast<char>(ExpectedContentByte(key, file_offset + i));
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = Word(key, (file_offset + i) / 8);
    std::memcpy(p + i, &w, 8);  // little-endian hosts (x86-64, aarch64)
  }
  for (; i < n; ++i) p[i] = static_cast<char>(ExpectedContentByte(key, file_offset + i));
}

int64_t FirstContentMismatch(uint64_t key, uint64_t file_offset, const char* p, size_t n) {
  size_t i = 0;
  for (; i < n && (file_offset + i) % 8 != 0; ++i) {
    if (static_cast<uint8_t>(p[i]) != ExpectedContentByte(key, file_offset + i)) return static_cast<int64_t>(i);
  }
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = Word(key, (file_offset + i) / 8);
    if (std::memcmp(p + i, &w, 8) != 0) break;  // the byte loop below finds which one
  }
  for (; i < n; ++i) {
    if (static_cast<uint8_t>(p[i]) != ExpectedContentByte(key, file_offset + i)) return static_cast<int64_t>(i);
  }
  return -1;
}

bool ContentVerifiable(DataFormat format) {
  return format == DataFormat::kNpz || format == DataFormat::kNpy || format == DataFormat::kTfRecord ||
         format == DataFormat::kIndexedBinary;
}

Result<std::pair<uint64_t, uint64_t>> ContentRange(DataFormat format, const char* data, uint64_t len) {
  if (format == DataFormat::kIndexedBinary) return std::make_pair(uint64_t{0}, len);
  if (format == DataFormat::kNpz || format == DataFormat::kNpy) {
    if (len >= 10 && std::memcmp(data, "\x93NUMPY", 6) == 0) {
      const auto* u = reinterpret_cast<const unsigned char*>(data);
      const uint64_t header = u[6] == 1 ? 10 + (u[8] | (u[9] << 8))
                                        : len >= 12 ? 12 + (u[8] | (u[9] << 8) | (u[10] << 16) | (uint64_t{u[11]} << 24)) : len + 1;
      if (header > len) return Status::Corruption("the sample's npy header runs past its end");
      return std::make_pair(header, len);
    }
    return std::make_pair(uint64_t{0}, len);
  }
  if (format == DataFormat::kTfRecord) {
    // record: u64 length, u32 crc, Example, u32 crc. Example{1: Features{1: map entry{1: key, 2: Feature{1: BytesList{1: bytes}}}}}
    if (len < 16) return Status::Corruption("the record is shorter than its framing");
    const auto* p = reinterpret_cast<const unsigned char*>(data) + 12;
    const auto* end = reinterpret_cast<const unsigned char*>(data) + len - 4;
    const unsigned char *fb, *fe;
    if (!FindLen(p, end, 1, &fb, &fe)) return Status::Corruption("the record holds no tf.train.Example features");
    for (const unsigned char* q = fb; q < fe;) {
      const unsigned char *eb, *ee, *next;
      if (!FindLen(q, fe, 1, &eb, &ee, &next)) break;
      q = next;
      const unsigned char *kb, *ke, *vb, *ve, *bb, *be, *ib, *ie;
      if (!FindLen(eb, ee, 1, &kb, &ke) || std::string_view(reinterpret_cast<const char*>(kb), static_cast<size_t>(ke - kb)) != "image") continue;
      if (!FindLen(eb, ee, 2, &vb, &ve) || !FindLen(vb, ve, 1, &bb, &be) || !FindLen(bb, be, 1, &ib, &ie)) break;
      const auto* base = reinterpret_cast<const unsigned char*>(data);
      return std::make_pair(static_cast<uint64_t>(ib - base), static_cast<uint64_t>(ie - base));
    }
    return Status::Corruption("the record's tf.train.Example has no \"image\" bytes feature");
  }
  return Status::Unsupported("content checks cover npz, npy, tfrecord and indexed_binary datasets, not '" + std::string(Name(format)) + "'");
}

std::string ContentMarkerPath(const std::string& data_folder) { return data_folder + "/.feedrate-content"; }
std::string ContentMarkerText(uint64_t seed) { return "verifiable seed=" + std::to_string(seed) + "\n"; }

Result<uint64_t> ParseContentMarker(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  std::string word, seed;
  if (!(in >> word >> seed) || word != "verifiable" || seed.rfind("seed=", 0) != 0) {
    return Status::NotFound(where + " is missing or unreadable: --verify needs a dataset generated with "
                            "`feedrate datagen --content verifiable`");
  }
  return static_cast<uint64_t>(std::strtoull(seed.c_str() + 5, nullptr, 10));
}

Result<uint64_t> ReadContentMarker(const std::string& data_folder) {
  const std::string path = ContentMarkerPath(data_folder);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseContentMarker(text.str(), path);
}

}  // namespace feedrate
