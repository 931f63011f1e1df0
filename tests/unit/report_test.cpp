// Report rendering: SVG charts (one circle per data point, escaped text), HTML and markdown from a Feedrate run,
// a DLIO-named summary and a sweep, with a side-by-side table for several inputs.
#include <gtest/gtest.h>

#include "emulator/report/report.h"
#include "emulator/report/svg_chart.h"
#include "emulator/results/mlperf_export.h"
#include "emulator/results/result_dirs.h"
#include "emulator/results/results.h"
#include "test_util.h"

namespace feedrate {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(SvgChart, OnePointPerValueAndEscapedText) {
  Chart c{"AU <per> epoch", "epoch", "AU %", {{"a&b", {{1, 90}, {2, 95}, {3, 99}}, "#000"}, {"min", {{1, 80}}, "#f00"}},
          true, 90, "bar"};
  std::string svg = RenderSvgChart(c);
  EXPECT_EQ(Count(svg, "<circle class=\"pt\""), 4u);
  EXPECT_NE(svg.find("data-points=\"4\""), std::string::npos);
  EXPECT_NE(svg.find("AU &lt;per&gt; epoch"), std::string::npos);
  EXPECT_NE(svg.find("a&amp;b"), std::string::npos);
  EXPECT_EQ(svg.find("AU <per>"), std::string::npos);
  EXPECT_EQ(Count(svg, "class=\"ref\""), 1u);
}

TEST(Report, RunsSweepsAndDlioSummariesSideBySide) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "run");
  test::WriteFile(dir / "run/summary.json", R"({"num_accelerators": 4, "num_hosts": 1, "hostname": "h",
    "metric": {"train_au_mean_percentage": 93.5, "train_au_percentage": [92, 95],
               "train_throughput_mean_samples_per_second": 12.5, "train_au_meet_expectation": "success"},
    "feedrate": {"workload": "unet3d_h100", "status": "success", "read_mib_per_s": 1500, "engine": "uring",
                 "validity": {"category": "OPEN", "reasons": ["OPEN: override of feedrate.order"]},
                 "config": {"metric": {"au": 0.9}}, "stall_seconds": {"p50": 0.001, "p99": 0.01}}})");
  test::WriteFile(dir / "run/per_epoch.csv",
                  "epoch,train_au_percentage,au_min_percentage,au_max_percentage,train_throughput_samples_per_second,"
                  "throughput_corrected_samples_per_second,train_io_MB_per_second,bytes_read,read_mib_per_second,seconds\n"
                  "1,92,90,94,12,12,100,1000,1400,2\n2,95,94,96,13,13,100,1000,1600,2\n");
  std::filesystem::create_directories(dir / "dlio");
  test::WriteFile(dir / "dlio/summary.json", R"({"num_accelerators": 8, "model": "unet3d", "hostname": "d",
    "metric": {"train_au_mean_percentage": 88.1, "train_au_percentage": [87, 88, 89.3],
               "train_throughput_mean_samples_per_second": 20, "train_io_mean_MB_per_second": 2800,
               "train_au_meet_expectation": "fail"}})");
  std::filesystem::create_directories(dir / "sweep");
  test::WriteFile(dir / "sweep/sweep.json", R"({"workload": "unet3d_a100", "accelerators_supported": 12, "au_bar_pct": 90,
    "lower_bound_only": false, "validity": {"category": "INVALID", "reasons": ["INVALID: 1 run(s) per point"]},
    "bottleneck": {"limit": "client_cpu", "explanation": "busy", "storage_ceiling_mib_per_s": 18000},
    "points": [{"accelerators": 8, "passed": true, "runs": [{"repeat": 1, "exit_code": 0, "au_pct": 95, "read_mib_per_s": 11000}]},
               {"accelerators": 16, "passed": false, "runs": [{"repeat": 1, "exit_code": 3, "au_pct": 76, "read_mib_per_s": 18000}]},
               {"accelerators": 12, "passed": true, "runs": [{"repeat": 1, "exit_code": 0, "au_pct": 95.1, "read_mib_per_s": 17000}]}]})");
  std::vector<ReportInput> inputs;
  for (const char* d : {"run", "dlio", "sweep"}) {
    auto in = LoadResultDir(dir / d);
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    inputs.push_back(*in);
  }
  EXPECT_EQ(inputs[0].kind, "feedrate run");
  EXPECT_EQ(inputs[1].kind, "dlio run");
  EXPECT_EQ(inputs[2].kind, "feedrate sweep");
  ASSERT_EQ(inputs[0].epochs.size(), 2u);
  EXPECT_DOUBLE_EQ(inputs[0].epochs[1].read_mib_per_s, 1600);

  const std::string html = RenderReportHtml(inputs);
  // Charts: run AU (3 series x 2 epochs) + run MiB/s (2), DLIO AU (3), sweep AU (3) + sweep MiB/s (3).
  EXPECT_EQ(Count(html, "<circle class=\"pt\""), 6u + 2 + 3 + 3 + 3);
  EXPECT_EQ(Count(html, "<svg"), 5u);
  EXPECT_NE(html.find("id=\"comparison\""), std::string::npos);
  EXPECT_NE(html.find("Accelerators supported: <b>12</b>"), std::string::npos);
  EXPECT_NE(html.find("override of feedrate.order"), std::string::npos);
  // Self-contained: nothing is fetched (the only URL is the SVG namespace name).
  EXPECT_EQ(Count(html, "http"), Count(html, "http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("<script"), std::string::npos);

  const std::string md = RenderReportMarkdown(inputs);
  EXPECT_NE(md.find("| " + (dir / "dlio") + " | dlio run | unet3d | 8 | 88.10 | 2800.0 | fail |"), std::string::npos) << md;
  EXPECT_NE(md.find("accelerators supported: **12**"), std::string::npos) << md;

  auto missing = LoadResultDir(dir / "nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no sweep.json or summary.json"), std::string::npos);
}

