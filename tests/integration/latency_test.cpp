// Storage where every request waits (tests/latencyfs: a FUSE pass-through that delays each open and read): Feedrate
// makes the requests DLIO's readers make, as many at once as DLIO's DataLoader workers, and its AU follows from them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "harness.h"
#include "loader/format/access_pattern.h"
#include "loader/format/sample_index.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

struct Counters {
  uint64_t opens = 0, reads = 0, max_in_flight = 0;
};

// Mounts latencyfs over `src` at `mnt` for the test's life.
class LatencyFs {
 public:
  LatencyFs(const std::string& src, const std::string& mnt, double delay_ms, bool page_cache = false) : mnt_(mnt) {
    fs::create_directories(mnt);
    char delay[32];
    std::snprintf(delay, sizeof delay, "%g", delay_ms);
    auto r = Sh(std::string(FEEDRATE_LATENCYFS) + " " + src + " " + mnt + " --open-delay-ms " + delay + " --read-delay-ms " +
                delay + (page_cache ? " --page-cache" : "") + " > " + mnt + ".log 2>&1 & for i in $(seq 300); do [ -e " + mnt +
                "/.latencyfs_stats ] && exit 0; sleep 0.05; done; exit 1");
    mounted_ = r.code == 0;
  }
  ~LatencyFs() { Sh("fusermount3 -u " + mnt_ + " || umount -l " + mnt_); }
  bool mounted() const { return mounted_; }
  // Replies wait until `k` requests are in flight at once (latencyfs's one-shot hold, 30 s at most).
  void ArmHold(uint64_t k) const {
    struct stat st {};
    (void)::stat((mnt_ + "/.latencyfs_hold_" + std::to_string(k)).c_str(), &st);
  }
  // A snapshot; max_in_flight counts from the previous snapshot.
  Counters Read() const {
    const nlohmann::json j = ReadJson(mnt_ + "/.latencyfs_stats");
    return {j.value("opens", uint64_t{0}), j.value("reads", uint64_t{0}), j.value("max_in_flight", uint64_t{0})};
  }

 private:
  std::string mnt_;
  bool mounted_ = false;
};

// Runs `args` with --json-events; at the training_start event (set-up done) it arms latencyfs's hold for `hold`
// requests in flight (0: none) and snapshots the counters; again when the run has ended.
struct Measured;
Measured RunMeasured(const LatencyFs& lfs, const std::string& args, uint64_t hold = 0);

struct Measured {
  int code = -1;
  Counters training;  // requests made between the training_start event and the end of the run
  double au_pct = 0;
  std::string output;
};

Measured RunMeasured(const LatencyFs& lfs, const std::string& args, uint64_t hold) {
  Measured m;
  Counters start;
  FILE* p = ::popen((Feedrate(args + " --json-events") + " 2>&1").c_str(), "r");
  char line[8192];
  while (p != nullptr && std::fgets(line, sizeof line, p) != nullptr) {
    m.output += line;
    const std::string s = line;
    if (s.find("\"event\":\"training_start\"") != std::string::npos) {
      start = lfs.Read();
      if (hold > 0) lfs.ArmHold(hold);
    }
    if (s.find("\"event\":\"done\"") != std::string::npos) {
      auto j = nlohmann::json::parse(s, nullptr, false);
      if (j.is_object()) m.au_pct = j.value("au_pct", 0.0);
    }
  }
  m.code = p == nullptr ? -1 : WEXITSTATUS(::pclose(p));
  const Counters end = lfs.Read();
  m.training = {end.opens - start.opens, end.reads - start.reads, end.max_in_flight};
  return m;
}

struct LatencyCase {
  test::TempDir dir;
  std::string src() const { return dir / "src"; }
  std::string mnt() const { return dir / "mnt"; }
};

