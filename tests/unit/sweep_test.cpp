// Sweep search on fake runners (deterministic pass/fail by accelerator count): bracket, bisect, caps, repeats,
// flaky points, errors, hosts; figures read from a summary.json; the bottleneck verdicts.
#include <gtest/gtest.h>

#include <map>

#include "emulator/sweep/sweep.h"

namespace feedrate {
namespace {

// Passes while accelerators <= threshold; records every call.
struct ThresholdRunner {
  uint64_t threshold;
  std::vector<uint64_t> calls;
  SweepRun operator()(uint64_t n, int /*repeat*/) {
    calls.push_back(n);
    SweepRun r;
    r.exit_code = n <= threshold ? 0 : 3;
    r.au_pct = n <= threshold ? 95 : 80;
    return r;
  }
};

std::vector<uint64_t> Tried(const SweepResult& r) {
  std::vector<uint64_t> v;
  for (const auto& p : r.points) v.push_back(p.accelerators);
  return v;
}

TEST(Sweep, BracketsByDoublingThenBisects) {
  ThresholdRunner t{13, {}};
  SweepResult r = RunSweep({}, std::ref(t));
  EXPECT_EQ(r.accelerators_supported, 13u);
  EXPECT_FALSE(r.capped);
  EXPECT_EQ(Tried(r), (std::vector<uint64_t>{1, 2, 4, 8, 16, 12, 14, 13}));
  EXPECT_EQ(r.stop_code, 0);
}

TEST(Sweep, EveryAnswerFromOneToFortyIsFound) {
  for (uint64_t t = 1; t <= 40; ++t) {
    ThresholdRunner runner{t, {}};
    SweepOptions o;
    o.min = 1;
    SweepResult r = RunSweep(o, std::ref(runner));
    EXPECT_EQ(r.accelerators_supported, t);
    EXPECT_LE(r.points.size(), 2 * 6u + 1) << t;  // log2 bracket + log2 bisect
  }
}

TEST(Sweep, MinimumFailingAnswersZero) {
  ThresholdRunner t{2, {}};
  SweepOptions o;
  o.min = 3;
  SweepResult r = RunSweep(o, std::ref(t));
  EXPECT_EQ(r.accelerators_supported, 0u);
  EXPECT_EQ(Tried(r), (std::vector<uint64_t>{3}));
}

TEST(Sweep, MaxCapsTheSearchAndMarksALowerBound) {
  ThresholdRunner t{1000, {}};
  SweepOptions o;
  o.max = 6;
  SweepResult r = RunSweep(o, std::ref(t));
  EXPECT_EQ(r.accelerators_supported, 6u);
  EXPECT_TRUE(r.capped);
  EXPECT_EQ(Tried(r), (std::vector<uint64_t>{1, 2, 4, 6}));
}

// A dataset that serves no more than 3 accelerators (issue 51: a sweep over 8,400 files passed 16 and died at 32 with
// the answer lost): counts above its bound are not tried, the answer is a lower bound naming the dataset; a bound
// below the minimum stops the sweep with the dataset's reason; the AU bar's own failure still wins below it.
TEST(Sweep, TheDatasetsBoundEndsTheSearchWithALowerBound) {
  ThresholdRunner t{1000, {}};
  SweepOptions o;
  o.dataset_max = 3;
  o.dataset_why = "the dataset's 24 files serve at most 3 accelerators";
  SweepResult r = RunSweep(o, std::ref(t));
  EXPECT_EQ(r.accelerators_supported, 3u);
  EXPECT_TRUE(r.capped);
  EXPECT_TRUE(r.dataset_limited);
  EXPECT_EQ(Tried(r), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(r.stop_code, 0);
  const nlohmann::json j = SweepJson(r, o, 0, {});
  EXPECT_EQ(j["dataset_limited"], o.dataset_why);
  EXPECT_EQ(j["bottleneck"]["limit"], "dataset_size");
  ThresholdRunner low{2, {}};
  SweepResult r2 = RunSweep(o, std::ref(low));
  EXPECT_EQ(r2.accelerators_supported, 2u);
  EXPECT_FALSE(r2.dataset_limited);  // the bar decided, not the dataset
  o.min = 4;
  SweepResult r3 = RunSweep(o, std::ref(t));
  EXPECT_EQ(r3.stop_code, 2);
  EXPECT_EQ(r3.stop_reason, o.dataset_why);
  EXPECT_TRUE(r3.points.empty());
}

TEST(Sweep, RepeatsAllMustPassAndAFlakyRepeatFailsItsPoint) {
  // 4 accelerators pass twice then miss on the third run: the point fails, its remaining repeats are skipped.
  std::map<uint64_t, int> runs;
  SweepRunner flaky = [&](uint64_t n, int repeat) {
    ++runs[n];
    SweepRun r;
    r.exit_code = (n <= 5 && !(n == 4 && repeat == 3)) ? 0 : 3;
    return r;
  };
  SweepOptions o;
  o.repeats = 3;
  std::vector<int> seen;
  o.on_run = [&](const SweepRun& r) { seen.push_back(r.repeat); };
  SweepResult r = RunSweep(o, flaky);
  EXPECT_EQ(Tried(r), (std::vector<uint64_t>{1, 2, 4, 3}));
  EXPECT_EQ(r.accelerators_supported, 3u);
  EXPECT_EQ(runs[1], 3);
  EXPECT_EQ(runs[4], 3);
  EXPECT_FALSE(r.points[2].passed);
  EXPECT_EQ(r.points[2].runs.size(), 3u);
  EXPECT_EQ(seen.size(), 12u);
}

TEST(Sweep, ARunErrorStopsTheSweepWithItsMessage) {
  SweepRunner broken = [](uint64_t n, int) {
    SweepRun r;
    r.exit_code = n >= 4 ? 2 : 0;
    if (n >= 4) r.error = "read buffers would need 30 GiB";
    return r;
  };
  SweepResult r = RunSweep({}, broken);
  EXPECT_EQ(r.stop_code, 2);
  EXPECT_NE(r.stop_reason.find("4 accelerators failed: read buffers would need 30 GiB"), std::string::npos) << r.stop_reason;
  EXPECT_EQ(Tried(r), (std::vector<uint64_t>{1, 2, 4}));
  SweepRunner interrupted = [](uint64_t, int) {
    SweepRun run;
    run.exit_code = 130;
    return run;
  };
  EXPECT_EQ(RunSweep({}, interrupted).stop_code, 130);
}

// A verdict whose failing run was too short for the host's CPU to be read (under 2 s of training) says that the
// client's CPU it quotes is Feedrate's own share only (two CPUs held by other work answered "client CPUs 3% busy").
TEST(Sweep, AVerdictWithoutTheHostsCpuSaysSo) {
  SweepResult r;
  SweepPoint pass{1, {}, true}, fail{2, {}, false};
  SweepRun ok, miss;
  ok.exit_code = 0;
  ok.accelerators = 1;
  miss.exit_code = 3;
  miss.accelerators = 2;
  miss.cpu_utilisation = 0.03;
  pass.runs.push_back(ok);
  fail.runs.push_back(miss);
  r.points = {pass, fail};
  r.accelerators_supported = 1;
  std::string why = SweepBottleneck(r, 0)["explanation"];
  EXPECT_NE(why.find("Feedrate's own share only"), std::string::npos) << why;
  r.points[1].runs[0].host_cpu_measured = true;
  why = SweepBottleneck(r, 0)["explanation"];
  EXPECT_EQ(why.find("Feedrate's own share only"), std::string::npos) << why;
}

// A client busy with other work: Feedrate's own CPU use was 5%, the host's 98% (two busy loops). The verdict names
// the client and the other work, not the storage (it said storage_throughput, "the client's CPUs 5% busy").
TEST(Sweep, ABusyClientIsNamedWithTheOtherWork) {
  auto s = nlohmann::json::parse(R"({"metric": {"train_au_mean_percentage": 40, "train_throughput_mean_samples_per_second": 5},
    "feedrate": {"hosts": [{"hostname": "vm", "host_cpu": {"busy": 0.98, "seconds": 10, "cpus": 2,
      "others_cpu_seconds": 19.1, "others_described": "sh x2 1.9 CPU-s/s"}}]}})");
  SweepRun fail;
  FillSweepRun(s, &fail);
  EXPECT_DOUBLE_EQ(fail.host_cpu_busy, 0.98);
  EXPECT_EQ(fail.other_work, "sh x2 1.9 CPU-s/s");
  fail.accelerators = 8;
  fail.exit_code = 3;
  fail.cpu_utilisation = 0.05;
  fail.read_mib_per_s = 110;
  SweepRun pass;
  pass.accelerators = 4;
  pass.read_mib_per_s = 100;
  SweepResult r;
  r.points = {SweepPoint{4, {pass}, true}, SweepPoint{8, {fail}, false}};
  r.accelerators_supported = 4;
  const auto v = SweepBottleneck(r, 0);
  EXPECT_EQ(v["limit"], "client_cpu") << v.dump(2);
  const std::string why = v["explanation"];
  EXPECT_NE(why.find("98% busy at 8 accelerators (Feedrate's own 5%; other work: sh x2 1.9 CPU-s/s)"), std::string::npos) << why;
  EXPECT_NE(why.find("the client was shared"), std::string::npos) << why;
}

TEST(Sweep, HostsKeepEqualCountsPerHost) {
  ThresholdRunner t{10, {}};  // total accelerators
  SweepOptions o;
  o.hosts = 2;
  SweepResult r = RunSweep(o, std::ref(t));
  for (uint64_t n : t.calls) EXPECT_EQ(n % 2, 0u) << n;
  EXPECT_EQ(r.accelerators_supported, 10u);
}

TEST(Sweep, FiguresComeFromTheRunSummary) {
  auto s = nlohmann::json::parse(R"({
    "host_cpu_count": [4, 2],
    "metric": {"train_au_mean_percentage": 91.5, "train_throughput_mean_samples_per_second": 123.0},
    "feedrate": {"read_mib_per_s": 2048.0, "wall_seconds": 10.0, "cpu_seconds": 30.0,
                 "stall_seconds": {"p50": 0.001, "p99": 0.02},
                 "cpu_affinity": [{"host": "a", "allowed_cpus": 1}, {"host": "a", "allowed_cpus": 1},
                                  {"host": "b", "allowed_cpus": 8}],
                 "epochs": [{"bytes_read": 300, "resident_fraction": 0.0},
                            {"bytes_read": 100, "resident_fraction": 1.0},
                            {"bytes_read": 999, "resident_fraction": null}]}})");
  SweepRun r;
  FillSweepRun(s, &r);
  // Bytes-weighted over the epochs that sampled residency: 100 of 400 bytes were resident.
  EXPECT_DOUBLE_EQ(r.cache_served, 0.25);
  EXPECT_DOUBLE_EQ(r.au_pct, 91.5);
  EXPECT_DOUBLE_EQ(r.throughput, 123.0);
  EXPECT_DOUBLE_EQ(r.read_mib_per_s, 2048.0);
  EXPECT_DOUBLE_EQ(r.stall_p99, 0.02);
  // Usable CPUs: host a min(4, 1+1) = 2, host b min(2, 8) = 2; 30 CPU-s over 10 s x 4 CPUs.
  EXPECT_DOUBLE_EQ(r.cpu_utilisation, 0.75);
}

TEST(Sweep, BottleneckTellsClientCpuFromStorageFromLatency) {
  auto result_with = [](double cpu, double mib, double pass_mib = 0) {
    SweepResult r;
    SweepPoint pass{4, {SweepRun{}}, true}, fail{8, {SweepRun{}}, false};
    pass.runs[0].accelerators = 4;
    pass.runs[0].read_mib_per_s = pass_mib;
    fail.runs[0].accelerators = 8;
    fail.runs[0].exit_code = 3;
    fail.runs[0].cpu_utilisation = cpu;
    fail.runs[0].read_mib_per_s = mib;
    r.points = {pass, fail};
    r.accelerators_supported = 4;
    return r;
  };
  EXPECT_EQ(SweepBottleneck(result_with(0.95, 100), 0)["limit"], "client_cpu");
  auto storage = SweepBottleneck(result_with(0.3, 1900), 2000);
  EXPECT_EQ(storage["limit"], "storage_bandwidth");
  EXPECT_NEAR(storage["first_fail"]["fraction_of_storage_ceiling"].get<double>(), 0.95, 1e-9);
  EXPECT_EQ(SweepBottleneck(result_with(0.3, 500), 2000)["limit"], "latency");
  EXPECT_EQ(SweepBottleneck(result_with(0.3, 500), 0)["limit"], "storage_or_latency");
  // Twice the accelerators but 1.1x the MiB/s, CPU to spare: the storage stopped scaling (no ceiling needed).
  auto plateau = SweepBottleneck(result_with(0.3, 1100, 1000), 0);
  EXPECT_EQ(plateau["limit"], "storage_throughput");
  EXPECT_NE(plateau["explanation"].get<std::string>().find("grew 1.10x"), std::string::npos) << plateau["explanation"];
  EXPECT_EQ(SweepBottleneck(result_with(0.3, 1950, 1000), 0)["limit"], "storage_or_latency");  // it did scale
  // Just past a soft knee: 6 -> 8 gave 1.23x the MiB/s for 1.33x the count (not below 0.9x of it), but each of the
  // 8 got 0.82x what each got at 2: the bandwidth stopped following (a CI shaped link, called latency before).
  {
    SweepResult knee;
    auto run_at = [](uint64_t n, double mib, bool passed) {
      SweepRun run;
      run.accelerators = n;
      run.read_mib_per_s = mib;
      run.cpu_utilisation = 0.04;
      run.exit_code = passed ? 0 : 3;
      return SweepPoint{n, {run}, passed};
    };
    knee.points = {run_at(2, 3.86, true), run_at(4, 7.5, true), run_at(8, 12.67, false), run_at(6, 10.30, true)};
    auto v = SweepBottleneck(knee, 0);
    EXPECT_EQ(v["limit"], "storage_throughput") << v.dump(2);
    EXPECT_NE(v["explanation"].get<std::string>().find("0.82x the MiB/s it got at 2"), std::string::npos) << v.dump(2);
    // Latency instead: every count got about the same per accelerator.
    knee.points = {run_at(2, 3.5, true), run_at(4, 7.0, true), run_at(8, 13.6, false), run_at(6, 10.4, true)};
    EXPECT_EQ(SweepBottleneck(knee, 0)["limit"], "storage_or_latency");
  }
  // The same plateau with the bytes arriving over the hosts' network interfaces: the network path.
  auto over_network = result_with(0.3, 1100, 1000);
  over_network.points[1].runs[0].net_rx_mib_per_s = 1150;
  over_network.points[1].runs[0].hosts = nlohmann::json::array({{{"hostname", "a"}}, {{"hostname", "b"}}});
  auto net = SweepBottleneck(over_network, 0);
  EXPECT_EQ(net["limit"], "network");
  EXPECT_NE(net["explanation"].get<std::string>().find("received 1150.0 MiB/s (575.0 per host)"), std::string::npos)
      << net["explanation"];
  over_network.points[1].runs[0].net_rx_mib_per_s = 10;  // local storage: the NICs carried almost nothing
  EXPECT_EQ(SweepBottleneck(over_network, 0)["limit"], "storage_throughput");
  auto j = SweepJson(result_with(0.3, 500), {}, 0);
  EXPECT_EQ(j["accelerators_supported"], 4);
  EXPECT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][1]["runs"][0]["exit_code"], 3);
}

