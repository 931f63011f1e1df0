// Thrift compact protocol: bounded reading and writing (see thrift_compact.h).
#include "loader/format/thrift_compact.h"

namespace feedrate {

namespace {
constexpr int kMaxDepth = 63;
}

void CompactReader::Fail(const std::string& what) {
  if (status_.ok()) status_ = Status::Corruption(what + " (Thrift byte " + std::to_string(consumed()) + ")");
  p_ = end_;
}

uint8_t CompactReader::ReadByte() {
  if (p_ >= end_) {
    Fail("truncated Thrift data");
    return 0;
  }
  return *p_++;
}

uint64_t CompactReader::ReadVarint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    const uint8_t b = ReadByte();
    if (!ok()) return 0;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  Fail("Thrift varint longer than 10 bytes");
  return 0;
}

int64_t CompactReader::ReadI64() {
  const uint64_t u = ReadVarint();
  return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
}

int32_t CompactReader::ReadI32() {
  const int64_t v = ReadI64();
  if (v < INT32_MIN || v > INT32_MAX) Fail("Thrift i32 out of range");
  return static_cast<int32_t>(v);
}

int8_t CompactReader::ReadI8() { return static_cast<int8_t>(ReadByte()); }

std::string_view CompactReader::ReadBinary() {
  const uint64_t n = ReadVarint();
  if (!ok()) return {};
  if (n > static_cast<uint64_t>(end_ - p_)) {
    Fail("Thrift string of " + std::to_string(n) + " bytes runs past the data");
    return {};
  }
  std::string_view s(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return s;
}

uint32_t CompactReader::ReadListHeader(TType* element) {
  const uint8_t h = ReadByte();
  *element = static_cast<TType>(h & 0x0f);
  uint64_t n = h >> 4;
  if (n == 15) n = ReadVarint();
  // Every element takes at least one byte, so a count beyond the bytes left is corrupt (and bounds allocations).
  if (ok() && n > static_cast<uint64_t>(end_ - p_)) Fail("Thrift list of " + std::to_string(n) + " elements runs past the data");
  return ok() ? static_cast<uint32_t>(n) : 0;
}

void CompactReader::BeginStruct() {
  if (depth_ >= kMaxDepth) return Fail("Thrift structs nested too deep");
  last_id_[++depth_] = 0;
}

void CompactReader::EndStruct() {
  if (depth_ > 0) --depth_;
}

bool CompactReader::NextField(int16_t* id, TType* type) {
  const uint8_t h = ReadByte();
  if (!ok()) return false;
  *type = static_cast<TType>(h & 0x0f);
  if (*type == TType::kStop) return false;
  const int delta = h >> 4;
  if (delta != 0) {
    *id = static_cast<int16_t>(last_id_[depth_] + delta);
  } else {
    const int64_t v = ReadI64();
    if (v < INT16_MIN || v > INT16_MAX) {
      Fail("Thrift field id out of range");
      return false;
    }
    *id = static_cast<int16_t>(v);
  }
  if (static_cast<uint8_t>(*type) > static_cast<uint8_t>(TType::kStruct)) {
    Fail("unknown Thrift type " + std::to_string(static_cast<int>(*type)));
    return false;
  }
  last_id_[depth_] = *id;
  return ok();
}

void CompactReader::Skip(TType type, int depth) {
  if (depth > kMaxDepth) return Fail("Thrift values nested too deep");
  switch (type) {
    case TType::kTrue:
    case TType::kFalse:
      return;
    case TType::kByte:
      ReadByte();
      return;
    case TType::kI16:
    case TType::kI32:
    case TType::kI64:
      ReadVarint();
      return;
    case TType::kDouble:
      for (int i = 0; i < 8; ++i) ReadByte();
      return;
    case TType::kBinary:
      ReadBinary();
      return;
    case TType::kList:
    case TType::kSet: {
      TType e;
      const uint32_t n = ReadListHeader(&e);
      for (uint32_t i = 0; i < n && ok(); ++i) {
        if (e == TType::kTrue || e == TType::kFalse) {
          ReadByte();  // list bools take a byte each
        } else {
          Skip(e, depth + 1);
        }
      }
      return;
    }
    case TType::kMap: {
      const uint64_t n = ReadVarint();
      if (n == 0 || !ok()) return;
      if (n > static_cast<uint64_t>(end_ - p_)) return Fail("Thrift map runs past the data");
      const uint8_t kv = ReadByte();
      for (uint64_t i = 0; i < n && ok(); ++i) {
        Skip(static_cast<TType>(kv >> 4), depth + 1);
        Skip(static_cast<TType>(kv & 0x0f), depth + 1);
      }
      return;
    }
    case TType::kStruct: {
      BeginStruct();
      int16_t id;
      TType t;
      while (ok() && NextField(&id, &t)) Skip(t, depth + 1);
      EndStruct();
      return;
    }
    case TType::kStop:
      return Fail("Thrift STOP where a value was expected");
  }
}

void CompactWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void CompactWriter::FieldHeader(int16_t id, TType type) {
  const int delta = id - last_id_[depth_];
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<char>((delta << 4) | static_cast<int>(type)));
  } else {
    out_.push_back(static_cast<char>(type));
    Varint(ZigZag(id));
  }
  last_id_[depth_] = id;
}

void CompactWriter::BeginStruct() { last_id_[++depth_] = 0; }

void CompactWriter::EndStruct() {
  out_.push_back(static_cast<char>(TType::kStop));
  --depth_;
}

void CompactWriter::FieldI32(int16_t id, int32_t v) {
  FieldHeader(id, TType::kI32);
  Varint(ZigZag(v));
}

void CompactWriter::FieldI64(int16_t id, int64_t v) {
  FieldHeader(id, TType::kI64);
  Varint(ZigZag(v));
}

void CompactWriter::FieldBool(int16_t id, bool v) { FieldHeader(id, v ? TType::kTrue : TType::kFalse); }

void CompactWriter::FieldI8(int16_t id, int8_t v) {
  FieldHeader(id, TType::kByte);
  out_.push_back(static_cast<char>(v));
}

void CompactWriter::FieldBinary(int16_t id, std::string_view v) {
  FieldHeader(id, TType::kBinary);
  ElemBinary(v);
}

void CompactWriter::ElemBinary(std::string_view v) {
  Varint(v.size());
  out_.append(v);
}

void CompactWriter::FieldStructBegin(int16_t id) {
  FieldHeader(id, TType::kStruct);
  BeginStruct();
}

void CompactWriter::FieldList(int16_t id, TType element, uint32_t n) {
  FieldHeader(id, TType::kList);
  if (n < 15) {
    out_.push_back(static_cast<char>((n << 4) | static_cast<uint32_t>(element)));
  } else {
    out_.push_back(static_cast<char>(0xf0 | static_cast<int>(element)));
    Varint(n);
  }
}

}  // namespace feedrate
