// HDF5 fixtures (written by h5py/libhdf5 1.10.8) against MANIFEST.json: every dataset's path, dtype, shape,
// layout, chunks, filters, data offset, chunk count and sha256 of the data in C order.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loader/format/hdf5.h"
#include "test_util.h"

namespace feedrate {
namespace {

TEST(Fixtures, EveryHdf5FixtureMatchesManifest) {
  if (!test::HaveFixtures()) GTEST_SKIP() << "no ../shared/fixtures";
  auto manifest = nlohmann::json::parse(test::ReadFile(test::SharedDir() + "/fixtures/MANIFEST.json"));
  int files = 0, datasets = 0;
  for (const auto& f : manifest["files"]) {
    if (f["format"] != "hdf5") continue;
    const std::string path = test::SharedDir() + "/fixtures/" + f["path"].get<std::string>();
    SCOPED_TRACE(path);
    const auto& e = f["expected"];
    auto list = ListHdf5Datasets(path);
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    std::vector<std::string> names;
    for (const auto& d : *list) names.push_back(d.path);
    EXPECT_EQ(names, e["dataset_paths"].get<std::vector<std::string>>());
    for (const auto& d : *list) {
      SCOPED_TRACE(d.path);
      const auto& x = e["datasets"][d.path];
      EXPECT_EQ(d.dtype, x["numpy_dtype"].get<std::string>());
      EXPECT_EQ(d.shape, x["shape"].get<std::vector<uint64_t>>());
      EXPECT_EQ(d.layout, x["layout"].get<std::string>());
      EXPECT_EQ(d.nbytes(), x["nbytes"].get<uint64_t>());
      if (!x["chunks"].is_null()) {
        EXPECT_EQ(d.chunks, x["chunks"].get<std::vector<uint64_t>>());
      }
      ASSERT_EQ(d.filters.size(), x["filters"].size());
      for (size_t i = 0; i < d.filters.size(); ++i) EXPECT_EQ(d.filters[i].id, x["filters"][i]["id"].get<int>());
      if (x.contains("contiguous_data_file_offset") && !x["contiguous_data_file_offset"].is_null()) {
        ASSERT_TRUE(d.contiguous_offset.has_value());
        EXPECT_EQ(*d.contiguous_offset, x["contiguous_data_file_offset"].get<uint64_t>());
      }
      if (x.contains("num_chunks_allocated")) {
        EXPECT_EQ(d.num_chunks, x["num_chunks_allocated"].get<uint64_t>());
      }
      auto sha = Hdf5DataSha256(path, d.path);
      ASSERT_TRUE(sha.ok()) << sha.status().ToString();
      EXPECT_EQ(*sha, x["sha256_c"].get<std::string>());
      ++datasets;
    }
    ++files;
  }
  EXPECT_EQ(files, 4);
  EXPECT_GE(datasets, 20);
}

TEST(Hdf5, ChunkAddressesOfUnfilteredChunksHoldTheData) {
  if (!test::HaveFixtures()) GTEST_SKIP() << "no ../shared/fixtures";
  const std::string path = test::SharedDir() + "/fixtures/h5/layouts_filters.h5";
  auto chunks = ListHdf5Chunks(path, "/chunked_sparse_fill_i4");
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  EXPECT_EQ(chunks->size(), 2u);  // only 2 of 16 chunks were written
  for (const auto& c : *chunks) EXPECT_EQ(c.size, 16u * 16 * 4);
  auto contiguous = ListHdf5Chunks(path, "/contiguous_i4");
  EXPECT_FALSE(contiguous.ok());
}

TEST(Hdf5, NotHdf5IsAClearError) {
  test::TempDir dir;
  test::WriteFile(dir / "x.h5", "not an hdf5 file at all");
  auto r = ListHdf5Datasets(dir / "x.h5");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x.h5: not an HDF5 file"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace feedrate
