// DLIO's per-sample reader calls (loader/format/access_pattern.h) against what strace showed DLIO e1919d7 make
// (Debian 12's Python 3.11, numpy 1.24, h5py 3.7, Pillow 9.4; 512 KiB samples on a 4 KiB-block file system).
#include "loader/format/access_pattern.h"

#include <gtest/gtest.h>

#include <vector>

namespace feedrate {
namespace {

using Reads = std::vector<std::pair<uint64_t, uint64_t>>;  // (offset, length)

Reads Plan(AccessKind kind, const FileLayout& l, SampleExtent e = {}, uint64_t block = 4096) {
  std::vector<AccessRead> out;
  out.reserve(MaxDlioReads(kind, e.length, l.size, block));
  const size_t cap = out.capacity();
  PlanDlioReads(kind, l, e, block, &out);
  EXPECT_LE(out.size(), cap) << "MaxDlioReads is too low: the plan reallocated";
  Reads r;
  for (const auto& a : out) r.emplace_back(a.offset, a.length);
  return r;
}

// np.load(f, allow_pickle=True)['x'] on DLIO's img_3_of_8.npz (x.npy at 0, its 128-byte header, then y.npy and the
// central directory at 524550; 524674 bytes): the 13 read(2)s of the strace, in order.
TEST(AccessPattern, NpzIsNumpyThroughZipfileAndABufferedReader) {
  FileLayout l;
  l.size = 524674;
  l.dir_offset = 524550;
  l.member_offset = 0;
  l.member_data = 55;  // 30-byte local header, "x.npy", a 20-byte zip64 extra field
  l.member_size = 128 + 524288;
  l.npy_header = 128;
  const Reads want = {{0, 4096},      {524652, 23},   {524674, 1},     {524632, 4096}, {524550, 4096},
                      {0, 4096},      {4096, 4096},   {0, 4096},       {4096, 4096},   {8192, 253952},
                      {262144, 4096}, {266240, 258048}, {524288, 4096}};
  EXPECT_EQ(Plan(AccessKind::kNpz, l), want);
}

// Full-size Unet3D (about 140 MiB a sample) makes two reads per 256 KiB of numpy's chunks, against coalesced 1 MiB
// transfers' one per MiB: ~8x the requests.
TEST(AccessPattern, LargeNpzSamplesCostTwoReadsPerNumpyChunk) {
  FileLayout l;
  l.member_data = 55;
  l.npy_header = 128;
  l.member_size = 128 + (140ULL << 20);
  l.dir_offset = l.member_data + l.member_size;
  l.size = l.dir_offset + 102 + 22;
  const Reads r = Plan(AccessKind::kNpz, l);
  EXPECT_NEAR(static_cast<double>(r.size()), 9 + 2 * 560, 4);
  uint64_t last_end = 0;
  for (const auto& [off, len] : r) last_end = std::max(last_end, off + len);
  EXPECT_GE(last_end, l.member_data + l.member_size);  // every byte of the array is read
}

// np.load(f) on DLIO's img_3_of_8.npy (524304 bytes, 128-byte header): the magic through Python's buffer, then
// numpy.fromfile's glibc stream: the header, a block, whole blocks directly, the tail's block.
TEST(AccessPattern, NpyIsTheMagicThenFromfile) {
  FileLayout l;
  l.size = 524304;
  l.npy_header = 128;
  const Reads want = {{0, 4096}, {0, 128}, {0, 4096}, {4096, 520192}, {524288, 4096}};
  EXPECT_EQ(Plan(AccessKind::kNpy, l), want);
}

// h5py on DLIO's img_3_of_8.hdf5: superblock, two object headers, then the row (524176 bytes at 2048).
TEST(AccessPattern, Hdf5IsSuperblockObjectHeadersThenTheRow) {
  FileLayout l;
  l.size = 526232;
  const Reads want = {{0, 8}, {0, 16}, {16, 32}, {48, 512}, {195, 512}, {2048, 524176}};
  EXPECT_EQ(Plan(AccessKind::kHdf5, l, SampleExtent{0, 2048, 524176}), want);
}

// PIL on DLIO's img_3_of_8.jpeg (294119 bytes): one block, to 64 KiB, 64 KiB reads, the short one and the one that
// meets the end.
TEST(AccessPattern, JpegIsABlockThen64KiBReadsToTheEnd) {
  FileLayout l;
  l.size = 294119;
  const Reads want = {{0, 4096},       {4096, 61440},   {65536, 65536}, {131072, 65536},
                      {196608, 65536}, {262144, 65536}, {294119, 32768}};
  EXPECT_EQ(Plan(AccessKind::kJpeg, l, SampleExtent{0, 0, kWholeFile}), want);
}

// The buffer is the file's st_blksize: an NFS mount's 1 MiB turns the same npz into fewer, larger reads.
TEST(AccessPattern, TheBlockSizeIsTheFilesStBlksize) {
  FileLayout l;
  l.size = 524674;
  l.dir_offset = 524550;
  l.member_data = 55;
  l.member_size = 128 + 524288;
  l.npy_header = 128;
  const Reads r = Plan(AccessKind::kNpz, l, {}, 1 << 20);
  EXPECT_LT(r.size(), 13u);
  EXPECT_EQ(r.front(), std::make_pair(uint64_t{0}, uint64_t{1} << 20));
  EXPECT_TRUE(Plan(AccessKind::kNone, l).empty());
}

// np.asarray(Image.open(f)) on PNGs written as DLIO's generator writes them (PIL, 8-bit grey, 64 KiB IDAT chunks),
// strace of Pillow 9.4: 512 x 512 (263,049 bytes, 4 full IDAT chunks and one of 800 bytes), 700 x 300 (211,006
// bytes, a last chunk of 14,305) and 64 x 64 (4,228 bytes, one chunk).
TEST(AccessPattern, PngIsPilsChunkReadsThroughTheBuffer) {
  FileLayout l;
  l.size = 263049;
  const Reads a = {{0, 4096},      {4096, 61440},   {65536, 4096},  {69632, 61440}, {131072, 4096},
                   {135168, 61440}, {196608, 4096}, {200704, 61440}, {262144, 4096}};
  EXPECT_EQ(Plan(AccessKind::kPng, l, SampleExtent{0, 0, kWholeFile}), a);
  l.size = 211006;
  const Reads b = {{0, 4096},      {4096, 61440},   {65536, 4096},  {69632, 61440}, {131072, 4096},
                   {135168, 61440}, {196608, 4096}, {200704, 8192}, {208896, 4096}};
  EXPECT_EQ(Plan(AccessKind::kPng, l, SampleExtent{0, 0, kWholeFile}), b);
  l.size = 4228;
  const Reads c = {{0, 4096}, {4096, 4096}};
  EXPECT_EQ(Plan(AccessKind::kPng, l, SampleExtent{0, 0, kWholeFile}), c);
}

// DLIO's IndexedBinaryReader (seek, then readinto a numpy array of the sample's size), strace of Python 3.11: a
// sample up to a block fills the buffer with one block; a larger one is one read of exactly its size.
TEST(AccessPattern, IndexedBinaryIsOneBlockOrOneReadOfTheSample) {
  FileLayout l;
  l.size = 300000;
  EXPECT_EQ(Plan(AccessKind::kIndexedBinary, l, SampleExtent{0, 100, 1000}), (Reads{{100, 4096}}));
  EXPECT_EQ(Plan(AccessKind::kIndexedBinary, l, SampleExtent{0, 5000, 4096}), (Reads{{5000, 4096}}));
  EXPECT_EQ(Plan(AccessKind::kIndexedBinary, l, SampleExtent{0, 5000, 4097}), (Reads{{5000, 4097}}));
  EXPECT_EQ(Plan(AccessKind::kIndexedBinary, l, SampleExtent{0, 7, 200000}), (Reads{{7, 200000}}));
}

// TensorFlow's TFRecordDataset (derived from its source, not run here: TensorFlow is not in Debian): buffer_size fills
// from offset 0 whatever the records' bounds, each charged to the record it starts in; the short fill at the end is
// followed by PosixRandomAccessFile's pread that returns 0, and the header after the last record by one more fill
// at the end. Three records of 100,016 framed bytes, buffer 256 KiB: 4 preads for the file.
TEST(AccessPattern, TfRecordIsOneBufferedStreamPerFile) {
  FileLayout l;
  l.size = 3 * 100016;
  const uint64_t b = 262144;
  EXPECT_EQ(Plan(AccessKind::kTfRecord, l, SampleExtent{0, 0, 100016}, b), (Reads{{0, b}}));
  EXPECT_EQ(Plan(AccessKind::kTfRecord, l, SampleExtent{0, 100016, 100016}, b), (Reads{}));
  EXPECT_EQ(Plan(AccessKind::kTfRecord, l, SampleExtent{0, 200032, 100016}, b),
            (Reads{{262144, b}, {300048, b - (300048 - 262144)}, {300048, b}}));
  // A file that ends on a fill's bound: no short fill, the end met by the next header's fill.
  l.size = 2 * 65536;
  EXPECT_EQ(Plan(AccessKind::kTfRecord, l, SampleExtent{0, 65536, 65536}, 65536), (Reads{{65536, 65536}, {131072, 65536}}));
  // Records larger than the buffer: every fill they start.
  l.size = 300000;
  EXPECT_EQ(Plan(AccessKind::kTfRecord, l, SampleExtent{0, 0, 300000}, 131072),
            (Reads{{0, 131072}, {131072, 131072}, {262144, 131072}, {300000, 131072 - 37856}, {300000, 131072}}));
  // buffer_size 0 (unbuffered): the header and the payload with its footer, one pread each.
  EXPECT_EQ(Plan(AccessKind::kTfRecord, l, SampleExtent{0, 0, 150000}, 0), (Reads{{0, 12}, {12, 149988}}));
  EXPECT_EQ(Plan(AccessKind::kTfRecord, l, SampleExtent{0, 150000, 150000}, 0), (Reads{{150000, 12}, {150012, 149988}, {300000, 12}}));
  EXPECT_LE(5u, MaxDlioReads(AccessKind::kTfRecord, 300000, 300000, 131072));
}

// MLPerf Storage v3.0's DLIO (f16fe43) reads a local npz, npy, HDF5, JPEG or PNG sample as open(f, 'rb').read():
// FileIO.readall's read of size + 1 from 0, then the read of 1 that meets EOF (strace of the fork on a 524,546-byte
// npz: read(3, ..., 524547) = 524546, read(3, ..., 1) = 0), whatever the file holds and whichever sample of it.
TEST(AccessPattern, V3ReadsEverySampleAsItsWholeFile) {
  FileLayout l;
  l.size = 524546;
  EXPECT_EQ(Plan(AccessKind::kReadAll, l, SampleExtent{0, 0, kWholeFile}), (Reads{{0, 524547}, {524546, 1}}));
  EXPECT_EQ(Plan(AccessKind::kReadAll, l, SampleExtent{0, 4096, 128}), (Reads{{0, 524547}, {524546, 1}}));
  for (DataFormat f : {DataFormat::kNpz, DataFormat::kNpy, DataFormat::kHdf5, DataFormat::kJpeg, DataFormat::kPng}) {
    EXPECT_EQ(DlioAccessKind(f, DlioEdition::kV3_0), AccessKind::kReadAll) << Name(f);
    EXPECT_NE(DlioAccessKind(f, DlioEdition::kUpstream), AccessKind::kReadAll) << Name(f);
    EXPECT_NE(DlioAccessKind(f, DlioEdition::kV2_0), AccessKind::kReadAll) << Name(f);
  }
  EXPECT_EQ(DlioAccessKind(DataFormat::kTfRecord, DlioEdition::kV3_0), AccessKind::kTfRecord);
  EXPECT_EQ(DlioAccessKind(DataFormat::kIndexedBinary, DlioEdition::kV3_0), AccessKind::kIndexedBinary);
}

}  // namespace
}  // namespace feedrate
