// Report rendering: SVG charts (one circle per data point, escaped text), HTML and markdown from a Feedrate run,
// a DLIO-named summary and a sweep, with a side-by-side table for several inputs.
#include <gtest/gtest.h>

#include "emulator/report.h"
#include "emulator/svg_chart.h"
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
  EXPECT_NE(md.find("| `" + (dir / "dlio") + "` | dlio run | unet3d | 8 | 88.10 | 2800.0 | fail |"), std::string::npos) << md;
  EXPECT_NE(md.find("accelerators supported: **12**"), std::string::npos) << md;

  auto missing = LoadResultDir(dir / "nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no sweep.json or summary.json"), std::string::npos);
}

}  // namespace
}  // namespace feedrate
