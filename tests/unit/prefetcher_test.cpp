// PosixEngine + Prefetcher on real files: bytes counted, retained contents, truncation errors, many threads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

#include "loader/format/tfrecord.h"
#include "loader/io/engine_factory.h"
#include "loader/io/fault_injection.h"
#include "loader/io/posix_engine.h"
#include "loader/pipeline/prefetcher.h"
#include "test_util.h"

namespace feedrate {
namespace {

EngineOptions Opts(size_t threads, uint64_t transfer_size, size_t queue_capacity) {
  EngineOptions o;
  o.threads = threads;
  o.transfer_size = transfer_size;
  o.queue_capacity = queue_capacity;
  return o;
}

// A POSIX engine that counts the requests queued to it.
class CountingEngine final : public IoEngine {
 public:
  explicit CountingEngine(const FileTable& files) : inner_(files, Opts(2, 65536, 64)) {}
  const char* name() const override { return "counting"; }
  using IoEngine::Submit;
  void Submit(std::span<const ReadRequest> r) override {
    submitted_.fetch_add(r.size());
    inner_.Submit(r);
  }
  uint64_t buffer_bytes() const override { return inner_.buffer_bytes(); }
  EngineCounters counters() const override { return inner_.counters(); }
  uint64_t submitted() const { return submitted_.load(); }

 private:
  PosixEngine inner_;
  std::atomic<uint64_t> submitted_{0};
};

struct Files {
  test::TempDir dir;
  std::vector<std::string> paths;
  SampleTable extents;
  // `base`: where the files go (/var/tmp for O_DIRECT, which tmpfs refuses before Linux 6.6).
  Files(int n, uint64_t size, const std::string& base = std::filesystem::temp_directory_path().string())
      : dir(base), extents(static_cast<size_t>(n), 1) {
    for (int i = 0; i < n; ++i) {
      std::string content(size + 100, '\0');
      for (size_t k = 0; k < content.size(); ++k) content[k] = static_cast<char>((k * 7 + static_cast<size_t>(i)) & 0xff);
      paths.push_back(dir / ("f" + std::to_string(i)));
      test::WriteFile(paths.back(), content);
      extents.SetFile(static_cast<uint32_t>(i), FileSamples{100, 0, size, -1});
    }
  }
};

TEST(Prefetcher, ReadsEveryByteOfEveryBatchInOrder) {
  Files f(8, 300000);
  auto table = FileTable::Create(f.paths, false);
  ASSERT_TRUE(table.ok());
  PosixEngine engine(*table, Opts(3, 65536, 64));
  Prefetcher p(engine, f.extents, 2, 3, false);
  std::vector<uint64_t> ids(8);
  std::iota(ids.begin(), ids.end(), 0);
  for (int epoch = 0; epoch < 3; ++epoch) {
    p.StartEpoch(&ids, 4);
    for (uint64_t s = 0; s < 4; ++s) {
      BatchResult r = p.WaitBatch(s);
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      EXPECT_EQ(r.bytes, 600000u);
    }
  }
}

// (Byte-for-byte content of reads into a destination is checked by engine_test's EngineBytes.)
// WaitBatch only waits; Refill queues the batch the consumed slot frees. A caller that skips Refill still gets
// every batch (WaitBatch queues what is missing), only without reading ahead.
TEST(Prefetcher, RefillQueuesTheNextBatchAndWaitBatchOnlyWaits) {
  Files f(8, 1000);
  auto table = FileTable::Create(f.paths, false);
  ASSERT_TRUE(table.ok());
  CountingEngine engine(*table);
  Prefetcher p(engine, f.extents, 2, 2, false);
  std::vector<uint64_t> ids(8);
  std::iota(ids.begin(), ids.end(), 0);
  p.StartEpoch(&ids, 4);
  EXPECT_EQ(engine.submitted(), 4u);  // two batches of two
  ASSERT_TRUE(p.WaitBatch(0).status.ok());
  EXPECT_EQ(engine.submitted(), 4u);
  p.Refill();
  EXPECT_EQ(engine.submitted(), 6u);  // batch 2 into the slot batch 0 freed
  p.Refill();
  EXPECT_EQ(engine.submitted(), 6u);  // no slot free until WaitBatch(1)
  ASSERT_TRUE(p.WaitBatch(1).status.ok());
  ASSERT_TRUE(p.WaitBatch(2).status.ok());  // no Refill after batch 1: batch 3 is still queued before waiting
  ASSERT_TRUE(p.WaitBatch(3).status.ok());
  EXPECT_EQ(engine.submitted(), 8u);
  p.Refill();
  EXPECT_EQ(engine.submitted(), 8u);  // the epoch has no more batches
}

TEST(Prefetcher, RetainedBatchesReadWholeSamplesIntoSlotMemory) {
  Files f(4, 5000);
  auto table = FileTable::Create(f.paths, true);
  ASSERT_TRUE(table.ok());
  PosixEngine engine(*table, Opts(2, 4096, 64));
  Prefetcher p(engine, f.extents, 2, 1, true);
  EXPECT_EQ(p.retained_bytes(), 10000u);
  std::vector<uint64_t> ids{3, 1, 0, 2};
  p.StartEpoch(&ids, 2);
  for (uint64_t s = 0; s < 2; ++s) {
    BatchResult r = p.WaitBatch(s);
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.bytes, 10000u);
  }
}

TEST(Prefetcher, TruncatedFileReportsPathAndOffset) {
  Files f(4, 200000);
  ASSERT_EQ(::truncate(f.paths[2].c_str(), 150000), 0);
  auto table = FileTable::Create(f.paths, false);
  PosixEngine engine(*table, Opts(2, 65536, 64));
  Prefetcher p(engine, f.extents, 1, 2, false);
  std::vector<uint64_t> ids{0, 1, 2, 3};
  p.StartEpoch(&ids, 4);
  EXPECT_TRUE(p.WaitBatch(0).status.ok());
  EXPECT_TRUE(p.WaitBatch(1).status.ok());
  BatchResult bad = p.WaitBatch(2);
  ASSERT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find(f.paths[2]), std::string::npos) << bad.status.ToString();
  EXPECT_NE(bad.status.message().find("truncated"), std::string::npos);
  EXPECT_NE(bad.status.message().find("offset 150000"), std::string::npos) << bad.status.ToString();
  p.Drain();
}