// A DLIO run dir as DLIO 2.0 and mlpstorage leave it: summary.json, {rank}_output.json per rank (blocks split by
// checkpoints, an eval entry), and the Hydra config under dlio_config/.
TEST(Report, DlioPerRankOutputAndHydraConfig) {
  test::TempDir dir;
  const std::string d = dir / "dlio";
  std::filesystem::create_directories(d + "/dlio_config");
  test::WriteFile(d + "/summary.json", R"({"num_accelerators": 2, "hostname": "c1", "num_hosts": 1, "start": "2025-06-01T10:00:00",
    "host_memory_GB": [256.0], "host_cpu_count": [64],
    "metric": {"train_au_percentage": [90.5, 80.0], "train_au_mean_percentage": 85.25,
               "train_throughput_mean_samples_per_second": 10.0, "train_io_mean_MB_per_second": 1280.0,
               "train_au_meet_expectation": "fail", "train_au_stdev_percentage": NaN}})");
  // Rank 0: epoch 1 in two blocks (3 + 1 steps); rank 1: one block. block10 sorts before block2 as text.
  test::WriteFile(d + "/0_output.json", R"({"1": {"load": {"block1": [0.5, 0.01, 0.02], "block2": [0.03]},
      "proc": {"block1": [1, 1, 1], "block2": [1]}, "au": {"block1": 90.0, "block2": 94.0},
      "throughput": {"block1": 4.0, "block2": 8.0}, "compute": {"block1": [], "block2": []}},
    "2": {"load": {"block1": [0.4, 0.2]}, "proc": {"block1": [1, 1]}, "au": {"block1": 70.0, "eval": 10.0},
          "throughput": {"block1": 3.0}},
    "hostname": "c1"})");
  test::WriteFile(d + "/1_output.json", R"({"1": {"load": {"block1": [0.1, 0.1, 0.1, 0.1]}, "proc": {"block1": [1, 1, 1, 1]},
      "au": {"block1": 91.0}, "throughput": {"block1": 5.0}},
    "2": {"load": {"block1": [0.3, 0.3]}, "proc": {"block1": [1, 1]}, "au": {"block1": 90.0}, "throughput": {"block1": 5.0}},
    "hostname": "c1"})");
  test::WriteFile(d + "/dlio_config/config.yaml", "workload:\n  model:\n    name: unet3d\n  dataset:\n    num_files_train: 42\n"
                                                 "  reader:\n    read_threads: 8\n    odirect: true\n");
  test::WriteFile(d + "/dlio_config/overrides.yaml", "- workload=unet3d_h100\n- ++workload.dataset.num_files_train=42\n");
  auto in = LoadResultDir(d);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->kind, "dlio run");
  EXPECT_EQ(in->dlio_rank_files, 2);
  ASSERT_EQ(in->epochs.size(), 2u);
  // Epoch 1: rank 0 = (3*90 + 1*94)/4 = 91, rank 1 = 91; samples/s (3*4+8)/4 = 5 + 5.
  EXPECT_DOUBLE_EQ(in->epochs[0].au_pct, 91.0);
  EXPECT_DOUBLE_EQ(in->epochs[0].samples_per_s, 10.0);
  EXPECT_DOUBLE_EQ(in->epochs[0].read_mib_per_s, 10.0 * 128);  // 1280 MB/s / 10 samples/s = 128 MiB per sample
  // Epoch 2: 70 and 90 (eval left out).
  EXPECT_DOUBLE_EQ(in->epochs[1].au_pct, 80.0);
  EXPECT_DOUBLE_EQ(in->epochs[1].au_min_pct, 70.0);
  EXPECT_DOUBLE_EQ(in->epochs[1].au_max_pct, 90.0);
  ASSERT_EQ(in->steps.size(), 4u + 2 + 4 + 2);
  EXPECT_EQ(in->steps[3].step, 4);  // block2's step continues block1's numbering
  EXPECT_DOUBLE_EQ(in->steps[0].stall_seconds, 0.5);

  const std::string html = RenderReportHtml({*in});
  EXPECT_NE(html.find("per-rank outputs</th><td>2"), std::string::npos);
  EXPECT_EQ(Count(html, "<rect class=\"bar\""), 20u);  // the load-time histogram

  const nlohmann::json row = MlperfRunRow(*in);
  EXPECT_EQ(row["model"], "unet3d");
  EXPECT_EQ(row["accelerator"], "h100");
  EXPECT_EQ(row["num_processes"], 2);
  EXPECT_EQ(row["parameters"]["dataset"]["num_files_train"], 42);
  EXPECT_EQ(row["parameters"]["reader"]["odirect"], true);
  EXPECT_EQ(row["system_info"]["total_memory_bytes"], int64_t{256} << 30);
  EXPECT_EQ(row["system_info"]["total_cores"], 64);
  EXPECT_EQ(row["system_info"]["collection_method"], "dlio_summary");
  EXPECT_EQ(row["tool"], "dlio");

  // Python's NaN (DLIO's numpy statistics) reads as null.
  EXPECT_TRUE(row["metrics"]["train_au_stdev_percentage"].is_null());
  // CSV: dotted columns, sorted; lists as Python prints them; bools True/False.
  const std::string csv = MlperfResultsCsv(nlohmann::json::array({row}));
  const std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_NE(header.find("metrics.train_au_percentage"), std::string::npos) << header;
  EXPECT_LT(header.find("accelerator,"), header.find("benchmark_type"));
  EXPECT_NE(csv.find("\"[90.5, 80.0]\""), std::string::npos) << csv;
  EXPECT_NE(csv.find(",True,"), std::string::npos) << csv;
}