// Issue 22 item 5: a sweep whose points read from what earlier points left in the page cache is not a storage answer.
TEST(Sweep, PointsServedByThePageCacheAreNamedAndTheAnswerIsNotTheStorages) {
  auto point = [](uint64_t n, bool passed, double share) {
    SweepPoint p{n, {SweepRun{}}, passed};
    p.runs[0].accelerators = n;
    p.runs[0].exit_code = passed ? 0 : 3;
    p.runs[0].read_mib_per_s = 100.0 * static_cast<double>(n);
    p.runs[0].cpu_utilisation = 0.2;
    p.runs[0].cache_served = share;
    p.runs[0].validity = "CLOSED";
    return p;
  };
  SweepResult r;
  r.points = {point(1, true, 0.01), point(2, true, 0.47), point(4, false, 0.16)};
  r.accelerators_supported = 2;
  SweepOptions o;
  o.repeats = 5;
  const SweepCache keep{"keep", "ext4", false, 0.05};
  auto j = SweepJson(r, o, 0, keep);
  EXPECT_EQ(j["cache"]["storage_answer"], false);
  ASSERT_EQ(j["cache"]["cache_served_points"].size(), 2u);
  EXPECT_EQ(j["cache"]["cache_served_points"][0]["accelerators"], 2);
  EXPECT_DOUBLE_EQ(j["cache"]["cache_served_points"][1]["cache_served"].get<double>(), 0.16);
  EXPECT_NE(j["cache"]["explanation"].get<std::string>().find("2 accelerators 47%, 4 accelerators 16%"), std::string::npos)
      << j["cache"]["explanation"];
  // The deciding points were served from memory: the verdict says so instead of "the storage stopped scaling".
  EXPECT_EQ(j["bottleneck"]["limit"], "page_cache");
  EXPECT_NE(j["bottleneck"]["explanation"].get<std::string>().find("47% of the bytes read at 2 accelerators"),
            std::string::npos) << j["bottleneck"]["explanation"];
  EXPECT_EQ(j["validity"]["category"], "INVALID");
  EXPECT_NE(j["validity"]["reasons"].dump().find("not a storage answer"), std::string::npos) << j["validity"];
  EXPECT_EQ(j["points"][1]["runs"][0]["cache_served"], 0.47);

  // The same shares on tmpfs: memory is the storage, so nothing is counted against the answer.
  auto tmpfs = SweepJson(r, o, 0, SweepCache{"keep", "tmpfs", true, 0.05});
  EXPECT_EQ(tmpfs["cache"]["storage_answer"], true);
  EXPECT_TRUE(tmpfs["cache"]["cache_served_points"].empty());
  EXPECT_NE(tmpfs["cache"]["explanation"].get<std::string>().find("on tmpfs"), std::string::npos);
  EXPECT_NE(tmpfs["bottleneck"]["limit"], "page_cache");
  EXPECT_EQ(tmpfs["validity"]["category"], "CLOSED");

  // Cold points (at most the limit): a storage answer; the largest share is quoted.
  r.points[1].runs[0].cache_served = 0.02;
  r.points[2].runs[0].cache_served = 0.05;
  auto cold = SweepJson(r, o, 0, SweepCache{"drop-once", "ext4", false, 0.05});
  EXPECT_EQ(cold["cache"]["storage_answer"], true);
  EXPECT_EQ(cold["bottleneck"]["limit"], "storage_or_latency");
  EXPECT_NE(cold["cache"]["explanation"].get<std::string>().find("every point started cold (--cache drop-once); the "
                                                                  "page cache served at most 5%"), std::string::npos)
      << cold["cache"]["explanation"];
  // Residency not sampled: unknown, said so, not counted.
  for (auto& p : r.points) p.runs[0].cache_served = -1;
  auto unknown = SweepCacheVerdict(r, SweepCache{"keep", "ext4", false, 0.05});
  EXPECT_EQ(unknown["storage_answer"], true);
  EXPECT_NE(unknown["explanation"].get<std::string>().find("not sampled"), std::string::npos) << unknown;
}

}  // namespace
}  // namespace feedrate