TEST(Prefetcher, MissingFileIsAnError) {
  Files f(2, 1000);
  std::vector<std::string> paths = f.paths;
  paths[1] += ".gone";
  auto table = FileTable::Create(paths, false);
  PosixEngine engine(*table, Opts(1, 4096, 16));
  Prefetcher p(engine, f.extents, 1, 1, false);
  std::vector<uint64_t> ids{0, 1};
  p.StartEpoch(&ids, 2);
  EXPECT_TRUE(p.WaitBatch(0).status.ok());
  auto r = p.WaitBatch(1);
  EXPECT_NE(r.status.message().find(".gone"), std::string::npos);
  EXPECT_FALSE(FileTable::Create(paths, true).ok());  // keep-open mode fails up front
}

TEST(Prefetcher, ManyAcceleratorsShareOneEngine) {
  Files f(16, 20000);
  auto table = FileTable::Create(f.paths, false);
  PosixEngine engine(*table, Opts(4, 8192, 256));
  std::vector<std::thread> threads;
  std::atomic<uint64_t> total{0};
  for (int a = 0; a < 4; ++a) {
    threads.emplace_back([&, a] {
      Prefetcher p(engine, f.extents, 2, 2, false);
      std::vector<uint64_t> ids;
      for (int k = 0; k < 4; ++k) ids.push_back(static_cast<uint64_t>(a * 4 + k));
      for (int epoch = 0; epoch < 20; ++epoch) {
        p.StartEpoch(&ids, 2);
        for (uint64_t s = 0; s < 2; ++s) total += p.WaitBatch(s).bytes;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(total.load(), 4u * 20 * 4 * 20000);
}

// The residency probe is an instrument: it must not sit in the accelerator's timed wait. The third probe (of the
// request Refill queues after WaitBatch(0)) holds until the test opens a gate after WaitBatch(0) and Refill have
// returned: on the I/O thread it only holds the read it describes; on the accelerator thread Refill could not return
// before the gate's 30 s hang detector gave up, and the test would see that.
std::atomic<int> g_probe_calls{0};
std::atomic<std::thread::id> g_probe_thread{};
std::mutex g_gate_mu;
std::condition_variable g_gate_cv;
bool g_gate_open = false, g_gate_gave_up = false;
Result<Residency> HeldThirdProbe(int fd, uint64_t offset, uint64_t length, ResidencyMethod) {
  EXPECT_GE(fd, 0);
  EXPECT_EQ(offset, 100u);  // Files puts each sample 100 bytes in
  g_probe_thread.store(std::this_thread::get_id());
  if (g_probe_calls.fetch_add(1) == 2) {
    std::unique_lock<std::mutex> l(g_gate_mu);
    g_gate_gave_up = !g_gate_cv.wait_for(l, std::chrono::seconds(30), [] { return g_gate_open; });
  }
  return Residency{length, length / 2};
}

class ResidencyProbeEngines : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Prefetcher, ResidencyProbeEngines, ::testing::Values("posix", "uring"),
                         [](const auto& p) { return std::string(p.param); });

TEST_P(ResidencyProbeEngines, RunOnTheIoThreadOutsideWaitBatch) {
  g_probe_calls = 0;
  Files f(3, 4096);
  auto table = FileTable::Create(f.paths, false);
  ASSERT_TRUE(table.ok());
  auto engine = MakeEngine(*Parse<EngineKind>(GetParam()), *table, Opts(1, 65536, 64));
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Prefetcher p(*engine->engine, f.extents, 1, 2, false, 0, &*table);
  p.set_residency_sampling(1, ResidencyMethod::kCachestat, &HeldThirdProbe);
  {
    std::lock_guard<std::mutex> l(g_gate_mu);
    g_gate_open = g_gate_gave_up = false;
  }
  std::vector<uint64_t> ids{0, 1, 2};
  p.StartEpoch(&ids, 3);
  BatchResult r = p.WaitBatch(0);
  p.Refill();  // queues batch 2, whose probe holds until the gate opens
  {
    std::lock_guard<std::mutex> l(g_gate_mu);
    g_gate_open = true;
  }
  g_gate_cv.notify_all();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(p.WaitBatch(1).status.ok());
  EXPECT_TRUE(p.WaitBatch(2).status.ok());
  EXPECT_EQ(g_probe_calls.load(), 3);
  EXPECT_NE(g_probe_thread.load(), std::this_thread::get_id());
  EXPECT_FALSE(g_gate_gave_up) << "the probe ran inside WaitBatch or Refill";
  const Residency seen = p.TakeResidency();
  EXPECT_EQ(seen.bytes, 3u * 4096);
  EXPECT_EQ(seen.resident_bytes, 3u * 2048);
  EXPECT_EQ(p.TakeResidency().bytes, 0u);  // taken
  EXPECT_EQ(p.probe_failures(), 0u);
}

// TFRecord-shaped files: back-to-back records of a batch are read in coalesced requests and every record's CRC is
// checked in place (buffered and retained); a corrupted record fails its batch naming the record, also when the
// corruption sits inside a coalesced group.
class CoalescedRecords : public ::testing::TestWithParam<bool> {};

TEST_P(CoalescedRecords, ChecksEveryRecordAndCountsEveryByte) {
  const bool retain = GetParam();
  test::TempDir dir;
  const uint64_t n_files = 3, per_file = 12, payload = 1000, framed = payload + kTfRecordOverhead;
  std::vector<std::string> paths;
  SampleTable t(n_files, per_file);
  for (uint64_t f = 0; f < n_files; ++f) {
    std::string file;
    for (uint64_t k = 0; k < per_file; ++k) {
      std::string body(payload, static_cast<char>('a' + (f * per_file + k) % 26));
      char h[kTfRecordHeaderBytes];
      EncodeTfRecordHeader(payload, h);
      uint32_t crc = TfRecordPayloadCrc(body.data(), body.size());
      file += std::string(h, sizeof h) + body + std::string(reinterpret_cast<const char*>(&crc), 4);
    }
    paths.push_back(dir / ("r" + std::to_string(f) + ".tfrecord"));
    test::WriteFile(paths.back(), file);
    t.SetFile(static_cast<uint32_t>(f), FileSamples{0, framed, framed, -1});
  }
  t.check = SampleCheck::kTfRecordCrc;
  auto table = FileTable::Create(paths, FileOpenMode::kStream);
  ASSERT_TRUE(table.ok());
  PosixEngine engine(*table, Opts(2, 8192, 64));
  // Batches of 6 records in file order, coalesced up to 5000 bytes: groups of 4 and 2 records per batch.
  Prefetcher p(engine, t, 6, 2, retain, 0, &*table, 5000);
  std::vector<uint64_t> ids(n_files * per_file);
  std::iota(ids.begin(), ids.end(), 0);
  p.StartEpoch(&ids, 6);
  for (uint64_t s = 0; s < 6; ++s) {
    BatchResult r = p.WaitBatch(s);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.bytes, 6 * framed);
  }
  // Corrupt record 5 of file 1 (global sample 17: the middle of a coalesced group of batch 2).
  std::string bytes = test::ReadFile(paths[1]);
  bytes[5 * framed + kTfRecordHeaderBytes + 10] ^= 1;
  test::WriteFile(paths[1], bytes);
  p.StartEpoch(&ids, 6);
  Status seen;
  for (uint64_t s = 0; s < 6; ++s) {
    BatchResult r = p.WaitBatch(s);
    if (!r.status.ok()) {
      seen = r.status;
      EXPECT_EQ(s, 2u);
      p.Drain();
      break;
    }
  }
  ASSERT_FALSE(seen.ok());
  EXPECT_NE(seen.message().find("r1.tfrecord: record 5 at offset " + std::to_string(5 * framed) + ": payload CRC mismatch"),
            std::string::npos)
      << seen.message();
}

INSTANTIATE_TEST_SUITE_P(Prefetcher, CoalescedRecords, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? std::string("retained") : std::string("in_place"); });

// A read that never completes (here: held 3 s by a delay rule) ends the wait after the completion timeout with an
// error naming the read, instead of blocking the accelerator forever; the prefetcher then says it lost a read.
TEST(Prefetcher, LostCompletionEndsTheWaitNamingTheRead) {
  Files f(4, 100000);
  auto table = FileTable::Create(f.paths, false);
  ASSERT_TRUE(table.ok());
  FaultInjector faults(*ParseFaultPlan("delay:ms=3000,count=1,file=f2"));
  faults.BindFiles(*table);
  EngineOptions o = Opts(2, 65536, 64);
  o.faults = &faults;
  auto engine = std::make_unique<PosixEngine>(*table, o);
  Prefetcher p(*engine, f.extents, 2, 1, false, 0, &*table);
  p.set_completion_timeout(300'000'000);
  std::vector<uint64_t> ids = {0, 1, 2, 3};
  p.StartEpoch(&ids, 2);
  ASSERT_TRUE(p.WaitBatch(0).status.ok());
  const auto t0 = std::chrono::steady_clock::now();
  BatchResult r = p.WaitBatch(1);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.status.ok());
  EXPECT_LT(waited, 2.5);  // the timeout (0.3 s), not the 3 s the read takes
  EXPECT_EQ(r.bytes, 100000u) << "the other read of the batch completed";
  EXPECT_NE(r.status.message().find("a read of " + f.paths[2] + " at offset 100 (100000 bytes, batch 1) has not "
                                    "completed after 0.3 s (--io-timeout)"),
            std::string::npos)
      << r.status.message();
  EXPECT_TRUE(p.lost());
  p.Drain();       // returns at once once a read is lost
  engine.reset();  // joins the I/O threads: the held read completes into the prefetcher, which is still alive
}