namespace feedrate {
namespace {

// A run with per-epoch storage figures and a time series gets the "what served the bytes" part and its charts.
TEST(Report, WhatServedTheBytes) {
  ReportInput in;
  in.dir = "r";
  in.kind = "feedrate run";
  in.summary = nlohmann::json::parse(R"({"feedrate": {"cache_mode": "drop",
      "cache": {"check": {"resident_before": 0.9, "resident_after": 0.0, "effective": true}},
      "loader_vs_device": "loader read 2.00 GiB, devices delivered 1.00 GiB",
      "devices": [{"host": "h1", "kind": "block", "device": "nvme0n1", "model": "Fast SSD"}],
      "epochs": [{"epoch": 1, "read_mib_per_s": 100.0, "resident_fraction": 0.0, "bytes_read": 1073741824, "device_bytes_read": 1073741824},
                 {"epoch": 2, "read_mib_per_s": 900.0, "resident_fraction": 1.0, "bytes_read": 1073741824, "device_bytes_read": null}]}})");
  in.timeseries = {{1, 100, 50}, {2, 120, 40}, {3, 900, 0}};
  const std::string html = StorageHtml(in);
  EXPECT_NE(html.find("What served the bytes"), std::string::npos);
  EXPECT_NE(html.find("loader read 2.00 GiB, devices delivered 1.00 GiB"), std::string::npos);
  EXPECT_NE(html.find("nvme0n1, Fast SSD"), std::string::npos);
  EXPECT_NE(html.find("<td>100.0%</td>"), std::string::npos);  // epoch 2 resident
  EXPECT_NE(html.find("<td>n/a</td>"), std::string::npos);     // no device counter in epoch 2
  EXPECT_NE(html.find("data-points=\"3\""), std::string::npos);  // the time series
  const std::string md = StorageMarkdown(in);
  EXPECT_NE(md.find("| 2 | 900.0 | 100.0% | n/a |"), std::string::npos) << md;
  ReportInput bare;
  bare.summary = nlohmann::json::parse(R"({"feedrate": {}})");
  EXPECT_EQ(StorageHtml(bare), "");
  // An S3 run says where the bytes came from and how many GETs it took.
  ReportInput s3 = in;
  s3.summary["feedrate"]["s3"] = {{"location", "s3://bkt/unet"}, {"get_requests", 224.0}, {"retries", 3.0}};
  const std::string line = "S3 s3://bkt/unet: 224 ranged GETs, 3 retries (no client page cache";
  EXPECT_NE(StorageHtml(s3).find(line), std::string::npos) << StorageHtml(s3);
  EXPECT_NE(StorageMarkdown(s3).find(line), std::string::npos) << StorageMarkdown(s3);
  EXPECT_EQ(StorageMarkdown(in).find("ranged GETs"), std::string::npos);
}

