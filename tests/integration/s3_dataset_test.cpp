// Datasets in S3 end to end against the real RGW: datagen -> run -> inspect for npz and TFRecord (the S3 loader
// reads exactly what the file loader reads from the same dataset on disk), multipart uploads, content checks,
// and the faults: wrong keys, missing data, 503 SlowDown and connection resets (retried), and a server that stops
// mid-run or mid-upload (a clear error, no result claiming success, no partial object under a final key).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>

#include "harness.h"
#include "loader/format/tfrecord.h"
#include "loader/s3/s3_client.h"
#include "s3_fault_proxy.h"
#include "s3_rgw.h"

namespace feedrate::it {
namespace {

// unet3d-shaped npz: 8 files of ~256 KiB, 2 epochs, a short compute time.
const char* kNpz = "-w unet3d_h100 --param dataset.num_files_train=8 --param dataset.record_length_bytes=262144 "
                   "--param dataset.record_length_bytes_stdev=65536 --param train.computation_time=0.01 "
                   "--param reader.batch_size=2 --param train.epochs=2";
// resnet50-shaped TFRecord: 4 files of 64 records of ~110 KB (7.3 MB: two 5 MiB multipart parts each).
const char* kTfr = "-w resnet50_h100 --param dataset.num_files_train=4 --param dataset.num_samples_per_file=64 "
                   "--param train.computation_time=0.002 --param reader.batch_size=16 --param train.epochs=2";

std::string S3Args(const Server& srv, const std::string& url) { return " --storage " + url + " --endpoint " + srv.endpoint.url; }

std::vector<uint64_t> EpochBytes(const nlohmann::json& summary) {
  std::vector<uint64_t> out;
  for (const auto& e : summary["feedrate"]["epochs"]) out.push_back(e["bytes_read"].get<uint64_t>());
  return out;
}

std::unique_ptr<S3Client> Client(const Server& srv, const std::string& bucket) {
  auto c = S3Client::Create(srv.endpoint, srv.credentials, bucket, {.max_parallel = 4});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

TEST(S3Dataset, NpzDatagenRunAndInspectMatchTheFilePath) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string url = "s3://" + Bucket("npz") + "/sets/unet";
  auto gen = Sh(srv.Env() + MpiFeedrate(2, std::string("datagen ") + kNpz + S3Args(srv, url)));
  ASSERT_EQ(gen.code, 0) << gen.output;
  EXPECT_NE(gen.output.find("wrote 8 files"), std::string::npos) << gen.output;
  EXPECT_NE(gen.output.find("into " + url + "/train"), std::string::npos) << gen.output;
  auto run = Sh(srv.Env() + MpiFeedrate(2, std::string("run ") + kNpz + S3Args(srv, url) + " --results-dir " + dir / "s3"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto s3 = ReadJson(dir / "s3/summary.json");
  EXPECT_EQ(s3["feedrate"]["engine"], "s3");
  EXPECT_EQ(s3["feedrate"]["s3"]["location"], url);
  EXPECT_GT(s3["feedrate"]["s3"]["get_requests"].get<double>(), 0);
  EXPECT_TRUE(s3["feedrate"]["epochs"][0]["resident_fraction"].is_null());
  EXPECT_NE(s3["feedrate"]["cold_warm_note"].get<std::string>().find("first touch"), std::string::npos);
  EXPECT_EQ(test::ReadFile(dir / "s3/summary.json").find(srv.credentials.secret_key), std::string::npos);

  // The same dataset on disk (datagen is deterministic): the file loader reads the same bytes every epoch.
  auto local = Sh(MpiFeedrate(2, std::string("datagen ") + kNpz + " --data-dir " + dir / "local"));
  ASSERT_EQ(local.code, 0) << local.output;
  auto frun = Sh(MpiFeedrate(2, std::string("run ") + kNpz + " --data-dir " + dir / "local" + " --results-dir " + dir / "file"));
  ASSERT_TRUE(frun.code == 0 || frun.code == 3) << frun.output;
  auto file = ReadJson(dir / "file/summary.json");
  EXPECT_EQ(EpochBytes(s3), EpochBytes(file));
  EXPECT_GT(EpochBytes(s3).at(0), 0u);

  // inspect of an object = inspect of the file it was made from, but for the name.
  const std::string name = "train/img_3_of_8.npz";
  auto obj = Sh(srv.Env() + Feedrate("inspect --json --endpoint " + srv.endpoint.url + " " + url + "/" + name));
  auto fil = Sh(Feedrate("inspect --json " + dir / "local" + "/" + name));
  ASSERT_EQ(obj.code, 0) << obj.output;
  ASSERT_EQ(fil.code, 0) << fil.output;
  auto oj = nlohmann::json::parse(obj.output), fj = nlohmann::json::parse(fil.output);  // (one file: an object)
  EXPECT_EQ(oj["file"], url + "/" + name);
  EXPECT_EQ(oj["arrays"][0]["name"], "x");
  oj.erase("file");
  fj.erase("file");
  EXPECT_EQ(oj, fj);
  // An object that is not what its name says: the error names the object, not inspect's temporary copy of it.
  auto c = Client(srv, url.substr(5, url.find('/', 5) - 5));
  const std::string junk = "not an npz archive, long enough to look for its central directory at the end of it";
  ASSERT_TRUE(c->Put("sets/unet/train/junk.npz", junk.data(), junk.size()).ok());
  auto bad = Sh(srv.Env() + Feedrate("inspect --endpoint " + srv.endpoint.url + " " + url + "/train/junk.npz"));
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find(url + "/train/junk.npz"), std::string::npos) << bad.output;
  EXPECT_EQ(bad.output.find("feedrate-inspect-"), std::string::npos) << bad.output;
}

// DLIO's S3 readers GET each sample's whole object (storage.get_data), one sample at a time per DataLoader worker:
// by default Feedrate makes the same one GET a sample (an epoch's GETs: a 2-epoch run's less a 1-epoch run's), where
// coalesced reads make a ranged GET per transfer_size; both count the same sample bytes.
TEST(S3Dataset, DlioPatternIsOneWholeObjectGetPerSample) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string url = "s3://" + Bucket("dliopattern") + "/sets/unet";
  const std::string shape = " -w unet3d_h100 --param dataset.num_files_train=8 --param dataset.record_length_bytes=262144"
                            " --param dataset.record_length_bytes_stdev=0 --param train.computation_time=0.001"
                            " --param reader.batch_size=2 --param reader.read_threads=2 --param reader.transfer_size=65536";
  ASSERT_EQ(Sh(srv.Env() + Feedrate("datagen" + shape + S3Args(srv, url))).code, 0);
  std::map<std::string, double> per_epoch, in_flight;
  std::map<std::string, std::vector<uint64_t>> bytes;
  // "parts": the CRT's part size lowered to 64 KiB, so each ~257 KiB object is a first ranged GET and 4 more.
  for (const std::string variant : {"dlio", "coalesced", "parts"}) {
    const std::string pattern = variant == "parts" ? "dlio" : variant;
    const std::string extra = variant == "parts" ? " --param feedrate.s3_part_size=65536" : "";
    double gets[3] = {0, 0, 0};
    for (int epochs : {1, 2}) {
      const std::string out = dir / (variant + std::to_string(epochs));
      auto run = Sh(srv.Env() + Feedrate("run" + shape + S3Args(srv, url) + " --param train.epochs=" + std::to_string(epochs) +
                                         " --param feedrate.access_pattern=" + pattern + extra + " -n 1 --results-dir " + out));
      ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
      const auto j = ReadJson(out + "/summary.json");
      EXPECT_EQ(j["feedrate"]["access_pattern"], pattern) << j["feedrate"]["access_pattern_reason"];
      gets[epochs] = j["feedrate"]["s3"]["get_requests"].get<double>();
      in_flight[variant] = j["feedrate"]["s3"]["max_gets_in_flight_per_rank"].get<double>();
      if (epochs == 2) bytes[variant] = EpochBytes(j);
    }
    per_epoch[variant] = gets[2] - gets[1];
  }
  EXPECT_EQ(per_epoch["dlio"], 8);          // one GET per sample (objects under the 8 MiB part)
  EXPECT_GE(per_epoch["coalesced"], 8 * 4);  // 256 KiB in 64 KiB ranges
  EXPECT_EQ(per_epoch["parts"], 8 * 5);     // ceil(~257 KiB / 64 KiB) parts per sample
  EXPECT_LE(in_flight["dlio"], 2);          // one GET a DataLoader worker
  EXPECT_GE(in_flight["parts"], 4);         // a first part, then the other 4 at once
  EXPECT_LE(in_flight["parts"], 2 * 4);
  EXPECT_EQ(bytes["dlio"], bytes["coalesced"]);
  EXPECT_EQ(bytes["dlio"], bytes["parts"]);
}

// feedrate.s3_reader_window: newer DLIO's iterable S3 readers prefetch a worker's objects with many whole-object GETs
// in flight (64 with s3dlio); with a window of 4 and 2 workers, up to 8 GETs at once (more than one a worker), each
// sample one GET whatever the part size, the same bytes.
TEST(S3Dataset, ReaderWindowKeepsThatManyWholeObjectGetsPerWorker) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string url = "s3://" + Bucket("window") + "/sets/unet";
  const std::string shape = " -w unet3d_h100 --param dataset.num_files_train=32 --param dataset.record_length_bytes=65536"
                            " --param dataset.record_length_bytes_stdev=0 --param train.computation_time=0.01"
                            " --param reader.batch_size=2 --param reader.read_threads=2 --param feedrate.s3_part_size=16384";
  ASSERT_EQ(Sh(srv.Env() + Feedrate("datagen" + shape + S3Args(srv, url))).code, 0);
  double gets[3] = {0, 0, 0};
  std::vector<uint64_t> bytes;
  for (int epochs : {1, 2}) {
    const std::string out = dir / ("w" + std::to_string(epochs));
    auto run = Sh(srv.Env() + Feedrate("run" + shape + S3Args(srv, url) + " --param train.epochs=" + std::to_string(epochs) +
                                       " --param feedrate.s3_reader_window=4 --param reader.preprocess_time=0.001 -n 1"
                                       " --results-dir " + out + " 2>&1"));
    ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
    const auto j = ReadJson(out + "/summary.json");
    EXPECT_EQ(j["feedrate"]["access_pattern"], "dlio") << run.output;
    EXPECT_NE(j["feedrate"]["access_pattern_reason"].get<std::string>().find("4 at once per DataLoader worker"),
              std::string::npos) << j["feedrate"]["access_pattern_reason"];
    const double in_flight = j["feedrate"]["s3"]["max_gets_in_flight_per_rank"].get<double>();
    EXPECT_GT(in_flight, 2) << run.output;  // more than one a worker
    EXPECT_LE(in_flight, 8) << run.output;  // at most the window a worker
    EXPECT_NE(run.output.find("preprocess_time is not applied"), std::string::npos) << run.output;
    gets[epochs] = j["feedrate"]["s3"]["get_requests"].get<double>();
    if (epochs == 2) bytes = EpochBytes(j);
  }
  EXPECT_EQ(gets[2] - gets[1], 32);  // one GET a sample: no parts of 16 KiB
  ASSERT_EQ(bytes.size(), 2u);
  EXPECT_EQ(bytes[0], bytes[1]);
  EXPECT_GE(bytes[0], 32u * 65536);
}

// Where each GET waits (the proxy holds every GET 50 ms, on top of the test server's own time), the window decides
// the answer as the arithmetic says: 4 samples a batch per worker, 2 workers, 50 ms compute, t the GET's time (the
// run's median sample latency). One GET at a time per worker: a batch every 4t / 2, AU = 0.1 / 4t (~26% at t = 95
// ms); a window of 4: a worker's batch in one t, AU = min(1, 0.1 / t).
TEST(S3Dataset, ReaderWindowFollowsTheRequestArithmetic) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string url = "s3://" + Bucket("windowwait") + "/sets/unet";
  const std::string shape = " -w unet3d_h100 --param dataset.num_files_train=64 --param dataset.record_length_bytes=16384"
                            " --param dataset.record_length_bytes_stdev=0 --param train.computation_time=0.05"
                            " --param reader.batch_size=4 --param reader.read_threads=2 --param train.epochs=1";
  ASSERT_EQ(Sh(srv.Env() + Feedrate("datagen" + shape + S3Args(srv, url))).code, 0);
  S3FaultProxy proxy(srv.endpoint.url);
  proxy.DelayGets(50);
  std::map<int, double> au, expect;
  for (int window : {1, 4}) {
    const std::string out = dir / ("w" + std::to_string(window));
    auto run = Sh(srv.Env() + Feedrate("run" + shape + " --storage " + url + " --endpoint " + proxy.url() +
                                       " --param feedrate.s3_reader_window=" + std::to_string(window) + " -n 1 --results-dir " + out));
    ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
    const auto j = ReadJson(out + "/summary.json");
    EXPECT_EQ(j["feedrate"]["access_pattern"], "dlio") << run.output;
    au[window] = j["metric"]["train_au_mean_percentage"].get<double>();
    const double t = j["feedrate"]["read_latency_us"]["p50"].get<double>() / 1e6;
    EXPECT_GE(t, 0.05);  // the proxy's wait is in every GET
    const double gets_a_batch = window == 1 ? 4 : 1;  // one after another, or all 4 at once
    expect[window] = 100 * std::min(1.0, 0.05 * 2 / (gets_a_batch * t));
  }
  EXPECT_NEAR(au[1], expect[1], 10);
  EXPECT_NEAR(au[4], expect[4], 12);
  EXPECT_GT(au[4], au[1] + 30);
}

