// `feedrate checkpoint` under mpirun: DLIO's file layout, real fsyncs, write then read with the cache dropped,
// the slowest rank deciding a checkpoint's duration, and failures that name the rank, the file and the cause.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

const std::string kSmall = "--scale 0.0005 --time-between 0 -q";

TEST(Checkpoint, FourRanksWriteAndReadLlama8b) {
  test::TempDir dir("/var/tmp");
  const std::string ck = dir / "ck", r = dir / "r";
  auto run = Sh(MpiFeedrate(4, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall +
                                   " --num-checkpoints-write 2 --num-checkpoints-read 2 --verify --results-dir " + r));
  ASSERT_EQ(run.code, 0) << run.output;
  // ZeRO 3 over 4 data-parallel ranks: a model and an optimizer file per rank, per checkpoint.
  for (int k = 1; k <= 2; ++k) {
    for (int rank = 0; rank < 4; ++rank) {
      for (const char* kind : {"model", "optim"}) {
        const std::string f = ck + "/global_epoch1_step" + std::to_string(k) + "/zero_pp_rank_" + std::to_string(rank) +
                              "_mp_rank_0_" + kind + "_states.pt";
        EXPECT_TRUE(fs::exists(f)) << f;
      }
    }
  }
  auto s = ReadJson(r + "/summary.json");
  const auto& m = s["metric"];
  // 104.7 GiB at world 8; at world 4 the same total (ZeRO 3 shards it), times the scale.
  EXPECT_NEAR(m["checkpoint_size_GB"].get<double>(), 104.7 * 0.0005, 0.001);
  for (const char* k : {"save_checkpoint_duration_mean_seconds", "save_checkpoint_io_mean_GB_per_second",
                        "load_checkpoint_duration_mean_seconds", "load_checkpoint_io_mean_GB_per_second"}) {
    EXPECT_GT(m[k].get<double>(), 0) << k;
  }
  const auto& f = s["feedrate"];
  EXPECT_EQ(f["status"], "success");
  EXPECT_EQ(f["fsyncs"], 4 * 2 * 2);  // every file of every checkpoint, really
  EXPECT_EQ(f["model"]["zero_stage"], 3);
  EXPECT_EQ(f["model"]["data_parallelism"], 4);
  EXPECT_NE(f["read_cache"].get<std::string>().find("after 0%"), std::string::npos) << f["read_cache"];
  EXPECT_LE(f["buffer_bytes_per_rank"].get<uint64_t>(), 256u << 20);
  EXPECT_GT(f["client_cpu"]["write_seconds"].get<double>(), 0);  // writing and checking 2 x 52 MiB costs CPU
  EXPECT_GT(f["client_cpu"]["read_seconds_per_gib"].get<double>(), 0);
  ASSERT_EQ(f["save"]["checkpoints"].size(), 2u);
  for (const auto& c : f["save"]["checkpoints"]) {
    EXPECT_EQ(c["duration_seconds"], c["rank_duration_max_seconds"]);
    EXPECT_LE(c["rank_duration_min_seconds"].get<double>(), c["rank_duration_mean_seconds"].get<double>());
  }
  // The report shows it as a checkpoint result, exported as mlpstorage's "checkpointing" benchmark type.
  auto rep = Sh(Feedrate("report " + r + " -o " + dir / "rep/report.html"));
  ASSERT_EQ(rep.code, 0) << rep.output;
  EXPECT_NE(test::ReadFile(dir / "rep/report.md").find("## feedrate checkpoint: llama3\\_8b"), std::string::npos);
  EXPECT_EQ(ReadJson(dir / "rep/results.json")[0]["benchmark_type"], "checkpointing");
  EXPECT_EQ(ReadJson(dir / "rep/results.json")[0]["model"], "llama3-8b");  // as mlpstorage names it
  // v3.0's rules: 4 ranks of 8b (CLOSED: 8), 2 writes and reads, files scaled: not CLOSED, each reason said; the
  // host keys mlpstorage's report reads are there.
  EXPECT_EQ(f["validity"]["rules_edition"], "MLPerf Storage v3.0");
  EXPECT_EQ(f["validity"]["category"], "INVALID");
  EXPECT_NE(f["validity"]["reasons"].dump().find("4 ranks: CLOSED runs llama3-8b with 8"), std::string::npos) << f["validity"];
  EXPECT_NE(f["validity"]["reasons"].dump().find("--scale"), std::string::npos) << f["validity"];
  EXPECT_EQ(s["num_hosts"], 1);
  EXPECT_GT(s["host_memory_GB"][0].get<double>(), 0);
  EXPECT_GT(s["host_cpu_count"][0].get<int>(), 0);
  // Reading back a checkpoint that was never written names it; so does reading with another world size.
  auto missing = Sh(MpiFeedrate(4, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall +
                                       " --num-checkpoints-write 0 --num-checkpoints-read 3 --results-dir " + dir / "m"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("checkpoint 3 is missing " + ck + "/global_epoch1_step3/zero_pp_rank_0_mp_rank_0_model_states.pt"),
            std::string::npos) << missing.output;
  auto other = Sh(MpiFeedrate(2, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall +
                                     " --num-checkpoints-write 0 --num-checkpoints-read 1 --results-dir " + dir / "o"));
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.output.find("the layout says"), std::string::npos) << other.output;
  EXPECT_EQ(ReadJson(dir / "m/summary.json")["feedrate"]["status"], "failed");
}

