// HDF5 fixtures (written by h5py/libhdf5 1.10.8) against MANIFEST.json: every dataset's path, dtype, shape,
// layout, chunks, filters, data offset, chunk count and sha256 of the data in C order; filtered chunks decoded by
// Feedrate's own codec against the library's reads.
#include <gtest/gtest.h>

#include <filesystem>

#include <cstring>

#include <nlohmann/json.hpp>

#include "loader/format/hdf5.h"
#include "loader/io/unique_fd.h"
#include "loader/format/hdf5_chunk_codec.h"
#include "test_util.h"

namespace feedrate {
namespace {

TEST(Fixtures, EveryHdf5FixtureMatchesManifest) {
  auto manifest = nlohmann::json::parse(test::ReadFile(test::FixturesDir() + "/MANIFEST.json"));
  int files = 0, datasets = 0;
  for (const auto& f : manifest["files"]) {
    if (f["format"] != "hdf5") continue;
    const std::string path = test::FixturesDir() + "/" + f["path"].get<std::string>();
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

// The ByteSource driver (how HDF5 objects in S3 are indexed) sees every fixture as the sec2 driver does: the same
// datasets, layouts, offsets and chunks; a source that fails its reads gives an error naming the source.
TEST(Hdf5, SourceDriverReadsEveryFixtureLikeTheFileDriver) {
  auto manifest = nlohmann::json::parse(test::ReadFile(test::FixturesDir() + "/MANIFEST.json"));
  int files = 0;
  for (const auto& f : manifest["files"]) {
    if (f["format"] != "hdf5") continue;
    const std::string path = test::FixturesDir() + "/" + f["path"].get<std::string>();
    SCOPED_TRACE(path);
    auto fd = OpenForRead(path);
    ASSERT_TRUE(fd.ok());
    FdByteSource src(fd->get(), std::filesystem::file_size(path), "s3://bucket/" + f["path"].get<std::string>());
    auto direct = ListHdf5Datasets(path);
    auto via = ListHdf5Datasets("s3://bucket/x.h5", &src);
    ASSERT_TRUE(direct.ok() && via.ok()) << via.status().ToString();
    ASSERT_EQ(direct->size(), via->size());
    for (size_t i = 0; i < direct->size(); ++i) {
      const auto &a = (*direct)[i], &b = (*via)[i];
      EXPECT_EQ(a.path, b.path);
      EXPECT_EQ(a.shape, b.shape);
      EXPECT_EQ(a.layout, b.layout);
      EXPECT_EQ(a.contiguous_offset, b.contiguous_offset);
      if (a.layout != "chunked") continue;
      auto ca = ListHdf5Chunks(path, a.path), cb = ListHdf5Chunks("s3://bucket/x.h5", a.path, &src);
      ASSERT_TRUE(ca.ok() && cb.ok()) << cb.status().ToString();
      ASSERT_EQ(ca->size(), cb->size());
      for (size_t k = 0; k < ca->size(); ++k) EXPECT_EQ((*ca)[k].address, (*cb)[k].address);
    }
    ++files;
  }
  EXPECT_EQ(files, 4);
  struct Failing final : ByteSource {
    uint64_t size() const override { return 1 << 20; }
    const std::string& name() const override { return name_; }
    Status ReadAt(void*, size_t, uint64_t) const override { return Status::IoError(name_ + ": HTTP 503 SlowDown"); }
    std::string name_ = "s3://bucket/broken.h5";
  } failing;
  auto bad = ListHdf5Datasets("s3://bucket/broken.h5", &failing);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("s3://bucket/broken.h5: cannot open as HDF5: s3://bucket/broken.h5: HTTP 503 SlowDown"),
            std::string::npos) << bad.status().ToString();
}

TEST(Hdf5, ChunkAddressesOfUnfilteredChunksHoldTheData) {
  const std::string path = test::FixturesDir() + "/h5/layouts_filters.h5";
  auto chunks = ListHdf5Chunks(path, "/chunked_sparse_fill_i4");
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  EXPECT_EQ(chunks->size(), 2u);  // only 2 of 16 chunks were written
  for (const auto& c : *chunks) EXPECT_EQ(c.size, 16u * 16 * 4);
  auto contiguous = ListHdf5Chunks(path, "/contiguous_i4");
  EXPECT_FALSE(contiguous.ok());
}

// Every stored chunk of `dataset`, read raw from the file and decoded by Hdf5ChunkDecoder, equals what libhdf5
// itself returns for that chunk's box (edge chunks: the part inside the dataset). Returns the chunks checked.
int ExpectChunksDecodeLikeTheLibrary(const std::string& path, const H5DatasetInfo& d) {
  auto codec = MakeHdf5ChunkCodec(d, path);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  if (!codec.ok()) return 0;
  auto chunks = ListHdf5Chunks(path, d.path);
  EXPECT_TRUE(chunks.ok()) << chunks.status().ToString();
  if (!chunks.ok()) return 0;
  std::string file = test::ReadFile(path);
  Hdf5ChunkDecoder decoder;
  int checked = 0;
  for (const auto& c : *chunks) {
    SCOPED_TRACE("chunk at " + std::to_string(c.address));
    const char* out = nullptr;
    Status st = decoder.Decode(*codec, c.filter_mask, file.data() + c.address, c.size, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) continue;
    const size_t rank = d.shape.size();
    std::vector<uint64_t> count(rank);
    for (size_t i = 0; i < rank; ++i) count[i] = std::min(d.chunks[i], d.shape[i] - c.coords[i]);
    auto want = ReadHdf5Box(path, d.path, c.coords, count);
    EXPECT_TRUE(want.ok()) << want.status().ToString();
    if (!want.ok()) continue;
    // Walk the box in C order; the decoded chunk is laid out with the full chunk shape.
    std::vector<uint64_t> idx(rank, 0);
    size_t k = 0, mismatches = 0;
    for (bool more = true; more; ++k) {
      uint64_t at = 0;
      for (size_t i = 0; i < rank; ++i) at = at * d.chunks[i] + idx[i];
      if (std::memcmp(out + at * d.itemsize, want->data() + k * d.itemsize, d.itemsize) != 0) ++mismatches;
      more = false;
      for (size_t i = rank; i-- > 0;) {
        if (++idx[i] < count[i]) {
          more = true;
          break;
        }
        idx[i] = 0;
      }
    }
    EXPECT_EQ(mismatches, 0u);
    EXPECT_EQ(k * d.itemsize, want->size());
    ++checked;
  }
  return checked;
}

TEST(Hdf5ChunkCodec, EveryFilteredFixtureChunkDecodesLikeTheLibrary) {
  int datasets = 0, chunks = 0;
  for (const char* name : {"layouts_filters.h5", "latest_format.h5", "dlio_like_records_chunked_gzip.h5"}) {
    const std::string path = test::FixturesDir() + "/h5/" + name;
    auto list = ListHdf5Datasets(path);
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    for (const auto& d : *list) {
      if (d.filters.empty()) continue;
      SCOPED_TRACE(path + " " + d.path);
      chunks += ExpectChunksDecodeLikeTheLibrary(path, d);
      ++datasets;
    }
  }
  EXPECT_EQ(datasets, 7);  // gzip alone, shuffle+gzip, shuffle+gzip+fletcher32, on u1/i2/f4/f8/i8
  EXPECT_GT(chunks, 40);
}

TEST(Hdf5ChunkCodec, Fletcher32CatchesACorruptChunkAndDeflateACorruptStream) {
  const std::string path = test::FixturesDir() + "/h5/layouts_filters.h5";
  auto list = ListHdf5Datasets(path);
  ASSERT_TRUE(list.ok());
  std::string file = test::ReadFile(path);
  Hdf5ChunkDecoder decoder;
  const char* out = nullptr;
  for (const auto& d : *list) {
    if (d.path != "/chunked_shuffle_gzip_fletcher32_i2" && d.path != "/chunked_gzip_u1") continue;
    SCOPED_TRACE(d.path);
    auto codec = MakeHdf5ChunkCodec(d, path);
    auto chunks = ListHdf5Chunks(path, d.path);
    ASSERT_TRUE(codec.ok() && chunks.ok());
    const H5Chunk& c = chunks->front();
    std::string stored = file.substr(c.address, c.size);
    ASSERT_TRUE(decoder.Decode(*codec, c.filter_mask, stored.data(), stored.size(), &out).ok());
    stored[stored.size() / 2] ^= 0x5a;
    Status st = decoder.Decode(*codec, c.filter_mask, stored.data(), stored.size(), &out);
    ASSERT_FALSE(st.ok());
    if (d.path == "/chunked_gzip_u1") {
      EXPECT_NE(st.message().find("deflate"), std::string::npos) << st.message();
    } else {
      EXPECT_NE(st.message().find("Fletcher-32 checksum mismatch"), std::string::npos) << st.message();
    }
  }
}

TEST(Hdf5ChunkCodec, Fletcher32MatchesHdf5sDefinition) {
  // Two big-endian 16-bit words 0x0102, 0x0304: sum1 = 0x0406, sum2 = 0x0102 + 0x0406 = 0x0508.
  const unsigned char even[] = {1, 2, 3, 4};
  EXPECT_EQ(Hdf5Fletcher32(even, 4), 0x05080406u);
  // An odd last byte counts as the high byte of a word: {1,2,3} -> words 0x0102, 0x0300.
  EXPECT_EQ(Hdf5Fletcher32(even, 3), 0x05040402u);
}

TEST(Hdf5ChunkCodec, UnsupportedFilterIsNamed) {
  H5DatasetInfo d;
  d.path = "/x";
  d.itemsize = 1;
  d.chunks = {4};
  d.filters = {{32000, "lzf", {}}};
  auto c = MakeHdf5ChunkCodec(d, "f.h5: dataset /x");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("f.h5: dataset /x uses HDF5 filter 32000 (lzf)"), std::string::npos) << c.status().message();
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
