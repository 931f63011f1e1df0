// `--inject` end to end: each fault kind ends as documented. EIO on one file stops every rank with the file,
// offset and errno and no result claiming success; short reads and EAGAIN are retried and the run reads exactly
// the bytes a clean run reads; ENOSPC in datagen leaves no file under a final name and a rerun with
// --skip-existing writes only what is missing; a rank that freezes or dies ends the job naming it. (The added
// latency makes the CI sweep deterministic: sweep_answer_test.)
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

const char* kShape = " --param dataset.num_files_train=8 --param dataset.record_length_bytes=20000"
                     " --param dataset.record_length_bytes_stdev=0";

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data_ + kShape));
    ASSERT_EQ(r.code, 0) << r.output;
  }
  std::string Run(const std::string& extra, const std::string& results) const {
    return "run -w unet3d_h100 --data-dir " + data_ + kShape +
           " --param reader.batch_size=1 --param train.epochs=3 --param train.computation_time=0.001"
           " --param reader.transfer_size=4096 --quiet --results-dir " + results + " " + extra;
  }
  test::TempDir dir_;
  std::string data_ = dir_ / "data";
};

TEST_F(Faults, EioOnOneFileStopsEveryRankNamingFileOffsetAndErrno) {
  const std::string results = dir_ / "eio";
  // Only img_3's reads match; every 2nd of them fails. Two ranks: the one reading img_3 fails, both exit 2.
  auto r = Sh(MpiFeedrate(2, Run("--inject 'eio:file=img_3_*,every=2'", results)));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("feedrate: error: rank "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(data_ + "/train/img_3_of_8.npz: read failed at offset"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Input/output error"), std::string::npos) << r.output;
  auto s = ReadJson(results + "/summary.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["feedrate"]["status"], "failed");
  EXPECT_FALSE(s.contains("metric"));  // nothing that reads as a result
  ASSERT_EQ(s["feedrate"]["injected_faults"].size(), 1u) << s["feedrate"].dump(2);
  EXPECT_EQ(s["feedrate"]["injected_faults"][0]["rule"], "eio:file=img_3_*,every=2");
  EXPECT_GE(s["feedrate"]["injected_faults"][0]["injected"].get<int>(), 1);
}

TEST_F(Faults, ShortReadsAndEagainAreRetriedAndReadTheSameBytes) {
  for (const char* engine : {"posix", "uring"}) {
    const std::string clean = dir_ / (std::string("clean_") + engine), faulty = dir_ / (std::string("faulty_") + engine);
    auto a = Sh(Feedrate(Run(std::string("--engine ") + engine, clean)));
    ASSERT_TRUE(a.code == 0 || a.code == 3) << a.output;
    auto b = Sh(Feedrate(Run(std::string("--engine ") + engine + " --inject 'short:every=3;eagain:every=4'", faulty)));
    ASSERT_TRUE(b.code == 0 || b.code == 3) << b.output;
    auto sa = ReadJson(clean + "/summary.json")["feedrate"], sb = ReadJson(faulty + "/summary.json")["feedrate"];
    EXPECT_EQ(sb["bytes_read"], sa["bytes_read"]) << engine;
    EXPECT_EQ(sb["engine_bytes_read"], sa["engine_bytes_read"]) << engine;  // the remainders, not the whole again
    EXPECT_GT(sb["requeued_reads"].get<int>(), 0) << engine;
    EXPECT_EQ(sa["requeued_reads"], 0) << engine;
    ASSERT_EQ(sb["injected_faults"].size(), 2u);
    EXPECT_GT(sb["injected_faults"][0]["injected"].get<int>(), 0);
    EXPECT_GT(sb["injected_faults"][1]["injected"].get<int>(), 0);
    // A run with injected faults never passes for a measurement of the storage.
    EXPECT_EQ(sb["validity"]["category"], "INVALID");
    EXPECT_NE(sb["validity"]["reasons"].dump().find("faults were injected (--inject short:every=3;eagain:every=4)"),
              std::string::npos);
    EXPECT_FALSE(sa.contains("injected_faults"));
  }
}

// A read that stops answering (held 60 s by a delay rule, as a dead NFS server would hold it) fails the run after
// --io-timeout, naming the file, on one rank and on two (each engine), with the failed-run record written; the
// process ends then, without waiting for the read (it would otherwise wait the 60 s for its I/O thread).
TEST_F(Faults, AReadThatNeverCompletesFailsTheRunAfterTheIoTimeoutNamingIt) {
  for (const char* engine : {"posix", "uring"}) {
    for (int ranks : {1, 2}) {
      const std::string results = dir_ / ("lost_" + std::string(engine) + std::to_string(ranks));
      const std::string args = Run(std::string("--engine ") + engine +
                                       " --io-timeout 1 --inject 'delay:ms=60000,count=1,file=img_5_of_8.npz'",
                                   results);
      auto r = Sh(ranks == 1 ? Feedrate(args) : MpiFeedrate(ranks, args), 40);
      EXPECT_EQ(r.code, 2) << engine << " x" << ranks << ": " << r.output;
      EXPECT_NE(r.output.find("a read of " + data_ + "/train/img_5_of_8.npz at offset "), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("has not completed after 1 s (--io-timeout)"), std::string::npos) << r.output;
      auto s = ReadJson(results + "/summary.json");
      ASSERT_TRUE(s.is_object()) << r.output;
      EXPECT_EQ(s["feedrate"]["status"], "failed");
      EXPECT_FALSE(s.contains("metric"));
    }
  }
}

TEST_F(Faults, BadRulesAreRefusedBeforeAnyWork) {
  auto r = Sh(Feedrate(Run("--inject 'eio:every=0'", dir_ / "bad")));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("every must be at least 1"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "bad/summary.json"));
}

TEST_F(Faults, EnospcInDatagenLeavesNoPartialFileAndARerunFinishesTheRest) {
  const std::string d = dir_ / "gen";
  const std::string args = "datagen -w unet3d_h100 --data-dir " + d + kShape + " --threads 2";
  auto r = Sh(Feedrate(args + " --inject 'enospc:file=img_5_of_8.npz,after=1'"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(d + "/train/img_5_of_8.npz: write failed at offset"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d + "/train/img_5_of_8.npz"));
  size_t complete = 0;
  for (const auto& e : fs::directory_iterator(d + "/train")) {
    const std::string name = e.path().filename().string();
    EXPECT_NE(name[0], '.') << "temporary file left behind: " << name;
    ++complete;
  }
  auto again = Sh(Feedrate(args + " --skip-existing"));
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("wrote " + std::to_string(8 - complete) + " files"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("kept " + std::to_string(complete) + " existing"), std::string::npos) << again.output;
  auto run = Sh(Feedrate("run -w unet3d_h100 --data-dir " + d + kShape +
                         " --param reader.batch_size=1 --param train.computation_time=0.001 --quiet --results-dir " +
                         (dir_ / "after")));
  EXPECT_TRUE(run.code == 0 || run.code == 3) << run.output;
}

// Starts a two-rank `job` (a feedrate command line writing --json-events to stdout, results in `results`), waits
// until `ready` (a fixed string) shows in its events, then runs `action`, a shell snippet with $r0, $r1 = rank 0's
// and rank 1's pids, $ranks = both, and the shell function `seen TEXT` (waits, at most 60 s, until the job's stderr
// holds TEXT: the snippet synchronises on what the job says, never on a sleep), and returns how the job ended
// (its stderr included in the output).
CmdResult StartAndHitRank1(const test::TempDir& dir, const std::string& job, const std::string& ready,
                           const std::string& results, const std::string& name, const std::string& action) {
  const std::string script = dir / ("hit_" + name + ".sh"), events = dir / ("events_" + name + ".jsonl");
  const std::string err = dir / ("stderr_" + name + ".log");
  test::WriteFile(script, MpiFeedrate(2, job) + " > " + events + " 2> " + err + " &\n"
                              "job=$!\n"
                              "seen() { for i in $(seq 1200); do grep -qF \"$1\" " + err + " && return 0; sleep 0.05; done; "
                              "echo \"never saw: $1\" >&2; return 1; }\n"
                              "for i in $(seq 900); do grep -qF '" + ready + "' " + events +
                              " 2>/dev/null && break; sleep 0.1; done\n"
                              "r0= r1= ranks=\n"
                              "for p in $(pgrep -f \"results-dir " + results + "\"); do\n"
                              "  env=$(tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null)\n"
                              "  echo \"$env\" | grep -q '^OMPI_COMM_WORLD_RANK=' && ranks=\"$ranks $p\"\n"
                              "  echo \"$env\" | grep -qx OMPI_COMM_WORLD_RANK=0 && r0=$p\n"
                              "  echo \"$env\" | grep -qx OMPI_COMM_WORLD_RANK=1 && r1=$p\n"
                              "done\n" +
                              action + "\n"
                              "wait $job\n"
                              "rc=$?\n"
                              "cat " + err + " >&2\n"
                              "exit $rc\n");
  return Sh("bash " + script, 100);
}

// A long two-rank run, hit once training is under way (rank 0 has reported its first epoch).
CmdResult RunAndHitRank1(const test::TempDir& dir, const std::string& data, const std::string& results,
                         const std::string& name, const std::string& action) {
  return StartAndHitRank1(dir,
                          "run -w unet3d_h100 --data-dir " + data + kShape +
                              " --param reader.batch_size=1 --param train.epochs=1000000"
                              " --param train.computation_time=0.001 --json-events --collective-timeout 3"
                              " --results-dir " + results,
                          "\"event\":\"epoch\"", results, name, action);
}

// A rank that stops answering (alive but frozen, like a process stuck in the kernel) ends the job within
// --collective-timeout plus the roll call, with exit code 2 and a message naming that rank and its host.
TEST_F(Faults, ARankThatStopsAnsweringEndsTheJobNamingIt) {
  const std::string results = dir_ / "hang";
  auto r = RunAndHitRank1(dir_, data_, results, "stop", "kill -STOP $r1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("did not complete within 3 s (--collective-timeout): rank 1 ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did not answer"), std::string::npos) << r.output;
  // Rank 0 leaves a failed-run record with the watchdog's message before the job ends.
  auto s = ReadJson(results + "/summary.json");
  ASSERT_TRUE(s.is_object()) << r.output;
  EXPECT_EQ(s["feedrate"]["status"], "failed");
  EXPECT_NE(s["feedrate"]["error"].get<std::string>().find("rank 1 ("), std::string::npos) << s["feedrate"]["error"];
  EXPECT_FALSE(s.contains("metric"));
}

// The same watchdog in `feedrate checkpoint`: rank 1 frozen after the first checkpoint ends the job naming it, and
// rank 0 leaves a summary that says it failed and how many checkpoints were whole.
TEST_F(Faults, ACheckpointRankThatStopsAnsweringLeavesAFailedSummary) {
  const std::string results = dir_ / "ck_hang";
  auto r = StartAndHitRank1(dir_,
                            "checkpoint -w llama3_8b --dir " + (dir_ / "ck") +
                                " --scale 0.0002 --time-between 1 --num-checkpoints-write 20 --num-checkpoints-read 0"
                                " --collective-timeout 3 --results-dir " + results,
                            "checkpoint 1/20 written", results, "ck_stop", "kill -STOP $r1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("did not complete within 3 s (--collective-timeout): rank 1 ("), std::string::npos) << r.output;
  auto s = ReadJson(results + "/summary.json");
  ASSERT_TRUE(s.is_object()) << r.output;
  EXPECT_EQ(s["feedrate"]["status"], "failed");
  EXPECT_NE(s["feedrate"]["error"].get<std::string>().find("rank 1 ("), std::string::npos) << s["feedrate"]["error"];
  EXPECT_GE(s["feedrate"]["checkpoints_written"].get<int>(), 1);
  EXPECT_LT(s["feedrate"]["checkpoints_written"].get<int>(), 20);
  EXPECT_FALSE(s.contains("metric"));  // nothing that reads as a result
}

// A rank that is late by more than --collective-timeout but arrives while rank 0 calls the roll (frozen until rank 0
// says it calls the roll; the roll call's 5 s are only an outer limit) lets the collective through: a warning naming
// it, and the run goes on (here until it is interrupted) instead of ending as if it hung.
TEST_F(Faults, ARankThatArrivesDuringTheRollCallOnlyGetsAWarning) {
  const std::string results = dir_ / "late";
  auto r = RunAndHitRank1(dir_, data_, results, "late",
                          "kill -STOP $r1; seen 'calling the roll'; kill -CONT $r1; seen 'and the run goes on'; "
                          "kill -INT $ranks");
  EXPECT_EQ(r.code, 130) << r.output;
  EXPECT_NE(r.output.find("beyond --collective-timeout (3 s), and the run goes on: rank 1 ("), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(") came late ("),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("did not answer"), std::string::npos) << r.output;
  auto s = ReadJson(results + "/summary.json");
  ASSERT_TRUE(s.is_object()) << r.output;
  EXPECT_EQ(s["feedrate"]["status"], "interrupted") << r.output;
}

// The same with rank 0 late (frozen until rank 1 says it waited past the timeout): it calls no roll (it is the one
// that was away), and rank 1 says that rank 0 came late once the collective completes.
TEST_F(Faults, ALateRankZeroIsNamedByTheRankThatWaited) {
  const std::string results = dir_ / "late0";
  auto r = RunAndHitRank1(dir_, data_, results, "late0",
                          "kill -STOP $r0; seen \"answering rank 0's roll call\"; kill -CONT $r0; seen 'never called the roll'; "
                          "kill -INT $ranks");
  EXPECT_EQ(r.code, 130) << r.output;
  EXPECT_NE(r.output.find("beyond --collective-timeout (3 s), and rank 0 never called the roll: rank 0 ("),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("did not answer"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("did not call the roll"), std::string::npos) << r.output;
  EXPECT_EQ(ReadJson(results + "/summary.json")["feedrate"]["status"], "interrupted") << r.output;
}

// A rank that dies ends the job (mpirun notices and stops the others), non-zero, naming the rank; no success.
TEST_F(Faults, ARankThatDiesEndsTheJob) {
  const std::string results = dir_ / "killed";
  auto r = RunAndHitRank1(dir_, data_, results, "kill", "kill -KILL $r1");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.code, 124) << "timed out: " << r.output;
  EXPECT_NE(r.output.find("rank 1"), std::string::npos) << r.output;
  auto s = ReadJson(results + "/summary.json");
  EXPECT_TRUE(s.is_null() || s["feedrate"]["status"] != "success");
}

}  // namespace
}  // namespace feedrate::it
