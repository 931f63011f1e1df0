// Parquet against independent implementations (tests/oracle/parquet: hyparquet in JavaScript, DuckDB in C++):
// every file Feedrate writes reads back in both with the same schema, rows and per-column checksums; files they
// write (each codec) are inspected and trained on with the bytes their metadata says; damaged files exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

const std::string kOracleDir = std::string(FEEDRATE_SOURCE_DIR) + "/tests/oracle/parquet";

bool HaveOracle() {
  return fs::exists(kOracleDir + "/node_modules/hyparquet") && fs::exists(kOracleDir + "/node_modules/@duckdb/node-api") &&
         Sh("node --version").code == 0;
}
#define REQUIRE_ORACLE() \
  if (!HaveOracle()) GTEST_SKIP() << "the Parquet oracle is not installed (scripts/install-test-extras.sh: node + npm ci)"

nlohmann::json Oracle(const std::string& args) {
  auto r = Sh("node " + kOracleDir + "/oracle.mjs " + args, 180);
  EXPECT_EQ(r.code, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

// A Flux-shaped (fixed-size float lists) and DLRM-shaped (mixed scalars, some unread) schema in one file.
const char* kWorkload = R"(model: {name: parquet_oracle}
dataset:
  data_folder: DATA
  format: parquet
  num_files_train: 2
  num_samples_per_file: 700
  parquet:
    row_group_size: 256
    columns:
      - {name: t5, dtype: float32, size: 3000}
      - {name: clip, dtype: float16, size: 9}
      - {name: f64, dtype: float64, read: false}
      - {name: i8, dtype: int8}
      - {name: u16, dtype: uint16, read: false}
      - {name: i64, dtype: int64}
      - {name: flag, dtype: bool}
reader: {batch_size: 50, read_threads: 2}
train: {epochs: 1, computation_time: 0.001}
)";

std::string WriteWorkload(const test::TempDir& dir, const std::string& data) {
  std::string text = kWorkload;
  text.replace(text.find("DATA"), 4, data);
  test::WriteFile(dir / "w.yaml", text);
  return dir / "w.yaml";
}

void ExpectColumnsAgree(const nlohmann::json& a, const nlohmann::json& b, const std::string& what) {
  for (const auto& [name, col] : a.items()) {
    ASSERT_TRUE(b.contains(name)) << what << ": " << name;
    EXPECT_EQ(col["values"], b[name]["values"]) << what << ": " << name;
    const double x = col["sum"].get<double>(), y = b[name]["sum"].get<double>();
    EXPECT_NEAR(x, y, 1e-9 * std::max(1.0, std::fabs(x))) << what << ": " << name;
  }
}

TEST(ParquetOracle, ReadsEveryFileFeedrateWritesWithEveryCodec) {
  REQUIRE_ORACLE();
  test::TempDir dir;
  const std::map<std::string, uint64_t> size = {{"t5", 3000}, {"clip", 9}, {"f64", 1}, {"i8", 1}, {"u16", 1}, {"i64", 1}, {"flag", 1}};
  for (const std::string codec : {"none", "snappy", "gzip", "zstd", "lz4"}) {
    const std::string data = dir / codec;
    auto gen = Sh(Feedrate("datagen -w " + WriteWorkload(dir, data) + " --param dataset.compression=" + codec));
    ASSERT_EQ(gen.code, 0) << gen.output;
    const std::string file = data + "/train/img_1_of_2.parquet";
    // hyparquet reads uncompressed and snappy pages only (its other codecs are a separate package).
    const bool both = codec == "none" || codec == "snappy";
    auto j = Oracle(std::string(both ? "read " : "read-duckdb ") + file);
    ASSERT_TRUE(j.is_object());
    const auto& duck = j["duckdb"];
    EXPECT_EQ(duck["rows"], 700) << codec;
    ASSERT_EQ(duck["columns"].size(), size.size()) << codec;
    for (const auto& [name, n] : size) {
      EXPECT_EQ(duck["columns"][name]["values"], 700 * n) << codec << " " << name;
      const double lo = duck["columns"][name]["min"], hi = duck["columns"][name]["max"];
      if (name == "t5" || name == "clip" || name == "f64") {
        EXPECT_GE(lo, 0.0) << name;  // numpy's random floats: uniform in [0, 1); as float16, rounded (1.0 can occur)
        EXPECT_TRUE(name == "clip" ? hi <= 1.0 : hi < 1.0) << name << " " << hi;
        EXPECT_NEAR(duck["columns"][name]["sum"].get<double>() / (700.0 * static_cast<double>(n)), 0.5, 0.05) << name;
      }
      if (name == "i8") {
        EXPECT_TRUE(lo >= -128 && hi <= 127 && lo < -100 && hi > 100) << lo << " " << hi;
      }
    }
    if (both) ExpectColumnsAgree(j["hyparquet"]["columns"], duck["columns"], codec);
    // Feedrate's own view of the chunks is DuckDB's.
    auto meta = Oracle("meta " + file);
    auto ins = Sh(Feedrate("inspect --json " + file));
    ASSERT_EQ(ins.code, 0) << ins.output;
    auto mine = nlohmann::json::parse(ins.output);
    size_t k = 0;
    for (const auto& g : mine["row_groups"]) {
      for (const auto& c : g["columns"]) {
        ASSERT_LT(k, meta.size());
        EXPECT_EQ(c["data_page_offset"], meta[k]["data_page_offset"]) << codec << " chunk " << k;
        // pyarrow's defaults: every column but BOOLEAN starts with a dictionary page (DuckDB sees it too).
        const bool boolean = meta[k]["type"] == "BOOLEAN";
        EXPECT_EQ(meta[k]["dictionary_page_offset"].is_null(), boolean) << codec << " chunk " << k;
        if (!boolean) {
          EXPECT_EQ(c["dictionary_page_offset"], meta[k]["dictionary_page_offset"]) << codec << " chunk " << k;
          EXPECT_NE(meta[k]["encodings"].get<std::string>().find("RLE_DICTIONARY"), std::string::npos) << meta[k];
        }
        EXPECT_EQ(c["total_compressed_size"], meta[k]["total_compressed_size"]) << codec << " chunk " << k;
        EXPECT_EQ(c["num_values"], meta[k]["num_values"]) << codec << " chunk " << k;
        ++k;
      }
    }
    EXPECT_EQ(k, meta.size());
  }
}

// Bytes one pass reads: per row group, from the first to the last byte of the selected columns' chunks.
uint64_t SpanBytes(const nlohmann::json& meta, const std::vector<std::string>& selected) {
  std::map<int64_t, std::pair<int64_t, int64_t>> span;  // row group -> [lo, hi)
  for (const auto& c : meta) {
    const std::string top = c["path_in_schema"].get<std::string>().substr(0, c["path_in_schema"].get<std::string>().find(','));
    if (!selected.empty() && std::find(selected.begin(), selected.end(), top) == selected.end()) continue;
    const int64_t dict = c["dictionary_page_offset"].is_null() ? 0 : c["dictionary_page_offset"].get<int64_t>();
    const int64_t lo = dict > 0 ? dict : c["data_page_offset"].get<int64_t>();
    const int64_t hi = lo + c["total_compressed_size"].get<int64_t>();
    auto [it, fresh] = span.try_emplace(c["row_group_id"].get<int64_t>(), lo, hi);
    if (!fresh) it->second = {std::min(it->second.first, lo), std::max(it->second.second, hi)};
  }
  uint64_t total = 0;
  for (const auto& [g, s] : span) total += static_cast<uint64_t>(s.second - s.first);
  return total;
}

TEST(ParquetOracle, TrainsOnFilesDuckdbAndHyparquetWrote) {
  REQUIRE_ORACLE();
  test::TempDir dir;
  fs::create_directories(dir / "made");
  auto made = Oracle("write " + dir / "made" + " 5000 1000");
  ASSERT_TRUE(made.is_array());
  // Split reads of all columns and of one; whole row-group reads decoding every page (feedrate.decode).
  const std::vector<std::pair<std::vector<std::string>, bool>> variants = {{{}, false}, {{"f64"}, false}, {{}, true}};
  for (const auto& [selected, decode] : variants) {
    for (const auto& f : made) {
      const std::string file = f.get<std::string>();
      const std::string name = fs::path(file).stem().string();
      if (!selected.empty() && name.starts_with("hyparquet")) continue;
      auto ins = Sh(Feedrate("inspect " + file));
      ASSERT_EQ(ins.code, 0) << ins.output;  // every page header of every chunk walks cleanly
      // A one-file dataset of this file; bytes read must be its spans, as DuckDB's metadata gives them.
      const std::string data = dir / ("d_" + name + std::to_string(selected.size()) + (decode ? "_decode" : ""));
      fs::create_directories(data + "/train");
      fs::copy_file(file, data + "/train/img_0_of_1.parquet");
      std::string params = " --param dataset.format=parquet --param dataset.num_files_train=1"
                           " --param dataset.num_samples_per_file=5000 --param reader.batch_size=500"
                           " --param train.computation_time=0.001 --param train.epochs=2";
      if (!selected.empty()) params += " --param storage.storage_options.columns=[f64]";
      if (name.ends_with("zstd")) params += " --param feedrate.engine=posix";  // both engines see empty rows
      if (decode) params += " --param feedrate.decode=true --param reader.transfer_size=1048576";
      auto run = Sh(Feedrate("run -w unet3d_h100 --data-dir " + data + params + " --results-dir " + data + "/r"));
      ASSERT_TRUE(run.code == 0 || run.code == 3) << name << "\n" << run.output;
      const auto fr = ReadJson(data + "/r/summary.json")["feedrate"];
      EXPECT_EQ(fr["bytes_read"].get<uint64_t>(), 2 * SpanBytes(Oracle("meta " + file), selected)) << name;
      if (decode) {
        EXPECT_NE(fr["sample_check"].get<std::string>().find("decompressed and its levels and values decoded"), std::string::npos) << fr;
        EXPECT_GT(fr["sample_check_seconds"].get<double>(), 0.0) << name;
      }
    }
  }
}

TEST(ParquetOracle, DamagedFilesExitTwoNamingTheFileAndTheCause) {
  test::TempDir dir;
  auto gen = Sh(Feedrate("datagen -w " + WriteWorkload(dir, dir / "d") + " --param dataset.num_files_train=1"));
  ASSERT_EQ(gen.code, 0) << gen.output;
  const std::string good = test::ReadFile(dir / "d/train/img_0_of_1.parquet");
  uint32_t flen = 0;
  std::memcpy(&flen, good.data() + good.size() - 8, 4);
  std::string corrupt = good;
  for (size_t i = good.size() - 8 - flen + 10; i < good.size() - 8 - flen + 40; ++i) corrupt[i] = static_cast<char>(0xff);
  std::string magic = good;
  magic.replace(magic.size() - 4, 4, "PARX");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {good.substr(0, good.size() / 2), "no PAR1 magic at its end"}, {magic, "not a Parquet file"}, {corrupt, "Parquet footer"}};
  for (const auto& [bytes, cause] : cases) {
    test::WriteFile(dir / "d/train/img_0_of_1.parquet", bytes);
    const std::string path = dir / "d/train/img_0_of_1.parquet";
    for (const std::string& cmd : {"inspect " + path, "run -w " + dir / "w.yaml" + " --param dataset.num_files_train=1 --results-dir " + dir / "r"}) {
      auto r = Sh(Feedrate(cmd));
      EXPECT_EQ(r.code, 2) << cmd << "\n" << r.output;
      EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(cause), std::string::npos) << cause << "\n" << r.output;
    }
  }
}