// DLIO's reads per sample for the dataset's first file (what access_pattern.h plans from the file's layout).
uint64_t PlannedReads(DataFormat format, const std::string& file, const std::string& params_format, DlioEdition rules) {
  std::vector<AccessRead> reads;
  if (ReadsWholeFiles(format, rules)) {  // nothing of the file but its size (v3.0's images are raw bytes)
    FileLayout l;
    l.size = fs::file_size(file);
    PlanDlioReads(DlioAccessKind(format, rules), l, SampleExtent{0, 0, kWholeFile}, 4096, &reads);
    return reads.size();
  }
  IndexOptions o;
  o.format = format;
  o.samples_per_file = 1;
  ListedExtents listed;
  auto fsamples = IndexTrainingFile(file, o, &listed, nullptr);
  EXPECT_TRUE(fsamples.ok()) << params_format << ": " << fsamples.status().ToString();
  if (!fsamples.ok()) return 0;
  FileLayout l = fsamples->layout;
  l.size = fs::file_size(file);
  SampleExtent e{0, fsamples->first_offset, fsamples->length};
  if (!listed.samples.empty()) e = listed.samples.front();
  PlanDlioReads(DlioAccessKind(format, rules), l, e, 4096, &reads);
  // Every one reaches the file system, the reads at EOF too (DLIO's synchronous ones make the round trip; Feedrate's
  // are sent as a read of the last byte, which FUSE cannot answer from i_size: dlio_lane.cpp PrepPiece).
  return reads.size();
}

