// .npy header parsing and writing.
#include <gtest/gtest.h>

#include "loader/format/npy.h"

namespace feedrate {
namespace {

std::string Numpy128(const std::string& dict) {
  // numpy's v1.0 header for these shapes is 128 bytes: magic, version, len 0x76, dict, spaces, '\n'.
  std::string h = std::string("\x93NUMPY\x01\x00", 8) + "v" + std::string(1, '\0') + dict;
  h.append(127 - h.size(), ' ');
  return h + "\n";
}

TEST(NpyHeader, WriterMatchesNumpyBytes) {
  EXPECT_EQ(MakeNpyHeader("|u1", {15865, 14125, 1}),
            Numpy128("{'descr': '|u1', 'fortran_order': False, 'shape': (15865, 14125, 1), }"));
  EXPECT_EQ(MakeNpyHeader("<i8", {7}), Numpy128("{'descr': '<i8', 'fortran_order': False, 'shape': (7,), }"));
  EXPECT_EQ(MakeNpyHeader("<f8", {}), Numpy128("{'descr': '<f8', 'fortran_order': False, 'shape': (), }"));
  EXPECT_EQ(MakeNpyHeader("<f8", {5, 7, 3}, true),
            Numpy128("{'descr': '<f8', 'fortran_order': True, 'shape': (5, 7, 3), }"));
  EXPECT_EQ(MakeNpyHeader("|u1", {123456789012, 2}),
            Numpy128("{'descr': '|u1', 'fortran_order': False, 'shape': (123456789012, 2), }"));
}

TEST(NpyHeader, ParsesWhatItWrites) {
  std::string h = MakeNpyHeader("<f4", {3, 4});
  auto p = ParseNpyHeader(h, "mem");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->descr, "<f4");
  EXPECT_EQ(p->shape, (std::vector<uint64_t>{3, 4}));
  EXPECT_FALSE(p->fortran_order);
  EXPECT_EQ(p->data_offset, 128u);
  EXPECT_EQ(p->itemsize, 4u);
  EXPECT_EQ(p->nbytes, 48u);
}

TEST(NpyHeader, KeyOrderDoesNotMatter) {
  std::string dict = "{'shape': (2,), 'fortran_order': False, 'descr': '<i2', }";
  std::string h = std::string("\x93NUMPY\x01\x00", 8) + std::string(1, static_cast<char>(dict.size() + 1)) +
                  std::string(1, '\0') + dict + "\n";
  auto p = ParseNpyHeader(h, "mem");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->nbytes, 4u);
}

TEST(NpyHeader, RejectsObjectStructuredAndGarbage) {
  auto obj = ParseNpyHeader(MakeNpyHeader("|O", {3}), "obj.npy");
  ASSERT_FALSE(obj.ok());
  EXPECT_EQ(obj.status().code(), Status::Code::kUnsupported);
  EXPECT_NE(obj.status().message().find("obj.npy"), std::string::npos);
  EXPECT_FALSE(ParseNpyHeader("not numpy at all", "x").ok());
  std::string truncated = MakeNpyHeader("<f4", {3}).substr(0, 40);
  auto t = ParseNpyHeader(truncated, "t.npy");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("truncated"), std::string::npos);
}

}  // namespace
}  // namespace feedrate