// One slow rank decides each checkpoint's duration; DLIO's rank-0 figure would not see it.
TEST(Checkpoint, TheSlowestRankDecides) {
  test::TempDir dir("/var/tmp");
  auto run = Sh(MpiFeedrate(4, "checkpoint -w llama3_8b --dir " + dir / "ck" + " " + kSmall +
                                   " --num-checkpoints-write 2 --num-checkpoints-read 0 --block-size 1048576"
                                   " --inject 'delay:ms=100,file=zero_pp_rank_2_*' --results-dir " + dir / "r"));
  ASSERT_EQ(run.code, 0) << run.output;
  auto s = ReadJson(dir / "r/summary.json");
  const auto& save = s["feedrate"]["save"];
  // Rank 2 writes ~14 MB in 1 MiB requests, each delayed 100 ms: at least 1.3 s per checkpoint.
  for (const auto& c : save["checkpoints"]) EXPECT_GE(c["duration_seconds"].get<double>(), 1.3) << c;
  EXPECT_NEAR(s["metric"]["save_checkpoint_duration_mean_seconds"].get<double>(), save["duration_mean_seconds"].get<double>(), 1e-9);
  EXPECT_LT(save["rank0_dlio_compatible"]["duration_mean_seconds"].get<double>(), save["duration_mean_seconds"].get<double>());
}

TEST(Checkpoint, EnospcMidWriteNamesRankAndFileAndMarksTheCheckpoint) {
  test::TempDir dir("/var/tmp");
  const std::string ck = dir / "ck";
  auto run = Sh(MpiFeedrate(4, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall +
                                   " --num-checkpoints-write 1 --num-checkpoints-read 0 --block-size 1048576"
                                   " --inject 'enospc:after=2,count=1,file=zero_pp_rank_1_*optim*' --results-dir " + dir / "r"));
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_NE(run.output.find("rank 1 ("), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("zero_pp_rank_1_mp_rank_0_optim_states.pt: write failed at offset 2097152 (injected): No space left on device"),
            std::string::npos) << run.output;
  EXPECT_EQ(ReadJson(dir / "r/summary.json")["feedrate"]["status"], "failed");
  const std::string step = ck + "/global_epoch1_step1";
  EXPECT_TRUE(fs::exists(step + "/FEEDRATE_INCOMPLETE"));
  EXPECT_FALSE(fs::exists(step + "/zero_pp_rank_1_mp_rank_0_optim_states.pt"));
  for (const auto& e : fs::directory_iterator(step)) EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  // Not enough space (100000 checkpoints of a 405B rank: about a petabyte): refused before writing anything.
  auto huge = Sh(Feedrate("checkpoint -w llama3_405b --dir " + dir / "big" +
                          " --param checkpoint.mode=subset --num-checkpoints-write 100000 --time-between 0 -q --results-dir " + dir / "r2"));
  EXPECT_EQ(huge.code, 2);
  EXPECT_NE(huge.output.find("not enough space"), std::string::npos) << huge.output;
}