// Per format: one open and the planned reads per sample, read_threads requests in flight per accelerator.
// Both editions: upstream DLIO's readers (np.load, h5py, PIL), and MLPerf Storage v3.0's whole-file read of each
// sample (an open, the read of size + 1 and the read at EOF), set-up opening none of the files.
TEST(Latency, EachSampleIsReadAsDliosReaderReadsIt) {
  struct Format {
    const char* name;
    DataFormat format;
    const char* ext;
  };
  const std::vector<Format> formats = {Format{"npz", DataFormat::kNpz, "npz"},
                                       Format{"npy", DataFormat::kNpy, "npy"},
                                       Format{"hdf5", DataFormat::kHdf5, "hdf5"},
                                       Format{"jpeg", DataFormat::kJpeg, "jpeg"},
                                       Format{"png", DataFormat::kPng, "png"},
                                       Format{"indexed_binary", DataFormat::kIndexedBinary, "indexed_binary"}};
  for (const DlioEdition rules : {DlioEdition::kUpstream, DlioEdition::kV3_0}) {
  for (const Format& f : formats) {
    SCOPED_TRACE(std::string(f.name) + " " + Name(rules));
    LatencyCase c;
    const std::string params = std::string("--param dataset.format=") + f.name +
                               " --param dataset.num_files_train=16 --param dataset.record_length_bytes=65536 "
                               "--param dataset.record_length_bytes_stdev=0";
    auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + c.src() + " " + params + " --rules " + Name(rules)));
    ASSERT_EQ(gen.code, 0) << gen.output;
    const uint64_t per_sample = PlannedReads(f.format, c.src() + "/train/img_00_of_16." + f.ext, f.name, rules);
    if (ReadsWholeFiles(f.format, rules)) {
      EXPECT_EQ(per_sample, 2u);
    }
    ASSERT_GT(per_sample, 0u);
    LatencyFs lfs(c.src(), c.mnt(), 2);
    ASSERT_TRUE(lfs.mounted()) << test::ReadFile(c.mnt() + ".log");
    // One epoch's requests: a 2-epoch run's less a 1-epoch run's (the same set-up reads in both).
    Counters at[3];
    at[0] = lfs.Read();
    for (int epochs : {1, 2}) {
      auto m = RunMeasured(lfs, "run -w unet3d_h100 --data-dir " + c.mnt() + " " + params +
                                    " --param reader.batch_size=2 --param reader.read_threads=2 --param train.epochs=" +
                                    std::to_string(epochs) + " --param train.computation_time=0.001"
                                    " --param feedrate.access_pattern=dlio --cache keep --rules " + Name(rules) +
                                    " -n 1 --results-dir " +
                                    (c.dir / ("r" + std::to_string(epochs))));
      ASSERT_TRUE(m.code == 0 || m.code == 3) << m.output;  // 3: the AU bar missed (2 ms a request, 0.001 s compute)
      const auto s = ReadJson(c.dir / ("r" + std::to_string(epochs)) + "/summary.json")["feedrate"];
      EXPECT_EQ(s["access_pattern"], "dlio") << s["access_pattern_reason"];
      EXPECT_EQ(m.training.max_in_flight, 2u);  // read_threads, not the client's CPUs
      at[epochs] = lfs.Read();
    }
    // An epoch adds its 16 samples and, under v3.0, one pre-warm pass: the next epoch's first batch of each of the
    // 2 workers and worker 0's second (batch 2), read before the epoch's start outside the window, as the fork's
    // pre-warm iterator.
    const uint64_t prewarm = rules == DlioEdition::kV3_0 ? 3 * 2 : 0;  // samples a pass
    const uint64_t opens = (at[2].opens - at[1].opens) - (at[1].opens - at[0].opens);
    const uint64_t reads = (at[2].reads - at[1].reads) - (at[1].reads - at[0].reads);
    EXPECT_EQ(opens, 16u + prewarm);  // one per sample, as DLIO's on_demand reader
    EXPECT_EQ(reads, (16 + prewarm) * per_sample);
    const auto r1 = ReadJson(c.dir / "r1/summary.json")["feedrate"];
    EXPECT_EQ(r1["prewarm"]["batches"], 2 * prewarm / 2) << "before the epoch and after it: " << r1["prewarm"];
    EXPECT_EQ(r1["prewarm"]["bytes"], 2 * prewarm * r1["bytes_read"].get<uint64_t>() / 16) << r1["prewarm"];
    // summary.json says what set-up read before the window, and the store saw no more than that: a 1-epoch run's
    // requests less its epoch's and pre-warms' (the page cache may serve a set-up read twice asked; never a read not
    // counted).
    const auto& setup = r1["setup_reads"];
    const uint64_t before_window = (at[1].reads - at[0].reads) - reads - prewarm * per_sample;
    EXPECT_LE(before_window, setup["reads"].get<uint64_t>()) << setup;
    EXPECT_EQ(setup["total"]["bytes"], setup["bytes"]) << "one rank";
    // Set-up: a stat and FUSE's page-cache probe, no header read, where the reader's reads need nothing learnt first
    // (v3.0's whole files) or learn it themselves (upstream's np.load: an npz's zip layout, an npy's header, from its
    // own reads).
    if (ReadsWholeFiles(f.format, rules) || f.format == DataFormat::kNpz || f.format == DataFormat::kNpy) {
      EXPECT_EQ(setup["files_opened"], 1u) << setup;
      EXPECT_LE(setup["files_stat"].get<uint64_t>(), 1u) << setup;
      EXPECT_EQ(setup["reads"], 1u) << setup;
      EXPECT_EQ(setup["bytes"], 1u) << setup;
      EXPECT_EQ(at[1].opens - at[0].opens, 16u + 2 * prewarm + 1u);
      EXPECT_LE(at[1].reads - at[0].reads, (16 + 2 * prewarm) * per_sample + 1u);  // (+ the probe's byte, where it
                                                                                   // reaches the store)
    } else if (f.format != DataFormat::kJpeg && f.format != DataFormat::kPng) {    // (images: whole, no header read)
      EXPECT_GT(setup["reads"].get<uint64_t>(), 16u) << "each file's headers, said: " << setup;
      EXPECT_GT(setup["bytes"].get<uint64_t>(), 16u) << setup;
    }
  }
  }
}

