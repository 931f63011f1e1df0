// TFRecord: CRC-32C and zip CRC-32 vectors, framing encode/scan/probe/index, record checks, payload classification, and every
// TFRecord fixture in tests/fixtures against MANIFEST.json (offsets, lengths, CRCs, sha256, payload features).
#include <gtest/gtest.h>

#include <algorithm>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "loader/format/crc32c.h"
#include "loader/format/inspect.h"
#include "loader/format/tfrecord.h"
#include "loader/io/unique_fd.h"
#include "test_util.h"

namespace feedrate {
namespace {

std::string Frame(const std::string& payload) {
  char h[kTfRecordHeaderBytes];
  EncodeTfRecordHeader(payload.size(), h);
  uint32_t crc = TfRecordPayloadCrc(payload.data(), payload.size());
  return std::string(h, sizeof h) + payload + std::string(reinterpret_cast<const char*>(&crc), 4);
}

Result<std::vector<TfRecordEntry>> Scan(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  auto size = FileSize(fd.get(), path);
  return ScanTfRecordFile(fd.get(), *size, path);
}

TEST(Crc32c, PublishedVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32cExtend(Crc32c("1234", 4), "56789", 5), 0xE3069283u);
  EXPECT_EQ(UnmaskCrc(MaskCrc(0x12345678u)), 0x12345678u);
}

TEST(Crc32Zip, AgreesWithZlibAcrossPiecesAndSizes) {
  EXPECT_EQ(Crc32Zip("123456789", 9), 0xCBF43926u);
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{64}, size_t{4097}, data.size()}) {
    uLong want = crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(n));
    EXPECT_EQ(Crc32Zip(data.data(), n), static_cast<uint32_t>(want)) << n;
    EXPECT_EQ(Crc32ZipExtend(Crc32Zip(data.data(), n / 3), data.data() + n / 3, n - n / 3), static_cast<uint32_t>(want)) << n;
  }
}

TEST(TfRecord, MagentaHeaderBytesAsDocumented) {
  // The fixture starts 0b00000000000000 8615f504 "hello world": length 11, masked length CRC 0x04F51586.
  char h[kTfRecordHeaderBytes];
  EncodeTfRecordHeader(11, h);
  EXPECT_EQ(std::string(h, 12), std::string("\x0b\0\0\0\0\0\0\0\x86\x15\xf5\x04", 12));
}

TEST(TfRecord, ScanProbeAndIndexAgree) {
  test::TempDir dir;
  std::string file;
  for (int i = 0; i < 50; ++i) file += Frame(std::string(1000, static_cast<char>('a' + i % 26)));
  test::WriteFile(dir / "u.tfrecord", file);
  auto scanned = Scan(dir / "u.tfrecord");
  ASSERT_TRUE(scanned.ok()) << scanned.status().ToString();
  ASSERT_EQ(scanned->size(), 50u);
  auto fd = OpenForRead(dir / "u.tfrecord");
  auto probed = ProbeUniformTfRecordFile(fd->get(), file.size(), dir / "u.tfrecord");
  ASSERT_TRUE(probed.ok());
  ASSERT_EQ(probed->size(), 50u);
  for (size_t k = 0; k < 50; ++k) {
    EXPECT_EQ((*probed)[k].offset, (*scanned)[k].offset);
    EXPECT_EQ((*probed)[k].length, 1000u);
    EXPECT_TRUE(CheckTfRecord(file.data() + (*scanned)[k].offset, 1000, true, "u", k, (*scanned)[k].offset).ok());
  }
  test::WriteFile(dir / "u.idx", FormatTfRecordIndex(*scanned));
  auto idx = ReadTfRecordIndex(dir / "u.idx", file.size());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  EXPECT_EQ(idx->size(), 50u);
  EXPECT_EQ(test::ReadFile(dir / "u.idx").substr(0, 14), "0 1016\n1016 10");
}