// SIGINT mid-checkpoint: the job stops at the next request, drops the file it was writing, and says so.
TEST(Checkpoint, InterruptStopsCleanlyAndSaysSo) {
  test::TempDir dir("/var/tmp");
  const std::string ck = dir / "ck";
  auto run = Sh(Feedrate("checkpoint -w llama3_8b --dir " + ck + " --scale 0.0005 --time-between 0 -q"
                         " --num-checkpoints-write 5 --num-checkpoints-read 0 --block-size 1048576 --inject delay:ms=100"
                         " --results-dir " + dir / "r") +
                " & pid=$!; while [ ! -d " + ck + "/global_epoch1_step1 ]; do sleep 0.1; done; kill -INT $pid; wait $pid");
  // (The signal goes once the first checkpoint is being written: the handler is installed by then, however slowly
  // MPI started on a loaded machine.)
  EXPECT_EQ(run.code, 130) << run.output;
  auto s = ReadJson(dir / "r/summary.json");
  EXPECT_EQ(s["feedrate"]["status"], "interrupted");
  EXPECT_LT(s["feedrate"]["checkpoints_written"].get<int>(), 5);
  EXPECT_FALSE(s.contains("metric"));
  for (const auto& e : fs::recursive_directory_iterator(ck)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace feedrate::it

namespace feedrate::it {
namespace {

// A rank killed mid-checkpoint ends the job (mpirun names it); the checkpoint's folder keeps the in-progress mark,
// so a later read refuses it rather than timing a partial checkpoint.
TEST(Checkpoint, KilledRankLeavesTheCheckpointMarkedInProgress) {
  test::TempDir dir("/var/tmp");
  const std::string ck = dir / "ck", r = dir / "r";
  const std::string script = dir / "kill.sh";
  test::WriteFile(script, MpiFeedrate(4, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall +
                                             " --num-checkpoints-write 3 --num-checkpoints-read 0 --block-size 1048576"
                                             " --inject delay:ms=50 --results-dir " + r) +
                              " &\njob=$!\n"
                              // Once checkpoint 1 is under way (its mark is there), kill rank 2.
                              "for i in $(seq 600); do [ -f " + ck + "/global_epoch1_step1/FEEDRATE_IN_PROGRESS ] && break; sleep 0.1; done\n"
                              "for p in $(pgrep -f \"results-dir " + r + "\"); do\n"
                              "  if tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=2; then kill -KILL $p; fi\n"
                              "done\n"
                              "wait $job\n");
  auto run = Sh("bash " + script, 120);
  EXPECT_NE(run.code, 0) << run.output;
  EXPECT_NE(run.code, 124) << "timed out: " << run.output;
  EXPECT_NE(run.output.find("rank 2"), std::string::npos) << run.output;
  auto s = ReadJson(r + "/summary.json");
  EXPECT_TRUE(s.is_null() || s["feedrate"]["status"] != "success");
  EXPECT_TRUE(fs::exists(ck + "/global_epoch1_step1/FEEDRATE_IN_PROGRESS"));
  auto again = Sh(MpiFeedrate(4, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall +
                                     " --num-checkpoints-write 0 --num-checkpoints-read 1 --results-dir " + dir / "r2"));
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("checkpoint 1 in " + ck + "/global_epoch1_step1 is not whole (FEEDRATE_IN_PROGRESS: "
                              "checkpoint 1 is being written by 4 rank(s)"),
            std::string::npos) << again.output;
}

// Faults on the read side: retried short reads and EAGAIN still read every byte (and are counted); an EIO names
// the rank, the file and the offset, and no result claims success.
TEST(Checkpoint, ReadFaultsAreRetriedOrNamed) {
  test::TempDir dir("/var/tmp");
  const std::string ck = dir / "ck";
  auto write = Sh(MpiFeedrate(2, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall +
                                     " --num-checkpoints-write 1 --num-checkpoints-read 0 --verify --results-dir " + dir / "w"));
  ASSERT_EQ(write.code, 0) << write.output;
  for (const std::string engine : {"uring", "posix"}) {
    const std::string ok = dir / ("ok_" + engine);
    auto retried = Sh(MpiFeedrate(2, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall + " --engine " + engine +
                                         " --num-checkpoints-write 0 --num-checkpoints-read 1 --verify --block-size 1048576"
                                         " --inject 'short:op=read,every=3;eagain:op=read,every=5' --results-dir " + ok));
    ASSERT_EQ(retried.code, 0) << retried.output;
    auto s = ReadJson(ok + "/summary.json");
    EXPECT_EQ(s["feedrate"]["checkpoints_read"], 1);
    ASSERT_EQ(s["feedrate"]["injected_faults"].size(), 2u) << s["feedrate"].dump(2);
    EXPECT_GT(s["feedrate"]["injected_faults"][0]["injected"].get<double>(), 0);
    EXPECT_GT(s["feedrate"]["injected_faults"][1]["injected"].get<double>(), 0);
    const std::string bad = dir / ("eio_" + engine);
    auto eio = Sh(MpiFeedrate(2, "checkpoint -w llama3_8b --dir " + ck + " " + kSmall + " --engine " + engine +
                                     " --num-checkpoints-write 0 --num-checkpoints-read 1 --block-size 1048576"
                                     " --inject 'eio:op=read,offset=2097152-2097153,file=zero_pp_rank_1_*model*' --results-dir " + bad));
    EXPECT_EQ(eio.code, 2) << eio.output;
    EXPECT_NE(eio.output.find("rank 1 ("), std::string::npos) << eio.output;
    EXPECT_NE(eio.output.find("zero_pp_rank_1_mp_rank_0_model_states.pt: read failed at offset 2097152 (injected): "
                              "Input/output error"),
              std::string::npos) << eio.output;
    EXPECT_EQ(ReadJson(bad + "/summary.json")["feedrate"]["status"], "failed");
  }
}

}  // namespace
}  // namespace feedrate::it
