// indexed_binary (DLRM), PNG and JPEG whole-file samples: generation (images checked with PIL, DLIO's reader, where
// installed), runs counting exactly the bytes of every sample, optional decoding, and clear errors for broken
// index files, truncated or mislabelled images.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>

#include "datagen/generator.h"
#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

bool HavePil() { return HavePython("PIL.Image, numpy"); }

// What DLIO's reader does with each file: np.asarray(PIL.Image.open(f)); prints "shape dtype" per file.
CmdResult PilShapes(const test::TempDir& dir, const std::string& files) {
  return RunPython(dir, "import sys, numpy, PIL.Image\nfor f in sys.argv[1:]:\n"
                        "    a = numpy.asarray(PIL.Image.open(f))\n    print(a.shape, a.dtype)\n", files);
}

TEST(BinaryFormats, IndexedBinaryDatagenRunAndBrokenIndex) {
  test::TempDir dir;
  const std::string data = dir / "dlrm";
  const std::string p = " --param dataset.num_files_train=4 --param dataset.num_samples_per_file=8"
                        " --param dataset.record_length_bytes=16384 --param reader.batch_size=2"
                        " --param train.epochs=2 --param train.computation_time=0";
  auto gen = Sh(MpiFeedrate(2, "datagen -w dlrm_dlio_upstream --fsync --data-dir " + data + p));  // durable commits too
  ASSERT_EQ(gen.code, 0) << gen.output;
  const std::string f0 = data + "/train/img_0_of_4.indexed_binary";
  EXPECT_EQ(fs::file_size(f0), 8u * 16384);
  EXPECT_EQ(fs::file_size(f0 + ".off.idx"), 64u);
  std::string sz = test::ReadFile(f0 + ".sz.idx");
  int64_t first = 0;
  std::memcpy(&first, sz.data(), 8);
  EXPECT_EQ(first, 16384);
  auto run = Sh(MpiFeedrate(2, "run -w dlrm_dlio_upstream --data-dir " + data + p + " --results-dir " + (dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 2u * 4 * 8 * 16384);
  // An offset past the end of the data file names the index and the sample.
  std::string off = test::ReadFile(f0 + ".off.idx");
  int64_t bad = 1 << 30;
  std::memcpy(off.data() + 3 * 8, &bad, 8);
  test::WriteFile(f0 + ".off.idx", off);
  auto broken = Sh(Feedrate("run -w dlrm_dlio_upstream --data-dir " + data + p + " --results-dir " + (dir / "b")));
  EXPECT_EQ(broken.code, 2) << broken.output;
  EXPECT_NE(broken.output.find("img_0_of_4.indexed_binary.off.idx/.sz.idx: sample 3"), std::string::npos) << broken.output;
  fs::remove(f0 + ".sz.idx");
  auto missing = Sh(Feedrate("run -w dlrm_dlio_upstream --data-dir " + data + p + " --results-dir " + (dir / "m")));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("img_0_of_4.indexed_binary.sz.idx"), std::string::npos) << missing.output;
}

TEST(BinaryFormats, PngDatagenAndWholeFileReads) {
  test::TempDir dir;
  const std::string data = dir / "png";
  // Upstream DLIO's PNGs and PIL reader (v3.0's generator writes raw bytes: RawImagesUnderV3).
  const std::string p = " --param dataset.format=png --param dataset.num_files_train=6"
                        " --param dataset.record_length_bytes=40000 --param dataset.record_length_bytes_stdev=8000"
                        " --param reader.batch_size=2 --param train.epochs=1 --param train.computation_time=0 --rules upstream";
  auto gen = Sh(Feedrate("datagen -w retinanet_h100 --data-dir " + data + p));
  ASSERT_EQ(gen.code, 0) << gen.output;
  uint64_t total = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string f = data + "/train/img_" + std::to_string(i) + "_of_6.png";
    std::string bytes = test::ReadFile(f);
    ASSERT_GT(bytes.size(), 33u) << f;
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(bytes.substr(12, 4), "IHDR");
    EXPECT_EQ(bytes.substr(bytes.size() - 8, 4), "IEND");
    total += bytes.size();
  }
  auto run = Sh(Feedrate("run -w retinanet_h100 --data-dir " + data + p + " --results-dir " + (dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), total);
  auto dec = Sh(Feedrate("run -w retinanet_h100 --data-dir " + data + p + " --param feedrate.decode_images=true --results-dir " +
                         (dir / "d")));
  ASSERT_TRUE(dec.code == 0 || dec.code == 3) << dec.output;
  EXPECT_GT(ReadJson(dir / "d/summary.json")["feedrate"]["sample_check_seconds"].get<double>(), 0.0);
  if (HavePil()) {
    auto pil = PilShapes(dir, data + "/train/img_0_of_6.png");
    const auto dims = DlioDimensions(40000, 8000, 6);
    EXPECT_EQ(pil.output, "(" + std::to_string(dims[0].first) + ", " + std::to_string(dims[0].second) + ") uint8\n");
  }
}

TEST(BinaryFormats, JpegDatagenPilReadableDecodeTimingAndCorruptImages) {
  test::TempDir dir;
  const std::string data = dir / "jpeg";
  const std::string p = " --param dataset.num_files_train=6 --param dataset.record_length_bytes=40000"
                        " --param dataset.record_length_bytes_stdev=8000 --param reader.batch_size=2"
                        " --param train.epochs=1 --param train.computation_time=0 --rules upstream";
  auto gen = Sh(MpiFeedrate(2, "datagen -w retinanet_h100 --data-dir " + data + p));
  ASSERT_EQ(gen.code, 0) << gen.output;
  const auto dims = DlioDimensions(40000, 8000, 6);
  uint64_t total = 0;
  std::string files, want;
  for (int i = 0; i < 6; ++i) {
    const std::string f = data + "/train/img_" + std::to_string(i) + "_of_6.jpeg";
    std::string bytes = test::ReadFile(f);
    ASSERT_GT(bytes.size(), 4u) << f;
    EXPECT_EQ(bytes.substr(0, 2), "\xFF\xD8") << f;
    EXPECT_EQ(bytes.substr(bytes.size() - 2), "\xFF\xD9") << f;
    EXPECT_LT(bytes.size(), dims[i].first * dims[i].second) << f;  // quality-75 noise: below a byte per pixel
    total += bytes.size();
    files += " " + f;
    want += "(" + std::to_string(dims[i].first) + ", " + std::to_string(dims[i].second) + ") uint8\n";
  }
  if (HavePil()) {  // DLIO's own reader path: PIL decodes every file to (d1, d2) uint8
    auto pil = PilShapes(dir, files);
    EXPECT_EQ(pil.output, want);
  }
  // inspect decodes the image: its size, and the pixels' sha256, which PIL (the same libjpeg-turbo, same default
  // IDCT) reproduces.
  const std::string first = data + "/train/img_0_of_6.jpeg";
  auto info = nlohmann::json::parse(Sh(Feedrate("inspect --json " + first)).output);
  EXPECT_EQ(info["format"], "jpeg");
  EXPECT_EQ(info["height"], dims[0].first);
  EXPECT_EQ(info["width"], dims[0].second);
  EXPECT_EQ(info["channels"], 1);
  EXPECT_EQ(info["pixel_bytes"], dims[0].first * dims[0].second);
  if (HavePil()) {
    auto sha = RunPython(dir, "import sys, hashlib, numpy, PIL.Image\n"
                              "print(hashlib.sha256(numpy.asarray(PIL.Image.open(sys.argv[1])).tobytes()).hexdigest())\n", first);
    EXPECT_EQ(sha.output, info["pixels_sha256"].get<std::string>() + "\n");
  }
  auto plain = Sh(Feedrate("run -w retinanet_h100 --data-dir " + data + p + " --results-dir " + (dir / "r")));
  ASSERT_TRUE(plain.code == 0 || plain.code == 3) << plain.output;
  auto f = ReadJson(dir / "r/summary.json")["feedrate"];
  EXPECT_EQ(f["bytes_read"].get<uint64_t>(), total);
  // Not opened at setup (a million-file dataset indexes in the time of its listing): signatures checked once read.
  EXPECT_EQ(f["sample_check"], "image: whole files, not opened at setup; each file's signature checked once read");

  const std::string decode = " --param feedrate.decode=true";
  auto dec = Sh(Feedrate("run -w retinanet_h100 --data-dir " + data + p + decode + " --results-dir " + (dir / "d")));
  ASSERT_TRUE(dec.code == 0 || dec.code == 3) << dec.output;
  f = ReadJson(dir / "d/summary.json")["feedrate"];
  EXPECT_EQ(f["bytes_read"].get<uint64_t>(), total);
  EXPECT_NE(f["sample_check"].get<std::string>().find("image: every sample decoded"), std::string::npos) << f["sample_check"];
  EXPECT_GT(f["sample_check_seconds"].get<double>(), 0.0);
  // Decoded in DLIO's worker sequence, the images are not opened at set-up; where the DLIO engine cannot run (no
  // io_uring) the run stops and says what to change, and the coalesced reads decode on the I/O threads instead.
  const std::string dlio = decode + " --param feedrate.access_pattern=dlio";
  auto no_ring = Sh("FEEDRATE_TEST_URING_SETUP_ERRNO=38 " +
                    Feedrate("run -w retinanet_h100 --data-dir " + data + p + dlio + " --results-dir " + (dir / "n")));
  EXPECT_EQ(no_ring.code, 2) << no_ring.output;
  EXPECT_NE(no_ring.output.find("set feedrate.access_pattern=coalesced"), std::string::npos) << no_ring.output;
  auto coalesced = Sh("FEEDRATE_TEST_URING_SETUP_ERRNO=38 " +
                      Feedrate("run -w retinanet_h100 --data-dir " + data + p + decode +
                               " --param feedrate.access_pattern=coalesced --results-dir " + (dir / "c")));
  ASSERT_TRUE(coalesced.code == 0 || coalesced.code == 3) << coalesced.output;
  EXPECT_EQ(ReadJson(dir / "c/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), total);

  // A file cut short: whole-file reads cannot tell, decoding does (libjpeg's "premature end" is an error here, as
  // PIL's truncated-image error is for DLIO).
  const std::string cut = data + "/train/img_3_of_6.jpeg";
  std::string bytes = test::ReadFile(cut);
  test::WriteFile(cut, bytes.substr(0, bytes.size() / 2));
  auto broken = Sh(Feedrate("run -w retinanet_h100 --data-dir " + data + p + decode + " --results-dir " + (dir / "b")));
  EXPECT_EQ(broken.code, 2) << broken.output;
  EXPECT_NE(broken.output.find("img_3_of_6.jpeg: image decode failed: JPEG:"), std::string::npos) << broken.output;
  auto cut_info = Sh(Feedrate("inspect " + cut));
  EXPECT_EQ(cut_info.code, 2) << cut_info.output;
  EXPECT_NE(cut_info.output.find("img_3_of_6.jpeg: JPEG:"), std::string::npos) << cut_info.output;
  auto again = Sh(Feedrate("datagen -w retinanet_h100 --skip-existing --data-dir " + data + p));
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("wrote 1 files"), std::string::npos) << again.output;  // only the cut file is redone
  EXPECT_EQ(test::ReadFile(cut), bytes);

  test::WriteFile(cut, std::string("\x89PNG\r\n\x1a\n", 8) + std::string(100, 'p'));
  auto wrong = Sh(Feedrate("run -w retinanet_h100 --data-dir " + data + p + " --results-dir " + (dir / "w")));
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.output.find("img_3_of_6.jpeg: not a jpeg file (PNG signature)"), std::string::npos) << wrong.output;
}

// MLPerf Storage v3.0's DLIO writes JPEG and PNG samples as d1 x d2 raw bytes and reads each whole, never decoding:
// `datagen` writes the same under --rules v3.0 (the default), `run` reads them whole, decoding is refused naming the
// edition, and upstream's PIL reader (--rules upstream) refuses them as not images.
TEST(BinaryFormats, RawImagesUnderV3) {
  test::TempDir dir;
  const std::string data = dir / "raw";
  const std::string p = " --param dataset.num_files_train=6 --param dataset.record_length_bytes=40000"
                        " --param dataset.record_length_bytes_stdev=8000 --param reader.batch_size=2"
                        " --param train.epochs=2 --param train.computation_time=0";
  auto gen = Sh(Feedrate("datagen -w retinanet_b200 --data-dir " + data + p));
  ASSERT_EQ(gen.code, 0) << gen.output;
  const auto dims = DlioDimensions(40000, 8000, 6);
  uint64_t total = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string f = data + "/train/img_" + std::to_string(i) + "_of_6.jpeg";
    const std::string bytes = test::ReadFile(f);
    EXPECT_EQ(bytes.size(), dims[static_cast<size_t>(i)].first * dims[static_cast<size_t>(i)].second) << f;
    EXPECT_NE(bytes.substr(0, 2), std::string("\xff\xd8", 2)) << f;  // not a JPEG
    total += bytes.size();
  }
  auto run = Sh(Feedrate("run -w retinanet_b200 --data-dir " + data + p + " --results-dir " + (dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  const auto f = ReadJson(dir / "r/summary.json")["feedrate"];
  EXPECT_EQ(f["bytes_read"].get<uint64_t>(), 2 * total);
  EXPECT_EQ(f["rules"]["edition"], "v3.0");
  EXPECT_EQ(f["setup_reads"]["files_opened"].get<uint64_t>() + f["setup_reads"]["files_stat"].get<uint64_t>(), 1u) << f["setup_reads"];
  auto dec = Sh(Feedrate("run -w retinanet_b200 --data-dir " + data + p + " --param feedrate.decode=true --results-dir " + (dir / "d")));
  EXPECT_EQ(dec.code, 2) << dec.output;
  EXPECT_NE(dec.output.find("never decodes it"), std::string::npos) << dec.output;
  auto up = Sh(Feedrate("run -w retinanet_b200 --data-dir " + data + p + " --rules upstream --results-dir " + (dir / "u")));
  EXPECT_EQ(up.code, 2) << up.output;
  EXPECT_NE(up.output.find("not a jpeg file"), std::string::npos) << up.output;
}

// A small PNG that declares 20000 x 20000 pixels (1.2 GB decoded; OOM-killed without a word in a 512 MiB container):
// inspect and a decoding run refuse it from its header, naming the file and the bound, before any pixel memory.
TEST(BinaryFormats, ADecompressionBombIsRefusedFromItsHeader) {
  test::TempDir dir;
  fs::create_directories(dir / "d/train");
  const std::string png = dir / "d/train/img_0_of_1.png";
  auto py = RunPython(dir, "import struct, sys, zlib\n"
                           "def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))\n"
                           "w = h = 20000\n"
                           "z = zlib.compressobj(9)\n"
                           "data = b''.join(z.compress(b'\\0' * (w + 1)) for _ in range(64)) + z.flush()\n"
                           "open(sys.argv[1], 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0))"
                           " + chunk(b'IDAT', data) + chunk(b'IEND', b''))\n",
                      png);
  ASSERT_EQ(py.code, 0) << py.output;
  auto r = Sh("/usr/bin/time -f 'peak-rss-kib=%M' " + Feedrate("inspect " + png));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("20000x20000 pixels, more than the 178956970"), std::string::npos) << r.output;
  const size_t at = r.output.find("peak-rss-kib=");
  ASSERT_NE(at, std::string::npos) << r.output;
#ifdef FEEDRATE_SANITIZED
  const uint64_t limit_kib = 900'000;  // (a sanitized binary's allocator and shadow add their own)
#else
  const uint64_t limit_kib = 300'000;
#endif
  EXPECT_LT(std::stoull(r.output.substr(at + 13)), limit_kib);  // no 1.2 GB of pixels
}

}  // namespace
}  // namespace feedrate::it