// A batch whose reads keep completing, each well within the timeout, is not lost even when the whole batch takes
// longer than the timeout: the timeout bounds a wait without progress, not a batch.
TEST(Prefetcher, SlowButProgressingBatchIsNotLost) {
  Files f(12, 4096);
  auto table = FileTable::Create(f.paths, false);
  ASSERT_TRUE(table.ok());
  FaultInjector faults(*ParseFaultPlan("delay:ms=100"));
  faults.BindFiles(*table);
  EngineOptions o = Opts(1, 65536, 64);
  o.faults = &faults;
  PosixEngine engine(*table, o);
  Prefetcher p(engine, f.extents, 12, 1, false, 0, &*table);
  p.set_completion_timeout(800'000'000);  // the batch takes 12 x 100 ms on one I/O thread
  std::vector<uint64_t> ids(12);
  std::iota(ids.begin(), ids.end(), 0);
  p.StartEpoch(&ids, 1);
  BatchResult r = p.WaitBatch(0);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.bytes, 12u * 4096);
  EXPECT_FALSE(p.lost());
}


// A staging over host memory that keeps each slot's "device" copy, to check what the prefetcher hands it and when.
class RecordingStaging final : public BatchStaging {
 public:
  RecordingStaging(uint64_t slots, uint64_t bytes) : bytes_(bytes) {
    for (uint64_t i = 0; i < slots; ++i) {
      host_.emplace_back(bytes, 4096);
      device_.emplace_back(bytes, '\0');
      started_.push_back(std::make_unique<std::atomic<int>>(0));
    }
  }
  uint64_t slots() const override { return host_.size(); }
  uint64_t slot_bytes() const override { return bytes_; }
  char* slot(uint64_t i) const override { return host_[i].data(); }
  bool copies() const override { return true; }
  Status StartCopy(uint64_t i, std::span<const CopyRange> ranges) override {
    if (fail_copy) return Status::IoError("cuMemcpyHtoDAsync: CUDA_ERROR_ILLEGAL_ADDRESS (700)");
    for (const CopyRange& r : ranges) std::memcpy(device_[i].data() + r.offset, host_[i].data() + r.offset, r.length);
    started_[i]->fetch_add(1);
    return Status::Ok();
  }
  Status FinishCopy(uint64_t i) override {
    if (started_[i]->exchange(0) != 1) return Status::IoError("FinishCopy without exactly one StartCopy");
    ++finished;
    return Status::Ok();
  }
  const std::string& device(uint64_t i) const { return device_[i]; }
  std::atomic<bool> fail_copy{false};
  uint64_t finished = 0;