// TensorFlow's TFRecordDataset: each file one stream, opened once, read in buffer_size fills from its start to the
// pread at its end that returns nothing (access_pattern.h); read_threads streams at once per accelerator (the
// interleave's files), 3 x that where files hold one or two records (its prefetched files are then read whole).
TEST(Latency, TfRecordIsOneBufferedStreamPerFile) {
  LatencyCase c;
  const std::string params = "--param dataset.num_files_train=8 --param dataset.num_samples_per_file=4 "
                             "--param dataset.record_length_bytes=65536 --param dataset.record_length_bytes_stdev=0 "
                             "--param reader.transfer_size=65536";
  ASSERT_EQ(Sh(Feedrate("datagen -w resnet50_h100 --data-dir " + c.src() + " " + params)).code, 0);
  const std::string file = c.src() + "/train/img_0_of_8.tfrecord";
  ASSERT_TRUE(fs::exists(file)) << file;
  FileLayout l;
  l.size = fs::file_size(file);
  const uint64_t framed = l.size / 4;
  uint64_t per_file = 0;
  std::vector<AccessRead> reads;
  for (uint64_t k = 0; k < 4; ++k) {
    PlanDlioReads(AccessKind::kTfRecord, l, SampleExtent{0, k * framed, framed}, 65536, &reads);
    per_file += reads.size();
  }
  ASSERT_EQ(per_file, 7u);  // fills at 0, 64, 128, 192 KiB and the short one at 256 KiB, its pread of 0, the end's
  LatencyFs lfs(c.src(), c.mnt(), 2);
  ASSERT_TRUE(lfs.mounted()) << test::ReadFile(c.mnt() + ".log");
  // (--cache keep: v3.0's default drop before every epoch evicts each file, an open each between the epochs.)
  const std::string run = "run -w resnet50_h100 --param reader.batch_size=2 --cache keep "
                          "--param reader.read_threads=2 --param train.computation_time=0.001 -n 1 ";
  // With tf.data's shuffle buffer the records come out of order, the fills stay the stream's: the same requests.
  for (const std::string shuffle : {"", " --param reader.sample_shuffle=seed --param reader.shuffle_size=3"}) {
    SCOPED_TRACE(shuffle);
    Counters at[3];
    at[0] = lfs.Read();
    for (int epochs : {1, 2}) {
      const std::string out = c.dir / ("r" + std::to_string(epochs) + (shuffle.empty() ? "" : "s"));
      auto m = RunMeasured(lfs,
                           Cat(run, params, shuffle, " --data-dir ", c.mnt(),
                               " --param train.epochs=", std::to_string(epochs), " --results-dir ", out),
                           2);
      ASSERT_TRUE(m.code == 0 || m.code == 3) << m.output;
      EXPECT_EQ(m.training.max_in_flight, 2u);  // read_threads streams, the next file of each after its last
      const auto s = ReadJson(out + "/summary.json")["feedrate"];
      EXPECT_EQ(s["access_pattern"], "dlio") << s["access_pattern_reason"];
      EXPECT_EQ(s["sample_check"], "tfrecord: length and payload CRC-32C");
      // prefetch(2) and what tf.data reads ahead of it: 3 x 2 files x 2 records (and 3 shuffled), in batches of 2
      EXPECT_EQ(s["batches_in_flight_per_accelerator"], shuffle.empty() ? 8 : 10);
      at[epochs] = lfs.Read();
    }
    EXPECT_EQ((at[2].opens - at[1].opens) - (at[1].opens - at[0].opens), 8u);  // one per file, not per record
    EXPECT_EQ((at[2].reads - at[1].reads) - (at[1].reads - at[0].reads), 8 * per_file);
  }
  // One record a file: six streams of an accelerator wait at once (the hold releases them only then).
  const std::string one = "--param dataset.num_files_train=64 --param dataset.num_samples_per_file=1 "
                          "--param dataset.record_length_bytes=65536 --param dataset.record_length_bytes_stdev=0";
  ASSERT_EQ(Sh(Feedrate("datagen -w resnet50_h100 --data-dir " + c.src() + "/one " + one)).code, 0);
  auto m = RunMeasured(lfs, run + one + " --data-dir " + c.mnt() + "/one --param train.epochs=1 --results-dir " +
                                (c.dir / "one"), 6);
  ASSERT_TRUE(m.code == 0 || m.code == 3) << m.output;
  EXPECT_EQ(m.training.max_in_flight, 6u);
}

