// ZIP directory reading (including zip64 on a sparse multi-GiB file) and npz indexing errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "datagen/npy_writer.h"
#include "datagen/npz_writer.h"
#include "loader/format/access_pattern.h"
#include "loader/format/npz.h"
#include "loader/format/numpy_learn.h"
#include "loader/format/sample_index.h"
#include "loader/format/zip.h"
#include "loader/io/unique_fd.h"
#include "test_util.h"

namespace feedrate {
namespace {

Result<FileSamples> IndexTrainingFile(const std::string& path, DataFormat format, uint64_t spf) {
  IndexOptions o;
  o.format = format;
  o.samples_per_file = spf;
  ListedExtents listed;
  return feedrate::IndexTrainingFile(path, o, &listed);
}

Result<std::vector<ZipMember>> Dir(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  auto size = FileSize(fd.get(), path);
  return ReadZipDirectory(fd.get(), *size, path);
}

TEST(Zip, WrittenNpzRoundTrips) {
  test::TempDir dir;
  AlignedBuffer scratch(1 << 16);
  NpzFileSpec spec{30, 20, 3};
  std::string path = dir / "a.npz";
  ASSERT_TRUE(WriteDlioNpz(path, spec, 7, &scratch).ok());
  EXPECT_EQ(std::filesystem::file_size(path), DlioNpzFileSize(spec));
  auto members = Dir(path);
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].name, "x.npy");
  EXPECT_EQ((*members)[0].data_offset, 55u);  // 30 + "x.npy" + 20-byte zip64 extra, as numpy writes
  EXPECT_EQ((*members)[0].uncompressed_size, 128u + 30 * 20 * 3);
  auto fd = OpenForRead(path);
  auto arrays = ReadNpzArrays(fd->get(), std::filesystem::file_size(path), path);
  ASSERT_TRUE(arrays.ok()) << arrays.status().ToString();
  EXPECT_EQ((*arrays)[0].header.shape, (std::vector<uint64_t>{30, 20, 3}));
  EXPECT_EQ((*arrays)[1].header.descr, "<i8");
  uint64_t seen = 0;
  // Streaming checks the CRC-32 against the central directory.
  ASSERT_TRUE(StreamArrayData(fd->get(), (*arrays)[0], path, [&](const char*, size_t n) {
                seen += n;
                return Status::Ok();
              }).ok());
  EXPECT_EQ(seen, 1800u);
}

TEST(Zip, Zip64FieldsBeyondTwoGiB) {
  // A sparse file with a 2.5 GiB stored member: sizes and the second member's offset need zip64 fields.
  test::TempDir dir;
  std::string path = dir / "big.npz";
  const uint64_t big = 5ull << 29;
  ZipEntryPlan x{"x.npy", big, 0, 0};
  ZipEntryPlan y{"y.npy", 136, 0, ZipLocalHeaderSize("x.npy") + big};
  uint64_t cd_off = y.local_header_offset + ZipLocalHeaderSize("y.npy") + y.size;
  std::string cd = ZipCentralDirectory({x, y}, cd_off);
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644));
  ASSERT_TRUE(fd.valid());
  std::string xh = ZipLocalHeader(x), yh = ZipLocalHeader(y);
  ASSERT_EQ(::pwrite(fd.get(), xh.data(), xh.size(), 0), static_cast<ssize_t>(xh.size()));
  ASSERT_EQ(::pwrite(fd.get(), yh.data(), yh.size(), static_cast<off_t>(y.local_header_offset)),
            static_cast<ssize_t>(yh.size()));
  ASSERT_EQ(::pwrite(fd.get(), cd.data(), cd.size(), static_cast<off_t>(cd_off)), static_cast<ssize_t>(cd.size()));
  auto members = Dir(path);
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].compressed_size, big);
  EXPECT_EQ((*members)[0].uncompressed_size, big);
  EXPECT_EQ((*members)[1].local_header_offset, y.local_header_offset);
  EXPECT_EQ((*members)[1].data_offset, y.local_header_offset + 55);
}

TEST(Zip, ErrorsNameTheFileAndCause) {
  test::TempDir dir;
  test::WriteFile(dir / "text.npz", "this is not a zip archive, just some text that is long enough");
  auto r = Dir(dir / "text.npz");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("text.npz"), std::string::npos);
  EXPECT_NE(r.status().message().find("not a valid zip"), std::string::npos);

  AlignedBuffer scratch(1 << 16);
  std::string full = dir / "full.npz";
  ASSERT_TRUE(WriteDlioNpz(full, {64, 64, 1}, 1, &scratch).ok());
  std::string content = test::ReadFile(full);
  test::WriteFile(dir / "cut.npz", content.substr(0, content.size() / 2));
  EXPECT_FALSE(Dir(dir / "cut.npz").ok());
  // Keep the directory but drop data in the middle: the member no longer fits before the directory.
  std::string tail = content.substr(content.size() - 200);
  test::WriteFile(dir / "hole.npz", content.substr(0, 1000) + tail);
  auto hole = IndexTrainingFile(dir / "hole.npz", DataFormat::kNpz, 1);
  ASSERT_FALSE(hole.ok());
  EXPECT_NE(hole.status().message().find("hole.npz"), std::string::npos);
}