// reader.preprocess_time on S3 (DLIO's S3 readers call it as the file readers do): each lane waits it after its
// object is in, before its next. 4 samples a batch x 50 ms a worker, 2 workers, 50 ms compute: AU = 50%.
TEST(S3Dataset, PreprocessTimeIsAWaitPerSampleInEachWorker) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string url = "s3://" + Bucket("preprocess") + "/sets/unet";
  const std::string shape = " -w unet3d_h100 --param dataset.num_files_train=32 --param dataset.record_length_bytes=65536"
                            " --param dataset.record_length_bytes_stdev=0 --param train.computation_time=0.05"
                            " --param reader.batch_size=4 --param reader.read_threads=2 --param train.epochs=1";
  ASSERT_EQ(Sh(srv.Env() + Feedrate("datagen" + shape + S3Args(srv, url))).code, 0);
  auto run = Sh(srv.Env() + Feedrate("run" + shape + S3Args(srv, url) + " --param reader.preprocess_time=0.05 -n 1"
                                     " --results-dir " + (dir / "r") + " 2>&1"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  const auto j = ReadJson(dir / "r/summary.json");
  EXPECT_EQ(j["feedrate"]["access_pattern"], "dlio") << run.output;
  // At most 50% plus the first step's head start; lower where the GETs themselves take long (a sanitizer build).
  const double au = j["metric"]["train_au_mean_percentage"].get<double>();
  EXPECT_GE(au, 35) << run.output;
  EXPECT_LE(au, 62) << run.output;  // without the wait: 80-99% on this shape
  EXPECT_EQ(run.output.find("preprocess_time is not applied"), std::string::npos) << run.output;
}

// HDF5 objects: libhdf5 reads their metadata through the ByteSource driver (ranged GETs); the rows come from
// where the library says they lie, the same bytes as from the files.
TEST(S3Dataset, Hdf5ThroughTheSourceDriver) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string w = std::string(kNpz) + " --param dataset.format=hdf5 --param dataset.num_samples_per_file=4";
  const std::string url = "s3://" + Bucket("h5") + "/ds";
  auto gen = Sh(srv.Env() + Feedrate("datagen " + w + S3Args(srv, url)));
  ASSERT_EQ(gen.code, 0) << gen.output;
  auto run = Sh(srv.Env() + MpiFeedrate(2, "run " + w + S3Args(srv, url) + " --results-dir " + dir / "s3"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  ASSERT_EQ(Sh(Feedrate("datagen " + w + " --data-dir " + dir / "local")).code, 0);
  auto frun = Sh(MpiFeedrate(2, "run " + w + " --data-dir " + dir / "local" + " --results-dir " + dir / "file"));
  ASSERT_TRUE(frun.code == 0 || frun.code == 3) << frun.output;
  EXPECT_EQ(EpochBytes(ReadJson(dir / "s3/summary.json")), EpochBytes(ReadJson(dir / "file/summary.json")));
  EXPECT_GT(EpochBytes(ReadJson(dir / "s3/summary.json")).at(0), 0u);
}

TEST(S3Dataset, TfrecordMultipartVerifiedAndSkipExisting) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string bucket = Bucket("tfr");
  const std::string url = "s3://" + bucket + "/rn";
  const std::string gen_args = std::string("datagen ") + kTfr + S3Args(srv, url) + " --content verifiable --s3-part-size 5m";
  auto gen = Sh(srv.Env() + Feedrate(gen_args));
  ASSERT_EQ(gen.code, 0) << gen.output;
  // 4 data objects as multipart (initiate + 2 parts) and 4 .idx objects by PUT: 16 requests.
  EXPECT_NE(gen.output.find("S3: 16 upload requests"), std::string::npos) << gen.output;
  auto local = Sh(Feedrate(std::string("datagen ") + kTfr + " --data-dir " + dir / "local" + " --content verifiable"));
  ASSERT_EQ(local.code, 0) << local.output;
  auto c = Client(srv, bucket);
  auto listed = c->List("rn/");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  int data_objects = 0;
  for (const auto& o : *listed) {
    const std::string rel = o.key.substr(3);
    if (rel == ".feedrate-content") continue;
    EXPECT_EQ(o.size, std::filesystem::file_size(dir / "local" + "/" + rel)) << o.key;
    data_objects += rel.ends_with(".tfrecord") ? 1 : 0;
  }
  EXPECT_EQ(data_objects, 4);
  // Every byte checked against the pattern, CRCs too, through ranged GETs.
  auto run = Sh(srv.Env() + MpiFeedrate(2, std::string("run ") + kTfr + S3Args(srv, url) + " --verify 1 --results-dir " + dir / "r"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto s = ReadJson(dir / "r/summary.json");
  EXPECT_GT(s["feedrate"]["verify"]["bytes_checked"].get<double>(), 0);
  EXPECT_EQ(s["feedrate"]["verify"]["result"], "every checked byte matched the dataset's pattern");
  // Again with --skip-existing: the objects are there with their planned sizes, nothing is uploaded. (--fsync
  // has no meaning for objects, and says so.)
  auto again = Sh(srv.Env() + Feedrate(gen_args + " --skip-existing --fsync"));
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("--fsync applies to files"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("wrote 0 files (0.00 GiB), kept 4 existing"), std::string::npos) << again.output;
}

// A TFRecord object whose records are not all the same length is indexed from its .idx object (a HEAD and one
// GET, as a file from its .idx file): a stale index object is refused naming it, a correct one is used, and without one the
// record headers are walked through ranged GETs. Every run reads the same bytes.
TEST(S3Dataset, NonUniformTfrecordIsIndexedFromItsIndexObject) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string bucket = Bucket("tfidx");
  const std::string url = "s3://" + bucket + "/rn";
  auto gen = Sh(srv.Env() + Feedrate(std::string("datagen ") + kTfr + S3Args(srv, url)));
  ASSERT_EQ(gen.code, 0) << gen.output;
  const std::string run = std::string("run ") + kTfr + S3Args(srv, url) + " --param train.epochs=1 --results-dir ";
  auto uniform = Sh(srv.Env() + Feedrate(run + dir / "r0"));
  ASSERT_TRUE(uniform.code == 0 || uniform.code == 3) << uniform.output;
  const auto expected = EpochBytes(ReadJson(dir / "r0/summary.json"));
  // One extra short record at the end of object 2: it is no longer uniform, and its .idx object is now stale.
  auto c = Client(srv, bucket);
  const std::string key = "rn/train/img_2_of_4.tfrecord", idx_key = "rn/index/train/img_2_of_4.tfrecord.idx";
  auto size = c->Size(key);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  std::string data(*size, '\0');
  ASSERT_TRUE(c->Get(key, 0, 0, data.data(), data.size()).ok());
  char header[kTfRecordHeaderBytes];
  EncodeTfRecordHeader(5, header);
  const uint32_t crc = TfRecordPayloadCrc("extra", 5);
  const std::string extra = std::string(header, sizeof header) + "extra" + std::string(reinterpret_cast<const char*>(&crc), 4);
  ASSERT_TRUE(c->Put(key, (data + extra).data(), data.size() + extra.size()).ok());
  // (Given as a DLIO workload does: storage_root and a data_folder written "./rn/", which names the prefix "rn"; the
  // index object's key must come from the prefix, or it is not found and the run walks the headers.)
  const std::string dlio_style = std::string("run ") + kTfr + " --param storage.storage_type=s3 --param storage.storage_root=" +
                                 bucket + " --param dataset.data_folder=./rn/ --endpoint " + srv.endpoint.url +
                                 " --param train.epochs=1 --results-dir ";
  auto stale = Sh(srv.Env() + Feedrate(dlio_style + dir / "r1"));
  EXPECT_EQ(stale.code, 2) << stale.output;
  EXPECT_NE(stale.output.find("img_2_of_4.tfrecord.idx"), std::string::npos) << stale.output;
  EXPECT_NE(stale.output.find("stale index"), std::string::npos) << stale.output;
  // The index object brought up to date: used, the same bytes read.
  auto idx_size = c->Size(idx_key);
  ASSERT_TRUE(idx_size.ok()) << idx_size.status().ToString();
  std::string idx(*idx_size, '\0');
  ASSERT_TRUE(c->Get(idx_key, 0, 0, idx.data(), idx.size()).ok());
  idx += std::to_string(data.size()) + " " + std::to_string(extra.size()) + "\n";
  ASSERT_TRUE(c->Put(idx_key, idx.data(), idx.size()).ok());
  auto fixed = Sh(srv.Env() + Feedrate(run + dir / "r2"));
  ASSERT_TRUE(fixed.code == 0 || fixed.code == 3) << fixed.output;
  EXPECT_EQ(EpochBytes(ReadJson(dir / "r2/summary.json")), expected);
  // No index object: the headers are walked.
  ASSERT_TRUE(c->Delete(idx_key).ok());
  auto walked = Sh(srv.Env() + Feedrate(run + dir / "r3"));
  ASSERT_TRUE(walked.code == 0 || walked.code == 3) << walked.output;
  EXPECT_EQ(EpochBytes(ReadJson(dir / "r3/summary.json")), expected);
}

TEST(S3Dataset, ClearErrorsForMissingDataKeysAndOptions) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string bucket = Bucket("errs");
  auto c = Client(srv, bucket);
  ASSERT_TRUE(c->CreateBucket().ok());
  const std::string run = std::string("run ") + kNpz + " --results-dir " + dir / "r";
  auto missing = Sh(srv.Env() + Feedrate(run + S3Args(srv, "s3://" + bucket + "/nothing")));
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("s3://" + bucket + "/nothing/train/: no objects under this prefix"), std::string::npos)
      << missing.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["status"], "failed");
  auto gen = Sh(srv.Env() + Feedrate(std::string("datagen ") + kNpz + S3Args(srv, "s3://" + bucket + "/ds")));
  ASSERT_EQ(gen.code, 0) << gen.output;
  auto wrong = Sh("AWS_ACCESS_KEY_ID=" + srv.credentials.access_key + " AWS_SECRET_ACCESS_KEY=wrong " +
                  Feedrate(run + S3Args(srv, "s3://" + bucket + "/ds")));
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.output.find("HTTP 403 SignatureDoesNotMatch"), std::string::npos) << wrong.output;
  EXPECT_EQ(wrong.output.find("wrong"), std::string::npos) << "the secret was printed: " << wrong.output;
  auto drop = Sh(srv.Env() + Feedrate(run + S3Args(srv, "s3://" + bucket + "/ds") + " --cache drop"));
  EXPECT_EQ(drop.code, 2);
  EXPECT_NE(drop.output.find("an S3 dataset has no client page cache to drop"), std::string::npos) << drop.output;
  auto direct = Sh(srv.Env() + Feedrate(run + S3Args(srv, "s3://" + bucket + "/ds") + " --param reader.odirect=true"));
  EXPECT_EQ(direct.code, 2);
  EXPECT_NE(direct.output.find("reader.odirect applies to files"), std::string::npos) << direct.output;
  // A workload file with keys in it is refused (they would be copied into the results).
  const std::string yaml = dir / "w.yaml";
  test::WriteFile(yaml, "dataset: {format: npz, num_files_train: 8}\nstorage: {storage_type: s3, storage_root: b, "
                        "storage_options: {secret_access_key: abc}}\n");
  auto keys = Sh(Feedrate("run -w " + yaml + " --data-dir " + dir / "d" + " --results-dir " + dir / "k"));
  EXPECT_EQ(keys.code, 2);
  EXPECT_NE(keys.output.find("Feedrate takes S3 credentials from AWS_ACCESS_KEY_ID"), std::string::npos) << keys.output;
  auto none = Sh(Feedrate(std::string("run ") + kNpz));
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.output.find("--data-dir or --storage is required"), std::string::npos) << none.output;
}