// A run on several hosts gets a per-host table and the step barrier's cost; one host gets neither.
TEST(Report, PerHostTableForMultiHostRuns) {
  ReportInput in;
  in.summary = nlohmann::json::parse(R"({"feedrate": {
      "hosts": [{"hostname": "node-a", "ranks": 2, "accelerators": 4, "read_mib_per_s": 512.25, "net_rx_mib_per_s": 530.0,
                 "au_min_pct": 91.0, "au_mean_pct": 95.5, "au_max_pct": 99.0, "cpu_utilisation": 0.25, "start_skew_seconds": 0.0},
                {"hostname": "node-b", "ranks": 2, "accelerators": 4, "read_mib_per_s": 500.0, "net_rx_mib_per_s": 520.0,
                 "au_min_pct": 90.0, "au_mean_pct": 94.0, "au_max_pct": 98.0, "cpu_utilisation": 0.5, "start_skew_seconds": 0.0125}],
      "step_barrier": {"mode": "hierarchical", "calibration_flat_us": {"p50": 140.0, "p99": 300.0},
                       "calibration_hierarchical_us": {"p50": 120.0, "p99": 250.0}}}})");
  const std::string md = HostsMarkdown(in);
  EXPECT_NE(md.find("| node-a | 2 | 4 | 512.2 | 530.0 | 91.0 / 95.5 / 99.0 | 25% | 0.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| node-b | 2 | 4 | 500.0 | 520.0 | 90.0 / 94.0 / 98.0 | 50% | 12.5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("step barrier: hierarchical, flat p50 140 us (p99 300), hierarchical p50 120 us (p99 250)"),
            std::string::npos) << md;
  EXPECT_NE(HostsHtml(in).find("<td>node-b</td>"), std::string::npos);
  in.summary["feedrate"]["hosts"].erase(1);
  EXPECT_EQ(HostsMarkdown(in), "");
  EXPECT_EQ(HostsHtml(in), "");
}

// The CSV's numbers are Python's repr: shortest round-trip digits. nlohmann::json's Grisu2 digits are longer for
// these (46.494247196141536, 275.37771434183003, ...: a measured figure like these made the sweep test's export
// comparison with Python's csv module fail now and then); expected values from Python 3.11's repr.
TEST(MlperfExport, FloatsAreWrittenAsPythonReprWritesThem) {
  EXPECT_EQ(PythonFloatRepr(0x1.73f437dfbc8a7p+5), "46.49424719614154");
  EXPECT_EQ(PythonFloatRepr(0x1.1360b1e31963ep+8), "275.37771434183");
  EXPECT_EQ(PythonFloatRepr(0x1.30b1a9a331eb7p+4), "19.04337466953322");
  EXPECT_EQ(PythonFloatRepr(-0x1.eee2ef34f7de3p+49), "-1088266839912380.4");
  EXPECT_EQ(PythonFloatRepr(-0x1.e99c501e62893p-757), "-2.522923758208279e-228");
  EXPECT_EQ(PythonFloatRepr(0x1.70052f3885543p+802), "3.8343192976162206e+241");
  EXPECT_EQ(PythonFloatRepr(90.0), "90.0");
  EXPECT_EQ(PythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatRepr(2.5e-4), "0.00025");
  EXPECT_EQ(PythonFloatRepr(1.5e-05), "1.5e-05");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(123.456), "123.456");
  EXPECT_EQ(PythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PythonFloatRepr(0.0), "0.0");
}

}  // namespace
}  // namespace feedrate

// A completed run's record must carry its metrics, whether it says "missed_au" or the "fail" of older records; a
// failed run's need not. (The statuses differ by more than a letter since 2026-12-05.)
TEST(Report, CompletedRecordsOldAndNewNeedTheirMetrics) {
  test::TempDir dir;
  for (const char* status : {"missed_au", "fail", "success", "failed", "interrupted"}) {
    const std::string d = dir / status;
    std::filesystem::create_directories(d);
    test::WriteFile(d + "/summary.json", std::string(R"({"num_accelerators": 1, "feedrate": {"status": ")") + status +
                                             R"(", "workload": "unet3d_h100"}})");
    const bool completed = std::string(status) == "missed_au" || std::string(status) == "fail" || std::string(status) == "success";
    auto in = LoadResultDir(d);
    EXPECT_EQ(in.ok(), !completed) << status << ": " << in.status().ToString();
    if (completed) {
      EXPECT_NE(in.status().ToString().find("train_au_mean_percentage"), std::string::npos) << in.status().ToString();
    }
  }
  EXPECT_TRUE(CompletedStatus(kStatusMissedAu) && CompletedStatus("fail") && !CompletedStatus(kStatusFailed));
}

}  // namespace
}  // namespace feedrate