 private:
  uint64_t bytes_;
  mutable std::vector<AlignedBuffer> host_;  // the interface hands out writable slots from a const object
  std::vector<std::string> device_;
  std::vector<std::unique_ptr<std::atomic<int>>> started_;
};

// Each batch is copied once, after all its reads, before WaitBatch hands it out; the copy holds the samples' bytes.
TEST(Prefetcher, StagingCopiesEachBatchOnceAfterItsReads) {
  Files f(6, 5000);
  auto table = FileTable::Create(f.paths, false);
  ASSERT_TRUE(table.ok());
  PosixEngine engine(*table, Opts(3, 4096, 64));
  Prefetcher p(engine, f.extents, 2, 2, true);
  RecordingStaging staging(2, Prefetcher::SlotBytes(f.extents, 2, 0));
  ASSERT_TRUE(p.set_staging(&staging).ok());
  std::vector<uint64_t> ids{5, 0, 3, 1, 4, 2};
  for (int epoch = 0; epoch < 2; ++epoch) {
    p.StartEpoch(&ids, 3);
    for (uint64_t s = 0; s < 3; ++s) {
      BatchResult r = p.WaitBatch(s);
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      EXPECT_EQ(r.bytes, 10000u);
      for (uint64_t k = 0; k < 2; ++k) {  // sample ids[2s+k] sits at k * 5000 in the slot's copy
        const uint64_t file = ids[2 * s + k];
        const std::string& dev = staging.device(s % 2);
        for (size_t b = 0; b < 5000; b += 997) {
          ASSERT_EQ(static_cast<unsigned char>(dev[k * 5000 + b]), ((100 + b) * 7 + file) & 0xff) << "step " << s;
        }
      }
      p.Refill();
    }
  }
  EXPECT_EQ(staging.finished, 6u);
}