TEST(SampleIndex, NpzWithoutXIsRejectedForTraining) {
  test::TempDir dir;
  // An archive with only y.npy: well-formed, but DLIO reads f['x'].
  std::string y = MakeNpyHeader("<i8", {1}) + std::string(8, '\0');
  ZipEntryPlan e{"y.npy", y.size(), 0, 0};
  e.crc32 = 0;  // the index does not verify CRCs
  std::string file = ZipLocalHeader(e) + y;
  file += ZipCentralDirectory({e}, file.size());
  test::WriteFile(dir / "nox.npz", file);
  auto r = IndexTrainingFile(dir / "nox.npz", DataFormat::kNpz, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no 'x' array"), std::string::npos);
  EXPECT_NE(r.status().message().find("nox.npz"), std::string::npos);
}

TEST(SampleIndex, ExtentCoversTheXMember) {
  test::TempDir dir;
  AlignedBuffer scratch(1 << 16);
  ASSERT_TRUE(WriteDlioNpz(dir / "s.npz", {100, 50, 4}, 1, &scratch).ok());
  auto e = IndexTrainingFile(dir / "s.npz", DataFormat::kNpz, 4);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->first_offset, 55u);
  EXPECT_EQ(e->stride, 0u);  // every sample of the file reads the whole member
  EXPECT_EQ(e->length, 128u + 100 * 50 * 4);
  auto too_many = IndexTrainingFile(dir / "s.npz", DataFormat::kNpz, 5);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("num_samples_per_file=5"), std::string::npos);
}

// Indexing reads headers, never an array's bytes: an npz's end record (its last 42 bytes, numpy writing no comment),
// zip directory and the members' headers; an npy's prelude and header. A zip with a comment is still found (the
// 64 KiB search after the first 42 bytes miss).
TEST(SampleIndex, IndexingReadsNoStreamBytes) {
  test::TempDir dir;
  AlignedBuffer scratch(1 << 16);
  ASSERT_TRUE(WriteDlioNpz(dir / "big.npz", {512, 512, 4}, 1, &scratch).ok());  // a 1 MiB x member
  IndexOptions o;
  o.format = DataFormat::kNpz;
  SetupReadCount count;
  o.count = &count;
  ListedExtents listed;
  auto e = feedrate::IndexTrainingFile(dir / "big.npz", o, &listed);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_GT(count.reads.load(), 0u);
  EXPECT_LT(count.bytes.load(), 1024u) << "headers only, not the member's last 64 KiB";
  {  // the same archive with a comment: the end record is found in the longer search
    std::string bytes = test::ReadFile(dir / "big.npz");
    bytes[bytes.size() - 2] = 5;  // the end record's comment length
    bytes += "hello";
    test::WriteFile(dir / "comment.npz", bytes);
    auto c = IndexTrainingFile(dir / "comment.npz", DataFormat::kNpz, 1);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->length, e->length);
  }
  o.format = DataFormat::kNpy;
  ASSERT_TRUE(WriteDlioNpy(dir / "big.npy", {512, 512, 4}, 1, &scratch).ok());
  SetupReadCount npy;
  o.count = &npy;
  ASSERT_TRUE(feedrate::IndexTrainingFile(dir / "big.npy", o, &listed).ok());
  EXPECT_LE(npy.bytes.load(), 256u) << "the prelude and the header";
}