// 64 accelerators x 2 workers on the 2-core client: 128 requests in flight, each lane one at a time (latencyfs raises
// FUSE's max_background, which io_uring's asynchronous direct reads are counted against; docs/engines.md). The hold
// makes it independent of timing: replies wait until 128 are in flight, which only a client keeping 128 reaches
// (one keeping fewer stays below until the hold's 30 s end).
TEST(Latency, RequestsInFlightAreReadThreadsPerAcceleratorAtAnyCount) {
  LatencyCase c;
  // 2 MiB samples (about 20 requests each under upstream's np.load) and 2 steps of 2 per accelerator: every lane has
  // ~0.8 s of requests left when the hold is armed, whatever the time the test takes to arm it. Upstream's rules:
  // v3.0's pre-warm would read each lane's first batch (4 requests a sample, whole files) right after the
  // training_start event, and an accelerator done with it waits at the epoch's barrier, where no later hold can count
  // its lanes (the same engine and lanes; Latency.EachSampleIsReadAsDliosReaderReadsIt counts v3.0's in flight).
  const std::string shape = "--param dataset.record_length_bytes=2097152 --param dataset.record_length_bytes_stdev=0";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + c.src() + " --param dataset.num_files_train=256 " + shape)).code, 0);
  LatencyFs lfs(c.src(), c.mnt(), 20);
  ASSERT_TRUE(lfs.mounted()) << test::ReadFile(c.mnt() + ".log");
  for (int n : {1, 64}) {
    SCOPED_TRACE(n);
    auto m = RunMeasured(lfs,
                         "run -w unet3d_h100 --data-dir " + c.mnt() + " " + shape +
                             " --param dataset.num_files_train=" + std::to_string(4 * n) +
                             " --param reader.batch_size=2 --param reader.read_threads=2"
                             " --param train.epochs=1 --param train.computation_time=0.001"
                             " --param feedrate.access_pattern=dlio --rules upstream -n " +
                             std::to_string(n) + " --results-dir " + (c.dir / ("r" + std::to_string(n))),
                         2u * static_cast<uint64_t>(n));
    ASSERT_EQ(m.code == 0 || m.code == 3, true) << m.output;  // 3: the AU bar missed (it is, by far)
    EXPECT_EQ(m.training.max_in_flight, 2u * static_cast<uint64_t>(n));
  }
}

// AU = min(1, compute x workers / (batch x time per sample)) when every request waits the same: 14 requests of
// 10 ms for a 64 KiB npz sample (1 open, 13 reads). A generous bound (10 points); the sanitizer stages of .ci/run
// leave it out (there the client's own cost is part of the time per sample).
TEST(Latency, AuFollowsTheRequestArithmetic) {
  LatencyCase c;
  const std::string params = "--param dataset.num_files_train=64 --param dataset.record_length_bytes=65536 "
                             "--param dataset.record_length_bytes_stdev=0";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + c.src() + " " + params)).code, 0);
  const uint64_t requests = 1 + PlannedReads(DataFormat::kNpz, c.src() + "/train/img_00_of_64.npz", "npz", DlioEdition::kV3_0);
  LatencyFs lfs(c.src(), c.mnt(), 10);
  ASSERT_TRUE(lfs.mounted()) << test::ReadFile(c.mnt() + ".log");
  const double compute = 0.1, batch = 4, workers = 2, per_sample = 0.010 * static_cast<double>(requests);
  auto m = RunMeasured(lfs, "run -w unet3d_h100 --data-dir " + c.mnt() + " " + params +
                                " --param reader.batch_size=4 --param reader.read_threads=2 --param train.epochs=1"
                                " --param train.computation_time=0.1 --param feedrate.access_pattern=dlio -n 1 --results-dir " + (c.dir / "r"));
  ASSERT_TRUE(m.code == 0 || m.code == 3) << m.output;
  const std::string engine = ReadJson(c.dir / "r/summary.json")["feedrate"]["engine_detail"];
  EXPECT_EQ(engine.find("reads straight to io-wq"), std::string::npos) << engine;  // direct_io: inline reads
  const double expect = 100 * std::min(1.0, compute * workers / (batch * per_sample));
  EXPECT_NEAR(m.au_pct, expect, 10) << "requests per sample " << requests;
}