// Whole Parquet row groups read in DLIO's contiguous order: only a group's first row reads (its span), so a slot
// holds the batch's reads packed, room for MaxReadsPerBatch of them, not a batch of spans; each copy holds its span.
TEST(Prefetcher, WholeRowGroupReadsArePackedInSlotsSizedForThem) {
  Files f(1, 12000);
  auto table = FileTable::Create(f.paths, false);
  ASSERT_TRUE(table.ok());
  SampleTable groups(1, 16);
  groups.SetRowGroups(0, {{0, 4, 100, 3000}, {4, 4, 3100, 3000}, {8, 4, 6100, 3000}, {12, 4, 9100, 3000}}, true);
  const uint64_t reads = groups.MaxReadsPerBatch(6, true);
  EXPECT_EQ(reads, 2u);  // 6 consecutive rows hold at most 2 group starts
  EXPECT_EQ(groups.MaxReadsPerBatch(6, false), 6u);  // a shuffled batch may hold 6
  PosixEngine engine(*table, Opts(2, 4096, 64));
  Prefetcher p(engine, groups, 6, 1, true, 0, nullptr, 0, reads);
  EXPECT_EQ(p.retained_bytes(), 6000u);  // a batch of spans would be 18000
  RecordingStaging staging(1, Prefetcher::SlotBytes(groups, reads, 0));
  ASSERT_TRUE(p.set_staging(&staging).ok());
  const SampleSequence ids = SampleSequence::Range(0, 12);
  p.StartEpoch(&ids, 2);
  for (uint64_t s = 0; s < 2; ++s) {
    BatchResult r = p.WaitBatch(s);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.bytes, s == 0 ? 6000u : 3000u);  // rows 0-5: groups 0 and 1; rows 6-11: group 2
    const std::vector<uint64_t> spans = s == 0 ? std::vector<uint64_t>{100, 3100} : std::vector<uint64_t>{6100};
    for (size_t k = 0; k < spans.size(); ++k) {  // the k-th read of the batch sits at k * 3000 in the copy
      for (size_t b = 0; b < 3000; b += 331) {
        ASSERT_EQ(static_cast<unsigned char>(staging.device(0)[k * 3000 + b]), ((spans[k] + b) * 7) & 0xff) << s << " " << k;
      }
    }
    p.Refill();
  }
  // A slot sized for fewer reads than a batch makes fails that batch by name; nothing lands outside the slot.
  Prefetcher small(engine, groups, 6, 1, true, 0, nullptr, 0, 1);
  small.StartEpoch(&ids, 1);
  BatchResult r = small.WaitBatch(0);
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("retained slot"), std::string::npos) << r.status.message();
}