// 503 SlowDown on every 5th GET and a reset connection on every 7th: retried, the run reads every byte. (The proxy
// faults a request line once: v3.0's whole-object reads make 8 here, one per object, as its DLIO does.)
TEST(S3Dataset, SlowDownAndResetsAreRetried) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string url = "s3://" + Bucket("slow") + "/ds";
  auto gen = Sh(srv.Env() + Feedrate(std::string("datagen ") + kNpz + S3Args(srv, url)));
  ASSERT_EQ(gen.code, 0) << gen.output;
  auto clean = Sh(srv.Env() + Feedrate(std::string("run ") + kNpz + S3Args(srv, url) + " --results-dir " + dir / "clean"));
  ASSERT_TRUE(clean.code == 0 || clean.code == 3) << clean.output;
  S3FaultProxy proxy(srv.endpoint.url);
  proxy.SlowDownEvery(5);
  proxy.ResetEvery(7);
  auto run = Sh(srv.Env() + Feedrate(std::string("run ") + kNpz + " --storage " + url + " --endpoint " + proxy.url() +
                                     " --results-dir " + dir / "faulty"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_GT(proxy.slowdowns(), 0u);
  EXPECT_GT(proxy.resets(), 0u);
  auto s = ReadJson(dir / "faulty/summary.json");
  EXPECT_GT(s["feedrate"]["s3"]["retries"].get<double>(), 0) << s["feedrate"]["s3"].dump();
  EXPECT_EQ(EpochBytes(s), EpochBytes(ReadJson(dir / "clean/summary.json")));
}

// Rank 0 lists the dataset and broadcasts it: one ListObjectsV2 request for a job of three ranks.
TEST(S3Dataset, OneListingPerJob) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string url = "s3://" + Bucket("list") + "/ds";
  auto gen = Sh(srv.Env() + Feedrate(std::string("datagen ") + kNpz + S3Args(srv, url)));
  ASSERT_EQ(gen.code, 0) << gen.output;
  S3FaultProxy proxy(srv.endpoint.url);
  auto run = Sh(srv.Env() + MpiFeedrate(3, std::string("run ") + kNpz + " --param reader.batch_size=1 --storage " +
                                               url + " --endpoint " + proxy.url() + " --results-dir " + dir / "r"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_EQ(proxy.listings(), 1u);
  EXPECT_GT(proxy.gets(), 6u);
  // Each rank kept the keys (and sizes) of the objects it reads, not the whole listing: 2 files an epoch (v3.0's
  // DLIO deals floor(8 / 3) to each), re-dealt for the second (file_shuffle), so 2 to 4.
  auto s = ReadJson(dir / "r/summary.json");
  ASSERT_EQ(s["feedrate"]["setup_per_rank"].size(), 3u) << s["feedrate"].dump();
  for (const auto& r : s["feedrate"]["setup_per_rank"]) {
    EXPECT_GE(r["files_held"].get<uint64_t>(), 2u) << r;
    EXPECT_LE(r["files_held"].get<uint64_t>(), 4u) << r;
  }
}

// The server goes away while the run reads: the retries run out, the error names the object and the cause, and
// no result claims success.
TEST(S3Dataset, ServerStoppingMidRunFailsTheRunNamingTheObject) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string bucket = Bucket("dies");
  const std::string url = "s3://" + bucket + "/ds";
  auto gen = Sh(srv.Env() + Feedrate(std::string("datagen ") + kNpz + S3Args(srv, url)));
  ASSERT_EQ(gen.code, 0) << gen.output;
  S3FaultProxy proxy(srv.endpoint.url);
  CmdResult run;
  std::thread t([&] {
    run = Sh(srv.Env() + Feedrate(std::string("run ") + kNpz + " --param train.epochs=50 --storage " + url +
                                  " --endpoint " + proxy.url() + " --results-dir " + dir / "r"));
  });
  for (int i = 0; i < 6000 && proxy.gets() < 40; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(proxy.gets(), 40u) << "the run never read through the proxy";
  proxy.Stop();
  t.join();
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_NE(run.output.find("GET s3://" + bucket + "/ds/train/img_"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("attempts"), std::string::npos) << run.output;
  auto s = ReadJson(dir / "r/summary.json");
  EXPECT_EQ(s["feedrate"]["status"], "failed");
}

// The server goes away during multipart uploads: datagen fails naming the file, and every object that does carry
// a final key is whole (a half-sent PUT or an unfinished multipart upload never appears).
TEST(S3Dataset, ServerStoppingMidUploadLeavesNoPartialObject) {
  RGW_OR_SKIP(srv);
  test::TempDir dir;
  const std::string bucket = Bucket("upload");
  auto c = Client(srv, bucket);
  ASSERT_TRUE(c->CreateBucket().ok());
  S3FaultProxy proxy(srv.endpoint.url);
  const std::string args = std::string("datagen ") + kTfr + " --param dataset.num_files_train=12 --s3-part-size 5m";
  CmdResult gen;
  std::thread t([&] {
    gen = Sh(srv.Env() + Feedrate(args + " --storage s3://" + bucket + "/ds --endpoint " + proxy.url() + " --threads 2"));
  });
  for (int i = 0; i < 6000 && proxy.requests() < 10; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  proxy.Stop();
  t.join();
  EXPECT_EQ(gen.code, 2) << gen.output;
  EXPECT_NE(gen.output.find("s3://" + bucket + "/ds/"), std::string::npos) << gen.output;
  EXPECT_NE(gen.output.find("attempts"), std::string::npos) << gen.output;
  auto local = Sh(Feedrate(args + " --data-dir " + dir / "local"));
  ASSERT_EQ(local.code, 0) << local.output;
  auto listed = c->List("ds/train/");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_LT(listed->size(), 12u) << "the upload was not interrupted";
  for (const auto& o : *listed) {
    EXPECT_EQ(o.size, std::filesystem::file_size(dir / "local" + "/" + o.key.substr(3))) << o.key << " is partial";
  }
}

}  // namespace
}  // namespace feedrate::it