TEST(TfRecord, NonUniformFileIsNotProbedAsUniform) {
  test::TempDir dir;
  std::string file = Frame("short") + Frame(std::string(300, 'x')) + Frame("tiny");
  test::WriteFile(dir / "v.tfrecord", file);
  auto fd = OpenForRead(dir / "v.tfrecord");
  auto probed = ProbeUniformTfRecordFile(fd->get(), file.size(), dir / "v.tfrecord");
  ASSERT_TRUE(probed.ok());
  EXPECT_TRUE(probed->empty());
  auto scanned = Scan(dir / "v.tfrecord");
  ASSERT_TRUE(scanned.ok());
  EXPECT_EQ(scanned->size(), 3u);
  EXPECT_EQ((*scanned)[2].offset, 5u + 16 + 300 + 16);
}

TEST(TfRecord, CorruptionNamesRecordOffsetAndValues) {
  test::TempDir dir;
  std::string good = Frame("hello") + Frame("world!") + Frame("third");
  std::string bad_payload = good;
  bad_payload[21 + 12 + 2] ^= 0x40;  // a byte inside record 1's payload
  Status st = CheckTfRecord(bad_payload.data() + 21, 6, true, "f.tfrecord", 1, 21);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("f.tfrecord: record 1 at offset 21: payload CRC mismatch"), std::string::npos) << st.message();
  EXPECT_TRUE(CheckTfRecord(bad_payload.data() + 21, 6, false, "f.tfrecord", 1, 21).ok());  // frame only

  test::WriteFile(dir / "bad.tfrecord", bad_payload);
  auto r = InspectTfRecordFile(dir / "bad.tfrecord");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("record 1 at offset 21: payload CRC mismatch"), std::string::npos);

  std::string bad_len = good;
  bad_len[21] = 7;  // length field no longer matches its CRC
  test::WriteFile(dir / "len.tfrecord", bad_len);
  auto s = Scan(dir / "len.tfrecord");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("record 1 at offset 21: length CRC mismatch"), std::string::npos);

  test::WriteFile(dir / "cut.tfrecord", good.substr(0, good.size() - 3));
  auto c = Scan(dir / "cut.tfrecord");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("record 2 at offset 43: length 5 runs past the end"), std::string::npos)
      << c.status().message();

  test::WriteFile(dir / "tail.tfrecord", good + "xyz");
  auto t = Scan(dir / "tail.tfrecord");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("truncated header (3 trailing bytes)"), std::string::npos);
}

// TensorFlow's stream checked as its fills come (the DLIO pattern): any split of the bytes gives the same answer; a
// bad payload CRC, a bad length CRC and a record cut short by the end of the file are named with record and offset.
TEST(TfRecord, StreamCheckFollowsTheRecordsAcrossAnySplit) {
  std::string file = Frame(std::string(1000, 'a')) + Frame("") + Frame(std::string(70000, 'b'));
  for (uint64_t piece : {1u, 7u, 12u, 4096u, 100000u}) {
    SCOPED_TRACE(piece);
    TfRecordStreamCheck c;
    c.Reset(true);
    for (uint64_t at = 0; at < file.size(); at += piece) {
      ASSERT_TRUE(c.Feed(file.data() + at, std::min<uint64_t>(piece, file.size() - at), "f").ok());
    }
    EXPECT_TRUE(c.End("f").ok());
    EXPECT_EQ(c.record, 3u);
  }
  std::string bad = file;
  bad[1016 + 12 + 500] ^= 1;  // record 2's payload
  TfRecordStreamCheck c;
  c.Reset(true);
  Status st = c.Feed(bad.data(), bad.size(), "f.tfrecord");
  EXPECT_NE(st.ToString().find("f.tfrecord: record 2 at offset 1032: payload CRC mismatch"), std::string::npos) << st.ToString();
  c.Reset(false);  // feedrate.verify_crc off: the framing alone
  EXPECT_TRUE(c.Feed(bad.data(), bad.size(), "f.tfrecord").ok());
  bad[1016 + 3] ^= 1;  // record 1's length field
  c.Reset(false);
  st = c.Feed(bad.data(), bad.size(), "f.tfrecord");
  EXPECT_NE(st.ToString().find("record 1 at offset 1016: length CRC mismatch"), std::string::npos) << st.ToString();
  c.Reset(true);
  ASSERT_TRUE(c.Feed(file.data(), file.size() - 5, "f.tfrecord").ok());
  EXPECT_NE(c.End("f.tfrecord").ToString().find("record 2 at offset 1032: truncated record"), std::string::npos);
}

