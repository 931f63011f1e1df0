// TFRecord end to end: MPI datagen (files + DLIO .idx), checked by the fixtures' independent parser (pure-Python
// CRC-32C + python3-protobuf); runs under mpirun counting exactly the framed records; corrupt records stop the run
// naming file and record; inspect agrees with the index.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "datagen/tfrecord_writer.h"
#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

// 8 files x 40 records of 64x64 bytes: a ResNet-50-shaped dataset in miniature.
const char* kParams =
    " --param dataset.num_files_train=8 --param dataset.num_samples_per_file=40"
    " --param dataset.record_length_bytes=4096 --param dataset.record_length_bytes_resize=4096";

uint64_t Framed() { return DlioExampleFraming(4096).payload_bytes() + kTfRecordOverhead; }

struct Dataset {
  test::TempDir dir;
  std::string data = dir / "resnet50";
  Dataset() {
    auto gen = Sh(MpiFeedrate(2, "datagen -w resnet50_h100 --data-dir " + data + kParams));
    EXPECT_EQ(gen.code, 0) << gen.output;
  }
  std::string File(int i) const { return data + "/train/img_" + std::to_string(i) + "_of_8.tfrecord"; }
};

bool HaveProtobufPython() { return HavePython("google.protobuf"); }

TEST(TfRecordRun, DatagenWritesDlioLayoutThatAnIndependentParserAccepts) {
  Dataset d;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(fs::exists(d.File(i))) << d.File(i);
    EXPECT_EQ(fs::file_size(d.File(i)), 40 * Framed());
    std::string idx = test::ReadFile(d.data + "/index/train/img_" + std::to_string(i) + "_of_8.tfrecord.idx");
    EXPECT_EQ(std::count(idx.begin(), idx.end(), '\n'), 40);
    EXPECT_EQ(idx.substr(0, idx.find('\n')), "0 " + std::to_string(Framed()));
  }
  auto inspect = Sh(Feedrate("inspect --json " + d.File(3)));
  ASSERT_EQ(inspect.code, 0) << inspect.output;
  auto j = nlohmann::json::parse(inspect.output);
  EXPECT_EQ(j["num_records"], 40);
  EXPECT_EQ(j["payload_type"], "Example");
  EXPECT_EQ(j["records"][1]["offset"], Framed());
  EXPECT_EQ(j["records"][0]["features"]["image"]["kind"], "bytes_list");
  EXPECT_EQ(j["records"][0]["features"]["size"]["kind"], "int64_list");
  if (!HaveProtobufPython()) GTEST_SKIP() << "no python3-protobuf";
  auto py = Sh(std::string(FEEDRATE_PYTHON3) + " " + test::FixturesDir() + "/parse_tfrecord.py " + d.File(0) + " " +
               d.File(7));
  ASSERT_EQ(py.code, 0) << py.output;
  auto p = nlohmann::json::parse(py.output);
  ASSERT_EQ(p.size(), 2u);
  for (const auto& [name, r] : p.items()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(r["all_data_crcs_ok"].get<bool>());
    EXPECT_TRUE(r["all_length_crcs_ok"].get<bool>());
    EXPECT_TRUE(r["framing_problems"].empty());
    EXPECT_EQ(r["num_records"], 40);
    EXPECT_EQ(r["payload_type"], "Example");
    EXPECT_EQ(r["first_record"]["features"]["image"]["byte_lengths"][0], 4096);
    EXPECT_EQ(r["first_record"]["features"]["size"]["values"][0], 4096);
  }
}

TEST(TfRecordRun, MpiRunReadsEveryFramedRecordAndChecksCrcs) {
  Dataset d;
  const std::string results = d.dir / "results";
  auto run = Sh(MpiFeedrate(2, "run -w resnet50_h100 --data-dir " + d.data + kParams +
                                   " --accelerators 2 --param reader.batch_size=8 --param train.epochs=2"
                                   " --param train.computation_time=0.01 --results-dir " + results));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto s = ReadJson(results + "/summary.json");
  const auto& f = s["feedrate"];
  EXPECT_EQ(f["steps_per_epoch"], 10);  // floor(8 files x 40 / batch 8 / 4 accelerators)
  EXPECT_EQ(f["bytes_read"].get<uint64_t>(), 2 * 320 * Framed());
  EXPECT_EQ(f["sample_check"], "tfrecord: length and payload CRC-32C");
  // TensorFlow's stream replayed (DLIO's pattern): each file once, in buffer_size fills, checked as they come
  EXPECT_EQ(f["access_pattern"], "dlio") << f["access_pattern_reason"];
  EXPECT_EQ(f["coalesce_reads_bytes"], 0);
  EXPECT_EQ(f["file_open_mode"], "per_file_visit");  // TensorFlow streams each file
  EXPECT_FALSE(f["retain_batches"].get<bool>());
  // Read coalesced, the records fit one transfer: checked in place.
  auto co = Sh(MpiFeedrate(2, "run -w resnet50_h100 --data-dir " + d.data + kParams +
                                  " --accelerators 2 --param reader.batch_size=8 --param train.epochs=1"
                                  " --param train.computation_time=0.01 --param feedrate.access_pattern=coalesced"
                                  " --results-dir " + results + "_co"));
  ASSERT_TRUE(co.code == 0 || co.code == 3) << co.output;
  const auto c = ReadJson(results + "_co/summary.json")["feedrate"];
  EXPECT_EQ(c["sample_check"], "tfrecord: length and payload CRC-32C");
  EXPECT_EQ(c["coalesce_reads_bytes"], 1048576);
  EXPECT_FALSE(c["retain_batches"].get<bool>());
}

