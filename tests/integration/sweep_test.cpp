// `feedrate sweep` end to end with real `feedrate run` children: answers made independent of the machine's speed
// by the AU bar itself (metric.au=0 always passes, 1.0 never does), results kept per run, sweep.json, exit codes,
// ranks mode through mpirun, and a failing run stopping the sweep with its error.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

const char* kTiny =
    " --param dataset.num_files_train=8 --param dataset.record_length_bytes=65536"
    " --param dataset.record_length_bytes_stdev=0 --param train.epochs=1 --param reader.batch_size=1"
    " --param train.computation_time=0.001";

class SweepRun : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data_ + kTiny));
    ASSERT_EQ(gen.code, 0) << gen.output;
  }
  std::string Sweep(const std::string& extra, const std::string& results) {
    return Feedrate("sweep -w unet3d_h100 --data-dir " + data_ + kTiny + " --results-dir " + results + " " + extra);
  }
  test::TempDir dir_;
  std::string data_ = dir_ / "data";
};

TEST_F(SweepRun, EveryCountPassingAnswersTheMaximumAndKeepsEveryRun) {
  const std::string r = dir_ / "pass";
  auto sweep = Sh(Sweep("--param metric.au=0 --max 3 --repeats 2 --ceiling --param reader.transfer_size=65536", r));
  ASSERT_EQ(sweep.code, 0) << sweep.output;
  EXPECT_NE(sweep.output.find("accelerators supported: 3 or more"), std::string::npos) << sweep.output;
  auto j = ReadJson(r + "/sweep.json");
  EXPECT_EQ(j["accelerators_supported"], 3);
  EXPECT_EQ(j["lower_bound_only"], true);
  EXPECT_EQ(j["workload"], "unet3d_h100");
  ASSERT_EQ(j["points"].size(), 3u);  // 1, 2, 3
  for (size_t i = 0; i < 3; ++i) {
    const auto& p = j["points"][i];
    EXPECT_EQ(p["accelerators"], i == 2 ? 3 : (1 << i));
    EXPECT_EQ(p["passed"], true);
    ASSERT_EQ(p["runs"].size(), 2u);
    for (const auto& run : p["runs"]) {
      const std::string rd = run["results_dir"];
      auto s = ReadJson(rd + "/summary.json");
      EXPECT_EQ(s["num_accelerators"], p["accelerators"]);
      EXPECT_EQ(run["au_pct"].get<double>(), s["metric"]["train_au_mean_percentage"].get<double>());
      EXPECT_GT(run["read_mib_per_s"].get<double>(), 0.0);
      EXPECT_TRUE(fs::exists(rd + ".log"));
      ASSERT_EQ(run["hosts"].size(), 1u);  // the run's per-host figures travel with it
      EXPECT_EQ(run["hosts"][0]["accelerators"], p["accelerators"]);
    }
  }
  EXPECT_EQ(j["bottleneck"]["limit"], "none reached");
  // --ceiling measured the storage first with iobench on a training file.
  EXPECT_GT(j["bottleneck"]["storage_ceiling_mib_per_s"].get<double>(), 0.0);
  EXPECT_EQ(j["storage_ceiling_source"], "feedrate iobench (ceiling/iobench.json)");
  EXPECT_TRUE(fs::exists(r + "/ceiling/iobench.json"));
  // Rule checks: metric.au and train.* overrides are allowed by neither CLOSED nor OPEN; 2 runs per point are not 5.
  EXPECT_EQ(j["validity"]["category"], "INVALID");
  const std::string reasons = j["validity"]["reasons"].dump();
  EXPECT_NE(reasons.find("override of metric.au"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("2 run(s) per point"), std::string::npos) << reasons;
  EXPECT_EQ(j["points"][0]["runs"][0]["validity"], "INVALID");

  // The report's MLPerf-style export: one row per run the sweep kept, in mlpstorage's BenchmarkRun.as_dict shape.
  auto rep = Sh(Feedrate("report " + r + " -o " + r + "/report.html"));
  ASSERT_EQ(rep.code, 0) << rep.output;
  auto rows = ReadJson(r + "/results.json");
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& row : rows) {
    EXPECT_EQ(row["benchmark_type"], "training");
    EXPECT_EQ(row["command"], "run_benchmark");
    EXPECT_EQ(row["model"], "unet3d");
    EXPECT_EQ(row["accelerator"], "h100");
    EXPECT_EQ(row["category"], "invalid");
    EXPECT_EQ(row["parameters"]["dataset"]["num_files_train"], 8);
    EXPECT_EQ(row["system_info"]["num_hosts"], 1);
    auto s = ReadJson(row["run_id"].get<std::string>() + "/summary.json");
    EXPECT_EQ(row["num_processes"], s["num_accelerators"]);
    EXPECT_EQ(row["metrics"], s["metric"]);
  }
  // results.csv is what Python's csv.DictWriter writes for those rows after flattening nested keys with "."
  // (mlpstorage's write_csv_file): compared byte for byte.
  if (!HavePython("csv")) GTEST_SKIP() << "python3 not installed";
  auto py = RunPython(dir_, R"(import csv, io, json, math, sys
def flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        key = prefix + "." + k if prefix else k
        if isinstance(v, dict):
            out.update(flat(v, key))
        elif not (isinstance(v, float) and math.isnan(v)):
            out[key] = v
    return out
rows = [flat(r) for r in json.load(open(sys.argv[1]))]
names = set()
for r in rows:
    names.update(r.keys())
buf = io.StringIO()
w = csv.DictWriter(buf, fieldnames=sorted(names), lineterminator="\n")
w.writeheader()
w.writerows(rows)
mine = open(sys.argv[2]).read()
if buf.getvalue() != mine:
    for a, b in zip(buf.getvalue().splitlines(), mine.splitlines()):
        if a != b:
            print("python:  " + a[:400]); print("feedrate:" + b[:400]); break
    sys.exit(1)
print("identical", len(rows))
)", r + "/results.json " + r + "/results.csv");
  EXPECT_EQ(py.code, 0) << py.output;
  EXPECT_NE(py.output.find("identical 6"), std::string::npos) << py.output;
}