TEST(TfRecord, StaleIndexIsRejected) {
  test::TempDir dir;
  test::WriteFile(dir / "i.idx", "0 21\n21 22\n");
  auto short_data = ReadTfRecordIndex(dir / "i.idx", 60);
  ASSERT_FALSE(short_data.ok());
  EXPECT_NE(short_data.status().message().find("stale index"), std::string::npos);
  test::WriteFile(dir / "g.idx", "0 21\n25 22\n");
  auto gap = ReadTfRecordIndex(dir / "g.idx", 47);
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("line 2"), std::string::npos);
  test::WriteFile(dir / "t.idx", "0 twenty\n");
  EXPECT_FALSE(ReadTfRecordIndex(dir / "t.idx", 20).ok());
}

TEST(Fixtures, EveryTfRecordFixtureMatchesManifest) {
  auto manifest = nlohmann::json::parse(test::ReadFile(test::FixturesDir() + "/MANIFEST.json"));
  int checked = 0;
  for (const auto& f : manifest["files"]) {
    if (f["format"] != "tfrecord") continue;
    std::string path = test::FixturesDir() + "/" + f["path"].get<std::string>();
    SCOPED_TRACE(path);
    const auto& e = f["expected"];
    auto format = DetectFileFormat(path);
    ASSERT_TRUE(format.ok());
    EXPECT_EQ(*format, FileFormat::kTfRecord);
    auto r = InspectTfRecordFile(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->records.size(), e["num_records"].get<size_t>());
    EXPECT_EQ(r->payload_type, e["payload_type"].get<std::string>() == "raw" ? "raw" : e["payload_type"].get<std::string>());
    for (size_t k = 0; k < r->records.size(); ++k) {
      const auto& rec = r->records[k];
      EXPECT_EQ(rec.entry.offset, e["record_offsets"][k].get<uint64_t>()) << k;
      EXPECT_EQ(rec.entry.length, e["record_lengths"][k].get<uint64_t>()) << k;
      EXPECT_EQ(rec.payload_crc, e["record_data_masked_crc"][k].get<uint32_t>()) << k;
      EXPECT_EQ(rec.payload_sha256, e["record_payload_sha256"][k].get<std::string>()) << k;
    }
    const auto& first = e["first_record"];
    const PayloadSummary& p = r->records[0].payload;
    auto check_features = [&](const nlohmann::json& keys, const nlohmann::json& features) {
      ASSERT_EQ(p.features.size(), keys.size());
      for (size_t i = 0; i < keys.size(); ++i) {
        EXPECT_EQ(p.features[i].key, keys[i].get<std::string>());
        EXPECT_EQ(p.features[i].kind, features[p.features[i].key]["kind"].get<std::string>());
        EXPECT_EQ(p.features[i].count, features[p.features[i].key]["count"].get<uint64_t>());
      }
    };
    if (p.type == "Example") check_features(first["feature_keys_sorted"], first["features"]);
    if (p.type == "SequenceExample") {
      check_features(first["context_keys_sorted"], first["context"]);
      ASSERT_EQ(p.feature_lists.size(), first["feature_list_keys_sorted"].size());
      for (const auto& l : p.feature_lists) {
        EXPECT_EQ(l.num_steps, first["feature_lists"][l.key]["num_steps"].get<uint64_t>());
        EXPECT_EQ(l.kind, first["feature_lists"][l.key]["step0"]["kind"].get<std::string>());
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

}  // namespace
}  // namespace feedrate