// inspect --decode decompresses and decodes every page (PLAIN, dictionary, BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED;
// data pages v1 and v2; nulls and lists): every column's values and sum are DuckDB's, for files DuckDB and
// hyparquet wrote and for files Feedrate wrote with each codec.
TEST(ParquetOracle, DecodingEveryPageGivesTheOraclesValuesAndSums) {
  REQUIRE_ORACLE();
  test::TempDir dir;
  fs::create_directories(dir / "made");
  std::vector<std::string> files;
  for (const auto& f : Oracle("write " + dir / "made" + " 3000 1000")) files.push_back(f.get<std::string>());
  for (const std::string codec : {"none", "snappy", "gzip", "zstd", "lz4"}) {
    auto gen = Sh(Feedrate("datagen -w " + WriteWorkload(dir, dir / codec) + " --param dataset.num_files_train=1 "
                           "--param dataset.compression=" + codec));
    ASSERT_EQ(gen.code, 0) << gen.output;
    files.push_back(dir / codec + "/train/img_0_of_1.parquet");
  }
  for (const auto& file : files) {
    auto ins = Sh(Feedrate("inspect --decode --json " + file));
    ASSERT_EQ(ins.code, 0) << ins.output;
    auto mine = nlohmann::json::parse(ins.output)["decoded"]["columns"];
    auto duck = Oracle("read-duckdb " + file)["duckdb"]["columns"];
    size_t summed = 0;
    for (const auto& c : mine) {
      const std::string path = c["path"].get<std::string>();
      const std::string top = path.substr(0, path.find('.'));
      ASSERT_TRUE(duck.contains(top)) << file << " " << path;
      EXPECT_EQ(c["values"], duck[top]["values"]) << file << " " << path;
      if (c["sum"].is_null()) continue;
      const double x = c["sum"].get<double>(), y = duck[top]["sum"].get<double>();
      EXPECT_NEAR(x, y, 1e-6 * std::max(1.0, std::fabs(y))) << file << " " << path;
      ++summed;
    }
    EXPECT_EQ(summed, mine.size()) << file;  // every column here is numeric
  }
}

