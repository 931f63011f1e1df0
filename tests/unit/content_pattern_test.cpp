// Verifiable content: the pattern is a function of (key, offset) whatever the buffer boundaries; the check finds
// the first changed byte; the payload ranges of npy headers and TFRecord Examples.
#include <gtest/gtest.h>

#include <string>

#include "datagen/tfrecord_writer.h"
#include "loader/format/npy.h"
#include "loader/util/content_pattern.h"

namespace feedrate {
namespace {

TEST(ContentPattern, SameBytesWhateverThePieces) {
  const uint64_t key = ContentKey(7, "train/img_1_of_8.npz");
  EXPECT_NE(key, ContentKey(7, "valid/img_1_of_8.npz"));
  EXPECT_NE(key, ContentKey(8, "train/img_1_of_8.npz"));
  std::string whole(1000, '\0'), pieces(1000, '\0');
  FillContent(key, 13, whole.data(), whole.size());
  for (size_t at = 0; at < pieces.size();) {  // odd-sized, unaligned pieces
    const size_t n = std::min<size_t>(pieces.size() - at, 1 + at % 37);
    FillContent(key, 13 + at, pieces.data() + at, n);
    at += n;
  }
  EXPECT_EQ(whole, pieces);
  EXPECT_EQ(static_cast<uint8_t>(whole[100]), ExpectedContentByte(key, 113));
  EXPECT_EQ(FirstContentMismatch(key, 13, whole.data(), whole.size()), -1);
  whole[517] ^= 1;
  EXPECT_EQ(FirstContentMismatch(key, 13, whole.data(), whole.size()), 517);
  EXPECT_EQ(FirstContentMismatch(key, 14, whole.data() + 1, 500), -1);  // a window before the change
  EXPECT_EQ(FirstContentMismatch(key + 1, 13, whole.data(), 64), 0);     // another file's bytes
}

TEST(ContentPattern, PayloadRanges) {
  const std::string header = MakeNpyHeader("|u1", {4, 4, 1});
  std::string sample = header + std::string(16, 'x');
  auto r = ContentRange(DataFormat::kNpz, sample.data(), sample.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, header.size());
  EXPECT_EQ(r->second, sample.size());
  EXPECT_EQ(ContentRange(DataFormat::kNpy, "abcdefghijkl", 12)->first, 0u);  // a later sample of a multi-sample array
  // A framed TFRecord record: 12-byte header, Example, 4-byte CRC; the range is the image bytes.
  const ExampleFraming fr = DlioExampleFraming(300);
  std::string record = std::string(12, '\0') + fr.prefix + std::string(300, 'i') + fr.suffix + std::string(4, '\0');
  auto t = ContentRange(DataFormat::kTfRecord, record.data(), record.size());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->first, 12 + fr.prefix.size());
  EXPECT_EQ(t->second - t->first, 300u);
  std::string junk(64, '\x7f');
  EXPECT_FALSE(ContentRange(DataFormat::kTfRecord, junk.data(), junk.size()).ok());
  EXPECT_EQ(ContentRange(DataFormat::kHdf5, junk.data(), junk.size()).status().code(), Status::Code::kUnsupported);
}

}  // namespace
}  // namespace feedrate
