// The third-party numpy fixtures (tests/fixtures): every array's descr, shape, order, data offset and
// sha256 of the stored bytes must match MANIFEST.json; unsupported ones must fail cleanly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loader/format/inspect.h"
#include "test_util.h"

namespace feedrate {
namespace {

TEST(Fixtures, EveryNumpyFixtureMatchesManifest) {
  auto manifest = nlohmann::json::parse(test::ReadFile(test::FixturesDir() + "/MANIFEST.json"));
  int checked_files = 0, checked_arrays = 0;
  for (const auto& f : manifest["files"]) {
    std::string fmt = f["format"];
    if (fmt != "npy" && fmt != "npz") continue;
    std::string path = test::FixturesDir() + "/" + f["path"].get<std::string>();
    SCOPED_TRACE(path);
    auto report = InspectNumpyFile(path);
    const auto& expected = f["expected"]["arrays"];
    bool structured = expected.dump().find("\"fields\"") != std::string::npos ||
                      f["path"].get<std::string>().find("structured") != std::string::npos;
    if (structured) {
      ASSERT_FALSE(report.ok());
      EXPECT_EQ(report.status().code(), Status::Code::kUnsupported);
      continue;
    }
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->kind, fmt);
    ASSERT_EQ(report->arrays.size(), expected.size());
    for (const auto& ar : report->arrays) {
      const auto& e = expected[ar.array.name];
      ASSERT_FALSE(e.is_null()) << "array " << ar.array.name;
      EXPECT_EQ(ar.array.header.descr, e["dtype_descr"].get<std::string>());
      EXPECT_EQ(ar.array.header.shape, e["shape"].get<std::vector<uint64_t>>());
      EXPECT_EQ(ar.array.header.fortran_order, e["fortran_order"].get<bool>());
      EXPECT_EQ(ar.array.header.nbytes, e["nbytes"].get<uint64_t>());
      EXPECT_EQ(ar.sha256, e["sha256_stored"].get<std::string>()) << ar.array.name;
      if (e.contains("npy_header")) {
        EXPECT_EQ(ar.array.header.data_offset, e["npy_header"]["data_offset"].get<uint64_t>());
      }
      ++checked_arrays;
    }
    if (f["expected"].contains("zip_members")) {
      for (const auto& ar : report->arrays) {
        const auto& zm = f["expected"]["zip_members"][ar.array.member->name];
        if (zm.contains("array_data_offset_in_file")) {
          ASSERT_TRUE(ar.array.data_offset_in_file.has_value());
          EXPECT_EQ(*ar.array.data_offset_in_file, zm["array_data_offset_in_file"].get<uint64_t>());
        }
      }
    }
    ++checked_files;
  }
  EXPECT_GE(checked_files, 20);
  EXPECT_GE(checked_arrays, 30);
}

}  // namespace
}  // namespace feedrate