// Whole row-group reads walk the page headers on the I/O threads: a damaged page header stops the run naming the
// file and the chunk (split reads do not see page boundaries: inspect checks them).
TEST(ParquetOracle, ADamagedPageHeaderStopsAWholeRowGroupRunNamingTheFile) {
  test::TempDir dir;
  auto gen = Sh(Feedrate("datagen -w " + WriteWorkload(dir, dir / "d") + " --param dataset.num_files_train=1"));
  ASSERT_EQ(gen.code, 0) << gen.output;
  const std::string path = dir / "d/train/img_0_of_1.parquet";
  auto ins = Sh(Feedrate("inspect --json " + path));
  ASSERT_EQ(ins.code, 0) << ins.output;
  const auto chunk = nlohmann::json::parse(ins.output)["row_groups"][0]["columns"][0];
  const int64_t at = chunk["start"].get<int64_t>();
  std::string bytes = test::ReadFile(path);
  for (int64_t i = at; i < at + 6; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(0xff);
  test::WriteFile(path, bytes);
  const std::string run = "run -w " + dir / "w.yaml" + " --param dataset.num_files_train=1 --param train.epochs=1 "
                          "--param reader.transfer_size=67108864 --results-dir " + dir / "r";
  for (const std::string param : {" --param feedrate.parquet_group_reads=whole", " --param feedrate.decode=true"}) {
    auto r = Sh(Feedrate(run + param));
    EXPECT_EQ(r.code, 2) << param << "\n" << r.output;
    EXPECT_NE(r.output.find(path + ": Parquet column chunk at offset " + std::to_string(at)), std::string::npos) << r.output;
  }
  auto split = Sh(Feedrate(run + " --param feedrate.parquet_group_reads=split"));
  EXPECT_TRUE(split.code == 0 || split.code == 3) << split.output;
}

// MLPerf Storage v3.0's DLRM files hold 4,718,592 rows each. The run indexes them per row group and reads DLIO's
// order as ranges: six such files (a one-bit column keeps them small) cost no memory per row — listed per row, this
// run's peak RSS was 1.47 GB (42 MB now) — and the bytes read are the spans of exactly the row groups the steps cover.
TEST(ParquetRun, DlrmSizedFilesCostMemoryPerRowGroupNotPerRow) {
  // 54 MB in release; a sanitized binary's allocator keeps up to 256 MB of freed blocks in quarantine (with their
  // shadow), 0.69 GB at set-up's end: the limit there still refuses the per-row listing's 1.47 GB (more under ASan).
#ifdef FEEDRATE_SANITIZED
  const double kSetupLimitMib = 1000;
#else
  const double kSetupLimitMib = 250;
#endif
  test::TempDir dir;
  const std::string data = dir / "rows";
  test::WriteFile(dir / "w.yaml", R"(model: {name: parquet_rows}
dataset:
  data_folder: )" + data + R"(
  format: parquet
  num_files_train: 6
  num_samples_per_file: 4718592
  parquet:
    row_group_size: 6144
    read_mode: row_group
    columns:
      - {name: flag, dtype: bool}
reader: {batch_size: 16384, read_threads: 2}
train: {epochs: 1, computation_time: 0.0001, total_training_steps: 30}
)");
  auto gen = Sh(Feedrate("datagen -w " + dir / "w.yaml" + " --threads 2"), 300);
  ASSERT_EQ(gen.code, 0) << gen.output;
  // Each of the 6 accelerators reads 30 steps of 16,384 rows from the start of its own file: 80 row groups.
  uint64_t expected = 0;
  for (int f = 0; f < 6; ++f) {
    auto ins = Sh(Feedrate("inspect --json " + data + "/train/img_" + std::to_string(f) + "_of_6.parquet"));
    ASSERT_EQ(ins.code, 0) << ins.output;
    const auto j = nlohmann::json::parse(ins.output);
    ASSERT_EQ(j["row_groups"].size(), 768u);
    for (size_t g = 0; g < 80; ++g) expected += j["row_groups"][g]["columns"][0]["total_compressed_size"].get<uint64_t>();
  }
  for (const std::string mode : {"split", "whole"}) {  // rows sharing the span; the first row reading it whole
    const std::string results = dir / ("r_" + mode);
    auto run = Sh(Feedrate("run -w " + dir / "w.yaml" + " --accelerators 6 --param feedrate.parquet_group_reads=" + mode +
                           " --results-dir " + results), 300);
    ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
    const auto fr = ReadJson(results + "/summary.json")["feedrate"];
    EXPECT_EQ(fr["bytes_read"].get<uint64_t>(), expected) << mode;
    EXPECT_LT(fr["setup_peak_rss_mib"].get<double>(), kSetupLimitMib) << mode << ": 6 x 4,718,592 rows listed one by one took 1.47 GB";
  }
}

}  // namespace
}  // namespace feedrate::it
