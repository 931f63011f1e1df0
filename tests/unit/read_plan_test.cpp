// The read plan as a pure function: the pattern and why, the engine, its workers, threads and depths, and the notes,
// from the workload, the run's options and set-up's facts (no file, no MPI).
#include "emulator/run/read_plan.h"
#include "loader/format/numpy_learn.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace feedrate {
namespace {

WorkloadConfig Load(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return LoadWorkload(name, overrides);
}

RunOptions Accelerators(uint64_t n) {
  RunOptions o;
  o.accelerators = n;
  return o;
}

// A disk on a host of `cpus` CPUs and 64 GiB available; samples of 1 MiB (one transfer).
ReadFacts Disk(size_t cpus = 2) {
  ReadFacts f;
  f.cpus = cpus;
  f.max_sample = 1 << 20;
  f.available_bytes = 64.0 * (1 << 30);
  f.available_what = "MemAvailable (64.00 GiB)";
  return f;
}

bool Says(const ReadPlan& p, const std::string& text) {
  return std::any_of(p.warnings.begin(), p.warnings.end(), [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

TEST(ReadPlan, DefaultRunReplaysTheEditionsReaderWithAWorkerLanePerDataLoaderWorker) {
  const WorkloadConfig cfg = Load("unet3d_h100");  // npz, PyTorch, read_threads 4
  const ReadPlan p = PlanReads(cfg, Accelerators(3), Disk(2));
  EXPECT_EQ(p.engine, ReadEngineKind::kDlio);
  EXPECT_EQ(p.pattern, "dlio");
  EXPECT_EQ(p.kind, DlioAccessKind(DataFormat::kNpz, cfg.rules));
  EXPECT_EQ(p.reason.rfind("each sample read as DLIO's ", 0), 0u) << p.reason;
  EXPECT_EQ(p.workers, 4u);
  EXPECT_EQ(p.lanes, 12u);
  EXPECT_EQ(p.io_threads, 2u) << "one I/O thread per CPU";
  EXPECT_EQ(p.lane_capacity, 2 * cfg.batches_in_flight * cfg.batch_size + 1);
  EXPECT_EQ(p.chunk, std::max<uint64_t>(cfg.transfer_size, 1 << 20));
  EXPECT_TRUE(p.preprocess);
  EXPECT_FALSE(p.tf_streams);
  EXPECT_EQ(p.batches_in_flight, cfg.batches_in_flight);
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(PlanReads(cfg, Accelerators(1), Disk(16)).io_threads, 4u) << "at most one thread a lane";
}

// v3.0's DLIO pre-warms its PyTorch DataLoader before each epoch: a batch per worker and worker 0's second (the main
// process's one batch with none); upstream's keeps its workers; TensorFlow's and S3's iterable readers are not
// replayed.
TEST(ReadPlan, ThePreWarmIsV3sPyTorchDataLoadersOnFiles) {
  EXPECT_EQ(PlanReads(Load("unet3d_h100"), Accelerators(2), Disk()).prewarm_batches, 5u) << "read_threads 4, + 1";
  EXPECT_EQ(PlanReads(Load("unet3d_h100", {"reader.read_threads=0"}), Accelerators(2), Disk()).prewarm_batches, 1u);
  EXPECT_EQ(PlanReads(Load("unet3d_h100", {"reader.odirect=true"}), Accelerators(2), Disk()).prewarm_batches, 5u)
      << "whatever reads the files";
  EXPECT_EQ(PlanReads(Load("unet3d_h100", {"feedrate.rules=upstream"}), Accelerators(2), Disk()).prewarm_batches, 0u);
  EXPECT_EQ(PlanReads(Load("unet3d_h100", {"feedrate.rules=v2.0"}), Accelerators(2), Disk()).prewarm_batches, 0u);
  EXPECT_EQ(PlanReads(Load("resnet50_h100"), Accelerators(2), Disk()).prewarm_batches, 0u) << "TensorFlow";
  ReadFacts s3 = Disk();
  s3.s3 = true;
  EXPECT_EQ(PlanReads(Load("unet3d_h100"), Accelerators(2), s3).prewarm_batches, 0u);
}

TEST(ReadPlan, EachReasonForCoalescedReadsIsNamed) {
  const RunOptions o = Accelerators(2);
  ReadFacts tmpfs = Disk();
  tmpfs.memory_storage = true;
  EXPECT_EQ(PlanReads(Load("unet3d_h100"), o, tmpfs).reason.rfind("memory-backed storage (tmpfs)", 0), 0u);
  EXPECT_EQ(PlanReads(Load("unet3d_h100", {"feedrate.access_pattern=dlio"}), o, tmpfs).pattern, "dlio")
      << "asked for, DLIO's calls are replayed on tmpfs too";
  EXPECT_EQ(PlanReads(Load("unet3d_h100", {"feedrate.engine=posix"}), o, Disk()).reason.rfind("an explicit feedrate.engine", 0), 0u);
  EXPECT_EQ(PlanReads(Load("unet3d_h100", {"reader.odirect=true"}), o, Disk()).reason, "O_DIRECT (DLIO's readers read buffered)");
  EXPECT_EQ(PlanReads(Load("unet3d_h100", {"feedrate.access_pattern=coalesced"}), o, Disk()).reason,
            "feedrate.access_pattern: coalesced");
  ReadFacts retained = Disk();
  retained.content = true;  // --verify of samples that may span more than one transfer
  retained.max_sample = 4 << 20;
  const ReadPlan r = PlanReads(Load("unet3d_h100"), o, retained);
  EXPECT_EQ(r.engine, ReadEngineKind::kCoalesced);
  EXPECT_EQ(r.reason, "samples checked or retained need their bytes in one buffer");
  EXPECT_TRUE(r.retain);
  EXPECT_EQ(r.workers, 0u);
  EXPECT_EQ(r.io_threads, 8u) << "the coalesced engines take ResolveEngineOptions's count: read_threads x accelerators";
  EXPECT_EQ(r.options.threads, 8u);
}

TEST(ReadPlan, TheThreadCapIsSaidOnlyOfTheEnginesItCaps) {
  const ReadFacts capped = Disk();  // 4 x 16 accelerators: 64 threads asked, 4 per CPU at most
  EXPECT_FALSE(Says(PlanReads(Load("unet3d_h100"), Accelerators(16), capped), "I/O threads per rank"));
  const ReadPlan posix = PlanReads(Load("unet3d_h100", {"feedrate.engine=posix"}), Accelerators(16), capped);
  EXPECT_TRUE(Says(posix, "I/O threads per rank: 8 (reader.read_threads x accelerators = 64, capped at 4 per CPU"));
}

TEST(ReadPlan, TensorFlowStreamsEachFileOnItsLaneAndReadsAhead) {
  const WorkloadConfig cfg = Load("resnet50_h100");  // TFRecord, TensorFlow, read_threads 8, 1251 records a file
  ReadFacts f = Disk();
  f.check = SampleCheck::kTfRecordFrame;
  f.max_sample = 4 << 20;  // a check of records larger than a transfer: retained for the coalesced engines ...
  const ReadPlan p = PlanReads(cfg, Accelerators(2), f);
  EXPECT_EQ(p.engine, ReadEngineKind::kDlio);
  EXPECT_FALSE(p.retain) << "... but TensorFlow's stream checks its records as its fills come";
  EXPECT_EQ(p.engine_check, SampleCheck::kTfRecordFrame);
  EXPECT_TRUE(p.tf_streams);
  EXPECT_EQ(p.tf_cycle, 8u);
  EXPECT_EQ(p.workers, 8u) << "files of more than 2 records: read_threads streams";
  EXPECT_FALSE(p.preprocess);
  EXPECT_GT(p.batches_in_flight, cfg.batches_in_flight) << "tf.data's read-ahead";
  const ReadPlan asked = PlanReads(Load("resnet50_h100", {"feedrate.batches_in_flight=3"}), Accelerators(2), f);
  EXPECT_EQ(asked.batches_in_flight, 3u) << "the workload's own value stands";
  EXPECT_EQ(PlanReads(Load("resnet50_h100", {"dataset.num_samples_per_file=2"}), Accelerators(2), f).workers, 24u);
}

TEST(ReadPlan, S3ReadsWholeObjectsInLanesUnlessTheBytesAreNeeded) {
  ReadFacts s3 = Disk();
  s3.s3 = true;
  const ReadPlan p = PlanReads(Load("unet3d_h100", {"feedrate.engine=uring"}), Accelerators(2), s3);
  EXPECT_EQ(p.engine, ReadEngineKind::kS3Lanes);
  EXPECT_EQ(p.pattern, "dlio");
  EXPECT_EQ(p.lanes, 8u);
  EXPECT_TRUE(Says(p, "feedrate.engine uring does not apply to an S3 dataset"));
  s3.check = SampleCheck::kTfRecordCrc;
  const ReadPlan ranged = PlanReads(Load("unet3d_h100"), Accelerators(2), s3);
  EXPECT_EQ(ranged.engine, ReadEngineKind::kS3Ranged);
  EXPECT_EQ(ranged.reason, "S3: ranged GETs of reader.transfer_size (samples checked or retained need their bytes in one buffer)");
  ReadFacts window = Disk();
  window.s3 = true;
  const ReadPlan w = PlanReads(Load("unet3d_h100", {"feedrate.s3_reader_window=8", "reader.preprocess_time=0.01"}),
                               Accelerators(1), window);
  EXPECT_EQ(w.s3_window, 8u);
  EXPECT_FALSE(w.preprocess);
  EXPECT_GT(w.batches_in_flight, Load("unet3d_h100").batches_in_flight) << "deep enough to fill the windows";
  EXPECT_TRUE(Says(w, "feedrate.s3_reader_window above 1 replays the iterable S3 readers' prefetch"));
}

// The staging is the plan's: GDS where nothing rules it out and cuFile took the rank's file; else the reason (auto) or
// the refusal (on); cuFile is tried only where the choice needs it.
TEST(ReadPlan, StagingAndGdsAreThePlans) {
  const WorkloadConfig odirect = Load("unet3d_h100", {"reader.odirect=true"});
  RunOptions o = Accelerators(1);
  o.accelerator_memory = AcceleratorMemory::kDevice;
  ReadFacts f = Disk();
  EXPECT_TRUE(ProbesCuFile(odirect, o, f));
  EXPECT_FALSE(ProbesCuFile(Load("unet3d_h100"), o, f)) << "buffered reads: nothing to try cuFile for";
  f.cufile_probed = true;
  const ReadPlan gds = PlanReads(odirect, o, f);
  EXPECT_EQ(gds.engine, ReadEngineKind::kCuFile);
  EXPECT_TRUE(gds.staging.gds);
  EXPECT_EQ(gds.staging.mode, AcceleratorMemory::kDevice);
  EXPECT_EQ(gds.memory.total(), 0.0) << "GPUDirect reads land in device slots";
  f.cufile_error = "no libcufile.so.0";
  const ReadPlan bounce = PlanReads(odirect, o, f);
  EXPECT_EQ(bounce.engine, ReadEngineKind::kCoalesced);
  EXPECT_FALSE(bounce.staging.gds);
  EXPECT_EQ(bounce.staging.gds_reason, "no libcufile.so.0");
  EXPECT_EQ(bounce.reason, "O_DIRECT (DLIO's readers read buffered)");
  EXPECT_TRUE(Says(bounce, "--gds auto: GPUDirect reads not used (no libcufile.so.0)"));
  EXPECT_TRUE(bounce.staging.refusal.empty());
  o.gds = GdsMode::kOn;
  EXPECT_EQ(PlanReads(odirect, o, f).staging.refusal, "--gds on: no libcufile.so.0");
  EXPECT_EQ(PlanReads(Load("unet3d_h100"), o, Disk()).staging.refusal,
            "--gds on: reader.odirect is off: cuFile reads O_DIRECT files (--odirect)");
  o.gds = GdsMode::kOff;
  EXPECT_FALSE(ProbesCuFile(odirect, o, Disk()));
  EXPECT_EQ(PlanReads(odirect, o, Disk()).staging.gds_reason, "--gds off");
  o.gds = GdsMode::kAuto;
  const ReadPlan staged = PlanReads(Load("unet3d_h100"), o, Disk());
  EXPECT_EQ(staged.reason, "batches staged into accelerator memory");
  EXPECT_EQ(staged.staging.gds_reason, "reader.odirect is off: cuFile reads O_DIRECT files (--odirect)");
  ReadFacts checked = Disk();
  checked.content = true;
  EXPECT_FALSE(ProbesCuFile(odirect, o, checked)) << "--verify checks on the host";
  o.accelerator_memory = AcceleratorMemory::kPinned;
  o.gds = GdsMode::kOn;
  EXPECT_EQ(PlanReads(odirect, o, Disk()).staging.refusal,
            "--gds on: --accelerator-memory pinned: GPUDirect reads land in device memory only");
  EXPECT_EQ(PlanReads(odirect, Accelerators(1), Disk()).staging.mode, AcceleratorMemory::kHost);
}

TEST(ReadPlan, ImagesDecodeInTheirLanesAndPreprocessIsSaidWhereNotMade) {
  ReadFacts f = Disk();
  f.check = SampleCheck::kImageDecode;
  f.images_unopened = true;
  f.max_sample = 0;  // (unsized whole files)
  f.sizes_unread = true;
  // (Upstream's PIL reader decodes; v3.0's reads each image whole, and set-up refuses the decode there.)
  const WorkloadConfig up = Load("retinanet_h100", {"feedrate.decode=true", "feedrate.rules=upstream"});
  const ReadPlan d = PlanReads(up, Accelerators(1), f);
  EXPECT_EQ(d.engine, ReadEngineKind::kDlio);
  EXPECT_EQ(d.engine_check, SampleCheck::kImageDecode);
  EXPECT_FALSE(d.retain);
  EXPECT_TRUE(d.lane_decode_only);
  const ReadPlan coalesced = PlanReads(Load("unet3d_h100", {"reader.preprocess_time=0.01", "feedrate.engine=posix"}),
                                       Accelerators(1), Disk());
  EXPECT_TRUE(Says(coalesced, "reader.preprocess_time is not applied: the per-sample wait is made by DLIO's access pattern only"));
  EXPECT_FALSE(Says(PlanReads(Load("unet3d_h100", {"reader.preprocess_time=0.01"}), Accelerators(1), Disk()), "preprocess"));
}

TEST(ReadPlan, WithoutIoUringTheCoalescedPlanSaysWhy) {
  const ReadFacts f = Disk();  // 4 x 4 accelerators: 16 threads asked, 8 at most
  const WorkloadConfig cfg = Load("unet3d_h100", {"reader.preprocess_time=0.01"});
  const ReadPlan p = FallBackToCoalesced(cfg, Accelerators(4), f, "io_uring_setup: Operation not permitted");
  EXPECT_EQ(p.engine, ReadEngineKind::kCoalesced);
  EXPECT_EQ(p.pattern, "coalesced");
  EXPECT_EQ(p.reason, "the DLIO pattern needs io_uring: io_uring_setup: Operation not permitted");
  EXPECT_EQ(p.io_threads, 8u);
  EXPECT_TRUE(Says(p, "I/O threads per rank"));
  EXPECT_TRUE(Says(p, "reader.preprocess_time is not applied"));
}

// Upstream's np.load learns each npz's zip layout and each npy's header from its own reads (set-up indexes none)
// where the lanes replay it and nothing needs the samples' extents first.
TEST(ReadPlan, NumpyLayoutsAreLearntInLanesOnlyWhereTheyReplayNpLoad) {
  RunOptions o = Accelerators(1);
  const WorkloadConfig upstream = Load("unet3d_h100", {"feedrate.rules=upstream"});
  EXPECT_TRUE(LearnsLayoutInLanes(upstream, o, false, false));
  EXPECT_FALSE(LearnsLayoutInLanes(Load("unet3d_h100"), o, false, false)) << "v3.0 reads each npz whole";
  EXPECT_FALSE(LearnsLayoutInLanes(upstream, o, false, true)) << "tmpfs reads coalesced";
  EXPECT_FALSE(LearnsLayoutInLanes(upstream, o, true, false)) << "S3";
  EXPECT_FALSE(LearnsLayoutInLanes(Load("unet3d_h100", {"feedrate.rules=upstream", "dataset.num_samples_per_file=2"}),
                                   o, false, false));
  EXPECT_FALSE(
      LearnsLayoutInLanes(Load("unet3d_h100", {"feedrate.rules=upstream", "feedrate.engine=posix"}), o, false, false));
  EXPECT_FALSE(
      LearnsLayoutInLanes(Load("unet3d_h100", {"feedrate.rules=upstream", "dataset.compression=zip"}), o, false, false))
      << "np.savez_compressed's members: indexed";
  const WorkloadConfig npy = Load("unet3d_h100", {"feedrate.rules=upstream", "dataset.format=npy"});
  EXPECT_TRUE(LearnsLayoutInLanes(npy, o, false, false));
  EXPECT_FALSE(LearnsLayoutInLanes(Load("unet3d_h100", {"dataset.format=npy"}), o, false, false))
      << "v3.0 reads each npy whole";
  EXPECT_FALSE(LearnsLayoutInLanes(
      Load("unet3d_h100", {"feedrate.rules=upstream", "dataset.format=npy", "dataset.num_samples_per_file=2"}), o,
      false, false));
  EXPECT_FALSE(
      LearnsLayoutInLanes(Load("unet3d_h100", {"feedrate.rules=upstream", "dataset.format=hdf5"}), o, false, false))
      << "h5py's layout is indexed at set-up";
  o.verify = 1;
  EXPECT_FALSE(LearnsLayoutInLanes(upstream, o, false, false)) << "--verify checks the indexed extents";
  EXPECT_FALSE(LearnsLayoutInLanes(npy, o, false, false));
  o.verify = 0;
  o.retain_batches = true;
  EXPECT_FALSE(LearnsLayoutInLanes(upstream, o, false, false));
}

TEST(ReadPlan, DecodesInLanesIsDecidedFromTheConfigurationAlone) {
  const RunOptions o = Accelerators(1);
  const WorkloadConfig decode = Load("retinanet_h100", {"feedrate.decode=true", "feedrate.rules=upstream"});
  EXPECT_TRUE(DecodesInLanes(decode, o, false, false));
  EXPECT_FALSE(DecodesInLanes(decode, o, false, true)) << "tmpfs reads coalesced";
  EXPECT_FALSE(DecodesInLanes(decode, o, true, false)) << "S3";
  EXPECT_FALSE(DecodesInLanes(Load("retinanet_h100"), o, false, false)) << "no decode asked";
}

// Retained batches are decided in the plan's one rule, which its read buffers count: asked for, or a check of samples
// larger than one transfer; not where a sample fits one transfer or an image decodes in its lane; and the plan lowers
// it where DLIO's reader makes the check (TensorFlow's stream, above). (posix: a coalesced plan.)
TEST(ReadPlan, BatchesAreRetainedOnlyWhereACheckNeedsAWholeRecord) {
  const WorkloadConfig cfg = Load("unet3d_h100", {"feedrate.engine=posix"});
  RunOptions o = Accelerators(1);
  ReadFacts f = Disk();
  f.slot_bytes = 16 << 20;
  EXPECT_FALSE(PlanReads(cfg, o, f).retain);
  f.check = SampleCheck::kHdf5Decode;
  EXPECT_FALSE(PlanReads(cfg, o, f).retain) << "every sample fits one transfer: checked in place";
  f.max_sample = (1 << 20) + 1;
  const ReadPlan r = PlanReads(cfg, o, f);
  EXPECT_TRUE(r.retain);
  EXPECT_EQ(r.memory.retained, static_cast<double>(cfg.batches_in_flight) * (16 << 20)) << "a slot per batch in flight";
  f.check = SampleCheck::kNone;
  EXPECT_FALSE(PlanReads(cfg, o, f).retain) << "nothing checked";
  f.content = true;
  EXPECT_TRUE(PlanReads(cfg, o, f).retain) << "--verify checks whole records";
  ReadFacts odirect = Disk();
  odirect.check = SampleCheck::kHdf5Decode;
  odirect.direct_align = 4096;
  EXPECT_TRUE(PlanReads(Load("unet3d_h100", {"reader.odirect=true"}), o, odirect).retain)
      << "a transfer's worth of sample read O_DIRECT spans the alignment on either side";
  ReadFacts image = Disk();
  image.check = SampleCheck::kImageDecode;
  image.images_unopened = true;
  image.max_sample = 0;
  image.sizes_unread = true;
  EXPECT_FALSE(PlanReads(Load("retinanet_h100", {"feedrate.decode=true", "feedrate.engine=posix"}), o, image).retain)
      << "decoded in its lane";
  o.retain_batches = true;
  EXPECT_TRUE(PlanReads(cfg, o, Disk()).retain) << "asked for";
}

// The plan's read buffers: the engine's (per thread, as each engine holds them), retained slots, decoded images'
// lane buffers; and the one check of them against the memory this rank may take, naming what lowers it.
TEST(ReadPlan, ReadBuffersAreThePlansAndAreCheckedAgainstMemory) {
  const RunOptions o = Accelerators(2);
  const ReadPlan dlio = PlanReads(Load("unet3d_h100"), o, Disk(2));
  ASSERT_EQ(dlio.engine, ReadEngineKind::kDlio);
  EXPECT_GE(dlio.memory.engine, 2.0 * static_cast<double>(dlio.chunk)) << "a chunk of scratch per I/O thread";
  EXPECT_EQ(dlio.memory.retained, 0.0);
  EXPECT_EQ(dlio.memory.lanes, 0.0);
  const ReadPlan posix = PlanReads(Load("unet3d_h100", {"feedrate.engine=posix"}), o, Disk(2));
  EXPECT_EQ(posix.memory.engine, static_cast<double>(EngineBufferBytes(EngineKind::kPosix, posix.options)));
  EXPECT_EQ(posix.memory.engine, 8.0 * posix.options.transfer_size) << "one transfer per thread, 8 threads";
  EXPECT_TRUE(CheckReadBuffers(Load("unet3d_h100"), o, Disk(2), dlio).ok());
  ReadFacts tight = Disk(2);
  tight.available_bytes = posix.memory.total();  // the buffers would take all of it
  tight.available_what = "MemAvailable (8.00 MiB)";
  const Status st = CheckReadBuffers(Load("unet3d_h100"), o, tight, posix);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("read buffers would need 0.01 GiB per rank, more than half of MemAvailable (8.00 MiB): "
                               "lower reader.transfer_size",
                               0),
            0u)
      << st.message();
  // Upstream's np.load learning each npz's layout from its own reads: a buffer of what it learns per lane.
  ReadFacts unindexed = Disk(2);
  unindexed.max_sample = 0;
  unindexed.sizes_unread = true;
  const WorkloadConfig upstream = Load("unet3d_h100", {"feedrate.rules=upstream"});
  ASSERT_TRUE(LearnsLayoutInLanes(upstream, o, false, false));
  const ReadPlan learnt = PlanReads(upstream, o, unindexed);
  ASSERT_EQ(learnt.kind, AccessKind::kNpz);
  EXPECT_EQ(learnt.memory.engine - PlanReads(upstream, o, Disk(2)).memory.engine,
            static_cast<double>(learnt.lanes) * NumpyLayoutLearner::kMaxWant);
  const WorkloadConfig npy = Load("unet3d_h100", {"feedrate.rules=upstream", "dataset.format=npy"});
  const ReadPlan npy_learnt = PlanReads(npy, o, unindexed);
  ASSERT_EQ(npy_learnt.kind, AccessKind::kNpy);
  EXPECT_EQ(npy_learnt.memory.engine - PlanReads(npy, o, Disk(2)).memory.engine,
            static_cast<double>(npy_learnt.lanes) * NumpyLayoutLearner::kMaxWant);
  // feedrate.decode's lane buffers, each the largest image and a PIL read past it, are named apart.
  ReadFacts images = Disk(2);
  images.check = SampleCheck::kImageDecode;
  images.images_unopened = true;
  images.max_sample = 0;
  images.sizes_unread = true;
  const WorkloadConfig decode = Load("retinanet_h100", {"feedrate.decode=true", "feedrate.rules=upstream"});
  const ReadPlan d = PlanReads(decode, o, images);
  ASSERT_EQ(d.engine_check, SampleCheck::kImageDecode);
  EXPECT_EQ(d.memory.lanes,
            static_cast<double>(d.lanes) * (decode.record_length + 4 * decode.record_length_stdev + (128 << 10)));
  images.available_bytes = d.memory.lanes;
  const Status lanes = CheckReadBuffers(decode, o, images, d);
  EXPECT_NE(lanes.message().find("DataLoader workers' image buffers"), std::string::npos) << lanes.message();
}

}  // namespace
}  // namespace feedrate