// With O_DIRECT the reads land as aligned windows; the copy moves each sample's own bytes, from its offset inside
// its window (a sample at file offset 100 sits 100 bytes into its stride), and nothing of the window around it.
TEST(Prefetcher, StagingCopiesTheSamplesNotTheirDirectWindows) {
  Files f(4, 5000, "/var/tmp");
  auto table = FileTable::Create(f.paths, false, O_DIRECT);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EngineOptions o = Opts(2, 16384, 64);
  o.odirect = true;
  o.direct_align = 4096;
  PosixEngine engine(*table, o);
  Prefetcher p(engine, f.extents, 2, 1, true, 4096);
  const uint64_t stride = Prefetcher::SlotBytes(f.extents, 1, 4096);
  RecordingStaging staging(1, Prefetcher::SlotBytes(f.extents, 2, 4096));
  ASSERT_TRUE(p.set_staging(&staging).ok());
  std::vector<uint64_t> ids{3, 1, 0, 2};
  p.StartEpoch(&ids, 2);
  for (uint64_t s = 0; s < 2; ++s) {
    BatchResult r = p.WaitBatch(s);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    const std::string& dev = staging.device(0);
    for (uint64_t k = 0; k < 2; ++k) {
      const uint64_t file = ids[2 * s + k], at = k * stride + 100;
      for (size_t b = 0; b < 5000; ++b) {
        ASSERT_EQ(static_cast<unsigned char>(dev[at + b]), ((100 + b) * 7 + file) & 0xff) << "step " << s << " byte " << b;
      }
      for (size_t b = 0; b < 100; ++b) ASSERT_EQ(dev[k * stride + b], '\0') << "the window's head was copied";
      ASSERT_EQ(dev[at + 5000], '\0') << "the window's tail was copied";
    }
    p.Refill();
  }
}