TEST_F(SweepRun, MinimumMissingExits3AndRanksModeGoesThroughMpirun) {
  const std::string r = dir_ / "miss";
  // The launcher is one word here (Sh's quoting has no room for a quoted --mpirun); root and oversubscription
  // are allowed through OpenMPI's environment instead.
  auto sweep = Sh("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 " +
                  Sweep("--param metric.au=1.0 --min 2 --mode ranks --collective-timeout 0 --io-thread-policy idle "
                        "--residency off --mpirun " +
                        std::string(FEEDRATE_MPIEXEC), r));
  EXPECT_EQ(sweep.code, 3) << sweep.output << Sh("cat " + r + "/n2_r1.log").output;
  auto j = ReadJson(r + "/sweep.json");
  EXPECT_EQ(j["accelerators_supported"], 0);
  ASSERT_EQ(j["points"].size(), 1u);
  EXPECT_EQ(j["mode"], "ranks");
  const std::string rd = j["points"][0]["runs"][0]["results_dir"];
  auto s = ReadJson(rd + "/summary.json");
  EXPECT_EQ(s["feedrate"]["ranks"], 2);  // two MPI ranks of one accelerator each
  EXPECT_EQ(s["num_accelerators"], 2);
  // 0 is run's "wait forever": forwarded, not taken for "not given" (it once was dropped).
  const std::string cmd = s["feedrate"]["host_facts"]["command_line"];
  EXPECT_NE(cmd.find("--collective-timeout 0"), std::string::npos) << cmd;
  // Run's own table forwards every option as run takes it: a named choice as its name, not the enum CLI11 made of it.
  EXPECT_NE(cmd.find("--io-thread-policy idle"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--residency off"), std::string::npos) << cmd;
  EXPECT_EQ(s["feedrate"]["io_thread_policy"], "idle") << s["feedrate"].dump();
}

// One meaning per option: sweep's --closed is run's (every run refuses to start unless CLOSED; 5 repeats a point),
// and its --hosts takes host names only (the sweep places the ranks; h:ranks is run's form).
TEST_F(SweepRun, ClosedAndHostsMeanWhatTheyMeanInRun) {
  const std::string r = dir_ / "closed";
  auto sweep = Sh(Sweep("--closed", r));
  EXPECT_EQ(sweep.code, 2) << sweep.output;
  EXPECT_NE(sweep.output.find("--closed: the run is INVALID"), std::string::npos) << sweep.output;
  const std::string log = Sh("cat " + r + "/n1_r1.log").output;
  EXPECT_NE(log.find("dataset.num_files_train=8 is below"), std::string::npos) << log;
  auto hosts = Sh(Sweep("--hosts localhost:2", dir_ / "hosts"));
  EXPECT_EQ(hosts.code, 2) << hosts.output;
  EXPECT_NE(hosts.output.find("give host names only"), std::string::npos) << hosts.output;
}

TEST_F(SweepRun, ARunThatFailsStopsTheSweepNamingTheCause) {
  const std::string r = dir_ / "err";
  auto sweep = Sh(Feedrate("sweep -w unet3d_h100 --data-dir " + (dir_ / "nowhere") + kTiny + " --results-dir " + r));
  EXPECT_EQ(sweep.code, 2) << sweep.output;
  EXPECT_NE(sweep.output.find("sweep stopped: run at 1 accelerators failed:"), std::string::npos) << sweep.output;
  EXPECT_NE(sweep.output.find("nowhere"), std::string::npos) << sweep.output;
  EXPECT_TRUE(ReadJson(r + "/sweep.json").contains("stopped"));
  auto bad = Sh(Feedrate("sweep -w unet3d_h100 --data-dir " + data_ + " --param reader.no_such_key=1 --results-dir " + r));
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("no_such_key"), std::string::npos) << bad.output;
}

// A dataset too small for the next count (8 files; total_training_steps=2 of batch 1 needs 2 files an accelerator:
// 4 at most): the sweep answers "4 or more", naming the dataset and the files 5 would need, where it stopped with
// exit 2 at the first count the dataset could not serve and lost the answer it had.
TEST_F(SweepRun, TheDatasetRunningOutEndsTheSearchWithItsAnswer) {
  const std::string r = dir_ / "small";
  auto sweep = Sh(Sweep("--param metric.au=0 --param train.total_training_steps=2", r));
  ASSERT_EQ(sweep.code, 0) << sweep.output;
  EXPECT_NE(sweep.output.find("accelerators supported: 4 or more"), std::string::npos) << sweep.output;
  EXPECT_NE(sweep.output.find("the dataset's 8 files serve at most 4 accelerators"), std::string::npos) << sweep.output;
  EXPECT_NE(sweep.output.find("5 would need 10 files"), std::string::npos) << sweep.output;
  auto j = ReadJson(r + "/sweep.json");
  EXPECT_EQ(j["accelerators_supported"], 4);
  EXPECT_TRUE(j["dataset_limited"].is_string()) << j.dump(1);
  EXPECT_EQ(j["bottleneck"]["limit"], "dataset_size");
}

}  // namespace
}  // namespace feedrate::it