// np.load's layout learnt from its own reads (the DlioEngine's lanes, where set-up indexed nothing): each stage's
// bytes come from a read np.load makes itself, that read and every one before it are the same in the plan made with
// the layout learnt so far as in the plan of the whole layout (the lane plans again once the bytes are in), and
// what is learnt is what indexing the file finds.
TEST(NpzLearn, LayoutFromTheReadersOwnReadsIsTheIndexedOne) {
  test::TempDir dir;
  AlignedBuffer scratch(1 << 16);
  for (const NpzFileSpec spec : {NpzFileSpec{512, 512, 1}, NpzFileSpec{30, 20, 1}, NpzFileSpec{1000, 1000, 1}}) {
    const std::string path = dir / "a.npz";
    ASSERT_TRUE(WriteDlioNpz(path, spec, 3, &scratch).ok());
    const std::string bytes = test::ReadFile(path);
    auto indexed = IndexTrainingFile(path, DataFormat::kNpz, 1);
    ASSERT_TRUE(indexed.ok()) << indexed.status().ToString();
    for (const uint64_t block : {uint64_t{4096}, uint64_t{1} << 20}) {
      SCOPED_TRACE(std::to_string(bytes.size()) + " bytes, block " + std::to_string(block));
      const SampleExtent whole{0, 0, kWholeFile};
      std::vector<AccessRead> full, plan;
      PlanDlioReads(AccessKind::kNpz, indexed->layout, whole, block, &full);
      NumpyLayoutLearner learner;
      FileLayout l;
      learner.Start(AccessKind::kNpz, bytes.size(), &l);
      size_t from = 0, stages = 0;
      while (!learner.known()) {
        PlanDlioReads(AccessKind::kNpz, l, whole, block, &plan);
        size_t op = from;
        while (op < plan.size() && plan[op].offset != learner.want()) ++op;
        ASSERT_LT(op, plan.size()) << "no read of np.load's brings the bytes at " << learner.want();
        ASSERT_LE(op, full.size());
        for (size_t i = 0; i <= op; ++i) {
          EXPECT_EQ(plan[i].offset, full[i].offset) << "read " << i;
          EXPECT_EQ(plan[i].length, full[i].length) << "read " << i;
        }
        const uint64_t n = std::min<uint64_t>(learner.want_len(), bytes.size() - learner.want());
        ASSERT_TRUE(learner.Learn(bytes.data() + learner.want(), n, path.c_str(), &l).ok());
        from = op + 1;
        ++stages;
      }
      EXPECT_EQ(stages, 3u);  // the end record, the central directory, x.npy's headers
      EXPECT_EQ(l.dir_offset, indexed->layout.dir_offset);
      EXPECT_EQ(l.member_offset, indexed->layout.member_offset);
      EXPECT_EQ(l.member_data, indexed->layout.member_data);
      EXPECT_EQ(l.member_size, indexed->length);
      EXPECT_EQ(l.npy_header, indexed->layout.npy_header);
      PlanDlioReads(AccessKind::kNpz, l, whole, block, &plan);
      EXPECT_EQ(plan.size(), full.size());
    }
  }
}

TEST(NpzLearn, WhatItCannotLearnIsNamed) {
  test::TempDir dir;
  AlignedBuffer scratch(1 << 16);
  ASSERT_TRUE(WriteDlioNpz(dir / "a.npz", {30, 20, 1}, 3, &scratch).ok());
  const std::string bytes = test::ReadFile(dir / "a.npz");
  NumpyLayoutLearner learner;
  FileLayout l;
  learner.Start(AccessKind::kNpz, bytes.size() + 5,
                &l);  // the same archive with a 5-byte comment: its end record is not the last 22 bytes
  const std::string commented = bytes.substr(0, bytes.size() - 2) + std::string("\x05\0hello", 7);
  Status st = learner.Learn(commented.data() + learner.want(), 22, "c.npz", &l);
  EXPECT_NE(st.message().find("c.npz: not a valid zip/npz archive: no zip end record at offset "), std::string::npos) << st.message();
  std::string renamed = bytes;  // x.npy renamed z.npy in the central directory
  learner.Start(AccessKind::kNpz, renamed.size(), &l);
  ASSERT_TRUE(learner.Learn(renamed.data() + learner.want(), 22, "r.npz", &l).ok());
  const size_t at = renamed.find("x.npy", learner.want());
  ASSERT_NE(at, std::string::npos);
  renamed[at] = 'z';
  st = learner.Learn(renamed.data() + learner.want(), learner.want_len(), "r.npz", &l);
  EXPECT_NE(st.message().find("r.npz: npz has no 'x' array"), std::string::npos) << st.message();
  std::string deflated = bytes;  // x.npy's method 8 (deflate) in the central directory
  learner.Start(AccessKind::kNpz, deflated.size(), &l);
  ASSERT_TRUE(learner.Learn(deflated.data() + learner.want(), 22, "d.npz", &l).ok());
  deflated[learner.want() + 10] = 8;
  st = learner.Learn(deflated.data() + learner.want(), learner.want_len(), "d.npz", &l);
  EXPECT_NE(st.message().find("d.npz: not a valid zip/npz archive: x.npy is compressed"), std::string::npos)
      << st.message();
}