// feedrate.decode on images under the DLIO pattern: each sample decoded in its DataLoader worker's sequence (before
// that worker's next sample, as DLIO's PIL reader decodes), with the same requests as without decoding; a file
// that does not decode stops the run naming it.
TEST(Latency, ImageDecodeIsMadeInEachWorkersSequence) {
  LatencyCase c;
  const std::string params = "--param dataset.format=jpeg --param dataset.num_files_train=16 "
                             "--param dataset.record_length_bytes=65536 --param dataset.record_length_bytes_stdev=0";
  auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + c.src() + " " + params + " --rules upstream"));
  ASSERT_EQ(gen.code, 0) << gen.output;
  const uint64_t per_sample = PlannedReads(DataFormat::kJpeg, c.src() + "/train/img_00_of_16.jpeg", "jpeg", DlioEdition::kUpstream);
  LatencyFs lfs(c.src(), c.mnt(), 2);
  ASSERT_TRUE(lfs.mounted()) << test::ReadFile(c.mnt() + ".log");
  const std::string run = "run -w unet3d_h100 --data-dir " + c.mnt() + " " + params +
                          " --param reader.batch_size=2 --param reader.read_threads=2"
                          " --param train.computation_time=0.001 --param feedrate.access_pattern=dlio"
                          " --param feedrate.decode=true --rules upstream -n 1 --results-dir ";
  // One epoch's requests: a 2-epoch run's less a 1-epoch run's (the same set-up in both, and no race with the
  // training_start event).
  Counters at[3];
  at[0] = lfs.Read();
  Measured m;
  for (int epochs : {1, 2}) {
    m = RunMeasured(lfs, run + (c.dir / ("r" + std::to_string(epochs))) + " --param train.epochs=" + std::to_string(epochs));
    ASSERT_TRUE(m.code == 0 || m.code == 3) << m.output;
    at[epochs] = lfs.Read();
  }
  const auto f = ReadJson(c.dir / "r2/summary.json")["feedrate"];
  EXPECT_EQ(f["access_pattern"], "dlio") << f["access_pattern_reason"];
  EXPECT_NE(f["sample_check"].get<std::string>().find("each in its DataLoader worker's sequence"), std::string::npos)
      << f["sample_check"];
  EXPECT_GT(f["sample_check_seconds"].get<double>(), 0.0);
  EXPECT_EQ((at[2].opens - at[1].opens) - (at[1].opens - at[0].opens), 16u);  // one per sample
  EXPECT_EQ((at[2].reads - at[1].reads) - (at[1].reads - at[0].reads), 16 * per_sample);
  EXPECT_EQ(m.training.max_in_flight, 2u);
  // The lanes' image buffers are the run's read buffers (2 workers, each at least the largest image).
  EXPECT_GE(f["buffer_bytes_per_rank"].get<double>(), 2 * 65536.0);
  // Set-up opens no image to decode it (DLIO opens none before training): a decoding run makes the requests of one
  // that does not decode, set-up included.
  const Counters plain0 = lfs.Read();
  auto plain = RunMeasured(lfs, "run -w unet3d_h100 --data-dir " + c.mnt() + " " + params +
                                    " --param reader.batch_size=2 --param reader.read_threads=2 --param train.epochs=1"
                                    " --param train.computation_time=0.001 --param feedrate.access_pattern=dlio -n 1"
                                    " --rules upstream --results-dir " + (c.dir / "p"));
  ASSERT_TRUE(plain.code == 0 || plain.code == 3) << plain.output;
  const Counters plain1 = lfs.Read();
  EXPECT_EQ(plain1.opens - plain0.opens, at[1].opens - at[0].opens);
  EXPECT_EQ(plain1.reads - plain0.reads, at[1].reads - at[0].reads);

  // Images larger than a transfer: decoded in the lanes all the same (no retained batches, no coalesced reads):
  // the same requests as the 1-epoch run above.
  const Counters before = lfs.Read();
  auto big = RunMeasured(lfs, run + (c.dir / "t") + " --param train.epochs=1 --param reader.transfer_size=16384");
  ASSERT_TRUE(big.code == 0 || big.code == 3) << big.output;
  const Counters after = lfs.Read();
  const auto t = ReadJson(c.dir / "t/summary.json")["feedrate"];
  EXPECT_EQ(t["access_pattern"], "dlio") << t["access_pattern_reason"];
  EXPECT_EQ(after.reads - before.reads, at[1].reads - at[0].reads);
  EXPECT_EQ(after.opens - before.opens, at[1].opens - at[0].opens);

  const std::string cut = c.src() + "/train/img_03_of_16.jpeg";
  const std::string bytes = test::ReadFile(cut);
  test::WriteFile(cut, bytes.substr(0, bytes.size() / 2));
  auto broken = RunMeasured(lfs, run + (c.dir / "b") + " --param train.epochs=1");
  EXPECT_EQ(broken.code, 2) << broken.output;
  EXPECT_NE(broken.output.find("img_03_of_16.jpeg: image decode failed: JPEG:"), std::string::npos) << broken.output;
}