TEST(Prefetcher, StagingCopiesNoFailedBatchAndReportsACopyThatFails) {
  Files f(4, 5000);
  ASSERT_EQ(::truncate(f.paths[1].c_str(), 3000), 0);
  auto table = FileTable::Create(f.paths, false);
  PosixEngine engine(*table, Opts(2, 4096, 64));
  Prefetcher p(engine, f.extents, 1, 1, true);
  RecordingStaging staging(1, Prefetcher::SlotBytes(f.extents, 1, 0));
  ASSERT_TRUE(p.set_staging(&staging).ok());
  std::vector<uint64_t> ids{0, 1, 2, 3};
  p.StartEpoch(&ids, 4);
  EXPECT_TRUE(p.WaitBatch(0).status.ok());
  p.Refill();
  BatchResult bad = p.WaitBatch(1);  // the truncated file: its batch is never copied (FinishCopy not called)
  EXPECT_NE(bad.status.message().find(f.paths[1]), std::string::npos) << bad.status.ToString();
  EXPECT_EQ(staging.finished, 1u);
  p.Drain();
  staging.fail_copy = true;
  p.StartEpoch(&ids, 1);
  BatchResult failed = p.WaitBatch(0);
  EXPECT_NE(failed.status.message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << failed.status.ToString();
  p.Drain();
}

TEST(Prefetcher, StagingMustMatchTheSlots) {
  Files f(2, 5000);
  auto table = FileTable::Create(f.paths, false);
  PosixEngine engine(*table, Opts(1, 4096, 16));
  Prefetcher plain(engine, f.extents, 1, 2, false);
  RecordingStaging fits(2, 5000), small(2, 4000), few(1, 5000);
  EXPECT_FALSE(plain.set_staging(&fits).ok());  // not retained
  Prefetcher p(engine, f.extents, 1, 2, true);
  EXPECT_FALSE(p.set_staging(&small).ok());
  EXPECT_FALSE(p.set_staging(&few).ok());
  EXPECT_TRUE(p.set_staging(&fits).ok());
}

}  // namespace
}  // namespace feedrate