// np.load on an .npy: its header's length from the first read it makes (the buffer's fill from 0), the reads before
// it as the indexed layout's plan, and every read after it too once learnt.
TEST(NpyLearn, HeaderFromTheReadersOwnReadIsTheIndexedOne) {
  test::TempDir dir;
  AlignedBuffer scratch(1 << 16);
  for (const NpyFileSpec spec : {NpyFileSpec{512, 512, 1}, NpyFileSpec{30, 20, 1}, NpyFileSpec{1000, 1000, 1}}) {
    const std::string path = dir / "a.npy";
    ASSERT_TRUE(WriteDlioNpy(path, spec, 3, &scratch).ok());
    const std::string bytes = test::ReadFile(path);
    auto indexed = IndexTrainingFile(path, DataFormat::kNpy, 1);
    ASSERT_TRUE(indexed.ok()) << indexed.status().ToString();
    for (const uint64_t block : {uint64_t{4096}, uint64_t{1} << 20}) {
      SCOPED_TRACE(std::to_string(bytes.size()) + " bytes, block " + std::to_string(block));
      const SampleExtent whole{0, 0, kWholeFile};
      std::vector<AccessRead> full, plan;
      FileLayout indexed_layout = indexed->layout;
      indexed_layout.size = bytes.size();
      PlanDlioReads(AccessKind::kNpy, indexed_layout, SampleExtent{0, indexed->first_offset, indexed->length}, block,
                    &full);
      NumpyLayoutLearner learner;
      FileLayout l;
      learner.Start(AccessKind::kNpy, bytes.size(), &l);
      PlanDlioReads(AccessKind::kNpy, l, whole, block, &plan);
      ASSERT_FALSE(plan.empty());
      EXPECT_EQ(plan[0].offset, learner.want()) << "np.load's first read brings the header's length";
      EXPECT_EQ(plan[0].offset, full[0].offset);
      EXPECT_EQ(plan[0].length, full[0].length);
      EXPECT_GE(plan[0].length, learner.want_len());
      ASSERT_TRUE(learner.Learn(bytes.data(), learner.want_len(), path.c_str(), &l).ok());
      ASSERT_TRUE(learner.known());
      EXPECT_EQ(l.npy_header, indexed->layout.npy_header);
      EXPECT_EQ(NumpyLayoutLearner::StreamBytes(AccessKind::kNpy, l), indexed->length);
      PlanDlioReads(AccessKind::kNpy, l, whole, block, &plan);
      ASSERT_EQ(plan.size(), full.size());
      for (size_t i = 0; i < plan.size(); ++i) {
        EXPECT_EQ(plan[i].offset, full[i].offset) << "read " << i;
        EXPECT_EQ(plan[i].length, full[i].length) << "read " << i;
      }
    }
  }
}

TEST(NpyLearn, VersionsAndWhatItCannotLearnAreNamed) {
  NumpyLayoutLearner learner;
  FileLayout l;
  // Format 2.0: a 4-byte header length (numpy writes it for headers over 64 KiB).
  const std::string v2 = std::string("\x93NUMPY\x02\x00", 8) + std::string("\x74\x00\x00\x00", 4);
  learner.Start(AccessKind::kNpy, 4096, &l);
  ASSERT_TRUE(learner.Learn(v2.data(), v2.size(), "v2.npy", &l).ok());
  EXPECT_EQ(l.npy_header, 12u + 0x74);
  const std::string v1 = std::string("\x93NUMPY\x01\x00\x76\x00xx", 12);
  learner.Start(AccessKind::kNpy, 4096, &l);
  ASSERT_TRUE(learner.Learn(v1.data(), v1.size(), "v1.npy", &l).ok());
  EXPECT_EQ(l.npy_header, 128u);
  struct Bad {
    std::string bytes;
    uint64_t size;
    Status::Code code;
    const char* says;
  };
  for (const Bad& b :
       {Bad{"PK\x03\x04 not numpy", 4096, Status::Code::kCorruption, "b.npy: not a .npy file (bad magic)"},
        Bad{std::string("\x93NUMPY\x04\x00\x76\x00xx", 12), 4096, Status::Code::kUnsupported,
            "b.npy: unsupported .npy format version 4"},
        Bad{v1, 100, Status::Code::kCorruption,
            "b.npy: not a .npy file: its header (128 bytes) is longer than the file"},
        Bad{"\x93NUMPY", 7, Status::Code::kCorruption, "b.npy: not a .npy file"}}) {
    learner.Start(AccessKind::kNpy, b.size, &l);
    EXPECT_EQ(learner.want(), 0u);
    EXPECT_EQ(learner.want_len(), std::min<uint64_t>(b.size, kNpyPreludeBytes));
    const Status st =
        learner.Learn(b.bytes.data(), std::min<uint64_t>(b.bytes.size(), learner.want_len()), "b.npy", &l);
    EXPECT_EQ(st.code(), b.code) << st.message();
    EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
    EXPECT_FALSE(learner.known());
  }
}

}  // namespace
}  // namespace feedrate
