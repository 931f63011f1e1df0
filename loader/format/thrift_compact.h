// Apache Thrift's compact protocol, the little of it Parquet's footer and page headers use: a bounded reader that
// never reads past its buffer (every failure is a Status naming what was being read) and a writer.
// Why our own and not libthrift: Parquet needs ~10 structs of plain fields; a 300-line codec is easier to fuzz
// and bound than generated code plus a library whose decoders allocate per field and throw (docs/parquet.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loader/status.h"

namespace feedrate {

// Compact protocol type ids (the low nibble of a field header).
enum class TType : uint8_t {
  kStop = 0, kTrue = 1, kFalse = 2, kByte = 3, kI16 = 4, kI32 = 5, kI64 = 6, kDouble = 7, kBinary = 8,
  kList = 9, kSet = 10, kMap = 11, kStruct = 12,
};

// Reads from [data, data + size); the buffer outlives the reader. After an error every call fails fast and
// status() keeps the first error.
class CompactReader {
 public:
  CompactReader(const uint8_t* data, size_t size) : p_(data), end_(data + size), begin_(data) {}

  // Struct walking: BeginStruct, then NextField until it returns false (the struct's STOP), then EndStruct.
  // `id` and `type` are the field's; a field the caller does not want must be skipped with Skip(type).
  void BeginStruct();
  bool NextField(int16_t* id, TType* type);
  void EndStruct();

  int64_t ReadI64();  // zigzag varint (i16, i32 and i64 fields all use it)
  int32_t ReadI32();
  int8_t ReadI8();  // a BYTE value: one raw byte
  bool ReadBool(TType field_type) { return field_type == TType::kTrue; }  // a struct field's bool is in its type
  std::string_view ReadBinary();
  // List header: element type and count. A list of bools holds one byte per element (1: true).
  uint32_t ReadListHeader(TType* element);
  void Skip(TType type, int depth = 0);

  size_t consumed() const { return static_cast<size_t>(p_ - begin_); }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Sets the first error (used by callers for semantic errors: a missing required field).
  void Fail(const std::string& what);

 private:
  uint64_t ReadVarint();
  uint8_t ReadByte();

  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
  Status status_;
  int16_t last_id_[64] = {};  // field id of the last field read, per nesting level
  int depth_ = 0;
};

// Walks one struct: `on_field(id, type)` reads a field it wants and returns true; the fields it returns false for
// are skipped.
template <typename OnField>
void ReadStruct(CompactReader& r, OnField on_field) {
  r.BeginStruct();
  int16_t id;
  TType t;
  while (r.NextField(&id, &t)) {
    if (!on_field(id, t)) r.Skip(t);
  }
  r.EndStruct();
}

// Reads a list field's elements, one `on_element()` call each.
template <typename OnElement>
void ReadList(CompactReader& r, OnElement on_element) {
  TType element;
  const uint32_t n = r.ReadListHeader(&element);
  for (uint32_t i = 0; i < n && r.ok(); ++i) on_element();
}

// Appends to a string. Fields must be written in increasing id order within a struct.
class CompactWriter {
 public:
  void BeginStruct();
  void EndStruct();  // writes STOP
  void FieldI32(int16_t id, int32_t v);
  void FieldI64(int16_t id, int64_t v);
  void FieldBool(int16_t id, bool v);
  void FieldI8(int16_t id, int8_t v);
  void FieldBinary(int16_t id, std::string_view v);
  void FieldStructBegin(int16_t id);  // then the struct's fields, then EndStruct()
  // A list field: header now, then `n` elements (ElemI32/ElemBinary, or BeginStruct...EndStruct per struct).
  void FieldList(int16_t id, TType element, uint32_t n);
  void ElemI32(int32_t v) { Varint(ZigZag(v)); }
  void ElemBinary(std::string_view v);

  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  static uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
  void Varint(uint64_t v);
  void FieldHeader(int16_t id, TType type);

  std::string out_;
  int16_t last_id_[64] = {};
  int depth_ = 0;
};

}  // namespace feedrate