TEST(TfRecordRun, CorruptRecordStopsTheRunNamingFileAndRecord) {
  Dataset d;
  {
    std::fstream f(d.File(5), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(7 * Framed() + 12 + 2000));  // inside record 7's image bytes
    f.put('\x5a');
  }
  const std::string args = "run -w resnet50_h100 --data-dir " + d.data + kParams +
                           " --param reader.batch_size=8 --param train.epochs=1 --param train.computation_time=0";
  // TensorFlow's replayed stream (checked as its fills come) and the coalesced reads (each record checked whole)
  // stop alike, naming the file, the record and its offset.
  const std::string named = "img_5_of_8.tfrecord: record 7 at offset " + std::to_string(7 * Framed()) + ": payload CRC mismatch";
  for (const std::string pattern : {"dlio", "coalesced"}) {
    SCOPED_TRACE(pattern);
    const std::string out = d.dir / ("r_" + pattern);
    auto run = Sh(MpiFeedrate(2, args + " --param feedrate.access_pattern=" + pattern + " --results-dir " + out));
    EXPECT_EQ(run.code, 2) << run.output;
    EXPECT_NE(run.output.find(named), std::string::npos) << run.output;
    EXPECT_FALSE(fs::exists(out + "/summary.json") && ReadJson(out + "/summary.json")["feedrate"]["status"] == "success");
  }
  // Pure-I/O runs can turn the payload CRC off (the length framing is still checked).
  auto nocrc = Sh(MpiFeedrate(2, args + " --param feedrate.verify_crc=false --results-dir " + (d.dir / "r2")));
  EXPECT_TRUE(nocrc.code == 0 || nocrc.code == 3) << nocrc.output;
  auto inspect = Sh(Feedrate("inspect " + d.File(5)));
  EXPECT_EQ(inspect.code, 2);
  EXPECT_NE(inspect.output.find("record 7"), std::string::npos) << inspect.output;
}

TEST(TfRecordRun, WithoutIndexFilesTheHeadersAreUsed) {
  Dataset d;
  fs::remove_all(d.data + "/index");
  auto run = Sh(Feedrate("run -w resnet50_h100 --data-dir " + d.data + kParams +
                         " --param reader.batch_size=8 --param train.epochs=1 --param train.computation_time=0"
                         " --param feedrate.coalesce_reads=false --results-dir " + (d.dir / "r")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto s = ReadJson(d.dir / "r/summary.json");
  EXPECT_EQ(s["feedrate"]["bytes_read"].get<uint64_t>(), 320 * Framed());
  EXPECT_EQ(s["feedrate"]["coalesce_reads_bytes"], 0);
  // A file that is not uniform (one extra short record) is indexed from its .idx; a stale .idx (written before the
  // record was appended) is refused naming the index file; a correct one is used.
  Dataset e;
  const std::string file = e.File(2), idx = e.data + "/index/train/img_2_of_8.tfrecord.idx";
  const uint64_t size = fs::file_size(file);
  std::string extra(12, '\0');
  EncodeTfRecordHeader(5, extra.data());
  uint32_t crc = TfRecordPayloadCrc("extra", 5);
  extra += "extra" + std::string(reinterpret_cast<const char*>(&crc), 4);
  { std::ofstream(file, std::ios::app | std::ios::binary) << extra; }
  const std::string args = "run -w resnet50_h100 --data-dir " + e.data + kParams +
                           " --param reader.batch_size=8 --param train.epochs=1 --param train.computation_time=0";
  auto stale = Sh(Feedrate(args + " --results-dir " + (e.dir / "r1")));
  EXPECT_EQ(stale.code, 2) << stale.output;
  EXPECT_NE(stale.output.find("img_2_of_8.tfrecord.idx"), std::string::npos) << stale.output;
  EXPECT_NE(stale.output.find("stale index"), std::string::npos) << stale.output;
  { std::ofstream(idx, std::ios::app) << size << " " << extra.size() << "\n"; }
  auto fixed = Sh(Feedrate(args + " --results-dir " + (e.dir / "r2")));
  ASSERT_TRUE(fixed.code == 0 || fixed.code == 3) << fixed.output;
  EXPECT_EQ(ReadJson(e.dir / "r2/summary.json")["feedrate"]["bytes_read"].get<uint64_t>(), 320 * Framed());
}

}  // namespace
}  // namespace feedrate::it