// reader.preprocess_time: each DataLoader worker waits it after each sample's reads, before its next (DLIO's
// FormatReader.preprocess sleeps there). 4 samples a batch x 50 ms a worker, 2 workers, 50 ms compute: AU = 50%,
// at 1 accelerator and at 16 (32 workers' waits at once on a 2-CPU client: none of them holds a thread), where the
// same run without it is storage-bound by nothing. A run that reads coalesced says it does not make the wait.
TEST(Latency, PreprocessTimeIsAWaitPerSampleInEachWorker) {
  test::TempDir dir("/var/tmp");
  const std::string params = "--param dataset.record_length_bytes=65536 --param dataset.record_length_bytes_stdev=0";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + (dir / "d") + " --param dataset.num_files_train=512 " + params)).code, 0);
  auto run = [&](int n, const std::string& extra) {
    const std::string out = dir / ("r" + std::to_string(n) + std::to_string(extra.size()));
    auto r = Sh(Feedrate("run -w unet3d_h100 --data-dir " + (dir / "d") + " " + params + " --param dataset.num_files_train=" +
                         std::to_string(32 * n) + " --param reader.batch_size=4 --param reader.read_threads=2"
                         " --param train.epochs=1 --param train.computation_time=0.05 --cache keep -n " + std::to_string(n) +
                         " " + extra + " --results-dir " + out + " 2>&1"));
    EXPECT_TRUE(r.code == 0 || r.code == 3) << r.output;
    return std::make_pair(ReadJson(out + "/summary.json"), r.output);
  };
  for (int n : {1, 16}) {
    SCOPED_TRACE(n);
    auto [with, out] = run(n, "--param reader.preprocess_time=0.05 --param feedrate.access_pattern=dlio");
    EXPECT_EQ(with["feedrate"]["access_pattern"], "dlio") << out;
    EXPECT_NEAR(with["metric"]["train_au_mean_percentage"].get<double>(), 50, 10) << out;
    EXPECT_EQ(out.find("preprocess_time is not applied"), std::string::npos) << out;
  }
  EXPECT_GT(run(1, "--param feedrate.access_pattern=dlio").first["metric"]["train_au_mean_percentage"].get<double>(), 90);
  auto [coalesced, out] = run(1, "--param reader.preprocess_time=0.05 --param feedrate.access_pattern=coalesced");
  EXPECT_NE(out.find("reader.preprocess_time is not applied"), std::string::npos) << out;
}

// With the client's page cache on, set-up's index reads (npz: each file's zip directory and header) leave nothing
// that serves training (DLIO reads nothing before training): training makes as many read requests as a run that
// evicts the dataset after set-up (--cache drop-once). Before set-up cleaned up after itself its pages and readahead
// served part of every sample (448 reads against 640 for 64 files of 512 KiB; AU 99% against DLIO's 68%).
TEST(Latency, SetUpLeavesNothingInThePageCacheForTraining) {
  LatencyCase c;
  const std::string params = "--param dataset.num_files_train=32 --param dataset.record_length_bytes=524288 "
                             "--param dataset.record_length_bytes_stdev=0";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + c.src() + " " + params)).code, 0);
  uint64_t reads[2] = {0, 0};
  for (int drop : {0, 1}) {
    SCOPED_TRACE(drop ? "--cache drop-once" : "--cache keep");
    const std::string mnt = c.dir / ("mnt" + std::to_string(drop));  // a fresh mount: a cold page cache
    LatencyFs lfs(c.src(), mnt, 1, true);
    ASSERT_TRUE(lfs.mounted()) << test::ReadFile(mnt + ".log");
    auto m =
        RunMeasured(lfs, Cat("run -w unet3d_h100 --data-dir ", mnt, " ", params,
                             " --param reader.batch_size=4 --param reader.read_threads=2 --param train.epochs=1"
                             " --param train.computation_time=0.001 --param feedrate.access_pattern=dlio -n 1"
                             " --rules upstream --cache ",
                             drop ? "drop-once" : "keep", " --results-dir ", c.dir / ("r" + std::to_string(drop))));
    ASSERT_TRUE(m.code == 0 || m.code == 3) << m.output;
    reads[drop] = m.training.reads;
    // A FUSE mount read through the page cache: the reads go straight to io-wq (DlioEngineOptions::async_reads).
    const std::string engine = ReadJson(c.dir / ("r" + std::to_string(drop)) + "/summary.json")["feedrate"]["engine_detail"];
    EXPECT_NE(engine.find("reads straight to io-wq"), std::string::npos) << engine;
  }
  EXPECT_GT(reads[1], 32u * 4);  // a 512 KiB file is more than 4 requests through 128 KiB readahead
  EXPECT_NEAR(static_cast<double>(reads[0]), static_cast<double>(reads[1]), 0.03 * static_cast<double>(reads[1]));
}

// Storage that stops answering (latencyfs withholds every reply): SIGTERM ends the run's wait for its batch, and the
// run leaves its "interrupted" record at once, not when the storage answers (the hold's 30 s), with the DLIO engine
// and with a thread-per-request one. The process exits only once the kernel has its held requests back (a FUSE
// request already in the daemon's hands cannot be abandoned by any client), so the test lets the hold go after.
TEST(Latency, AnInterruptEndsAWaitOnStorageThatStoppedAnswering) {
  LatencyCase c;
  const std::string params = "--param dataset.num_files_train=16 --param dataset.record_length_bytes=65536 "
                             "--param dataset.record_length_bytes_stdev=0";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + c.src() + " " + params)).code, 0);
  LatencyFs lfs(c.src(), c.mnt(), 1);
  ASSERT_TRUE(lfs.mounted()) << test::ReadFile(c.mnt() + ".log");
  for (const std::string engine : {"", "--engine posix"}) {
    SCOPED_TRACE(engine);
    const std::string results = c.dir / (engine.empty() ? "dlio" : "posix");
    SignalPlan p;
    p.command =
        Feedrate(Cat("run -w unet3d_h100 --data-dir ", c.mnt(), " ", params,
                     " --param reader.batch_size=2 --param train.epochs=1000 --param train.computation_time=0.001"
                     " -n 1 --json-events --cache keep ",
                     engine, " --results-dir ", results));
    p.log = results + ".log";
    p.marker = "\"event\":\"training_start\"";
    // Arm the hold, then wait until a request is held: the run is about to wait, or waiting, for storage that is silent.
    p.before = "stat " + c.mnt() + "/.latencyfs_hold_1000000 >/dev/null 2>&1; n=0; until grep -q '\"in_flight\": [1-9]' " +
               c.mnt() + "/.latencyfs_stats; do n=$((n+1)); [ $n -gt 1000 ] && break; sleep 0.01; done";
    p.until = "grep -q '\"status\": \"interrupted\"' " + results + "/summary.json 2>/dev/null";
    p.after = "stat " + c.mnt() + "/.latencyfs_release >/dev/null 2>&1";
    const Signalled r = SignalOnMarker(p);
    EXPECT_EQ(r.code, 130) << r.output;
    EXPECT_GE(r.seconds, 0) << r.output;
    EXPECT_LT(r.seconds, 10) << "the interrupt waited for the storage";
  }
}

}  // namespace
}  // namespace feedrate::it
