// `feedrate report` end to end: from a real run (with its per-step log) and a DLIO-named result dir to HTML +
// markdown, rendered by headless Chromium (where installed): the page loads, its charts hold the expected data
// points, and a screenshot is kept as a test artifact (build/<preset>/test-artifacts/report.png).
#include <gtest/gtest.h>

#include <sstream>

#include <filesystem>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Report, RunAndDlioDirsRenderInHeadlessChromium) {
  test::TempDir dir;
  const std::string data = dir / "d", run = dir / "run";
  const std::string ds = SmallDatasetParams(8, 65536);
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + " " + ds)).code, 0);
  auto r = Sh(Feedrate("run -w unet3d_h100 --data-dir " + data + " " + ds +
                       " --param reader.batch_size=1 --param train.epochs=3 --param train.computation_time=0.001"
                       " --quiet --results-dir " + run));
  ASSERT_TRUE(r.code == 0 || r.code == 3) << r.output;
  // A DLIO result dir: its summary.json under DLIO's names only.
  fs::create_directories(dir / "dlio");
  test::WriteFile(dir / "dlio/summary.json",
                  R"({"num_accelerators": 8, "model": "unet3d", "hostname": "c1", "num_hosts": 1,
                      "metric": {"train_au_percentage": [91.2, 92.5, 90.1, 93.0, 92.2], "train_au_mean_percentage": 91.8,
                                 "train_throughput_mean_samples_per_second": 21.5, "train_io_mean_MB_per_second": 2930.1,
                                 "train_au_meet_expectation": "success"}})");
  const std::string html = dir / "out/report.html";
  auto rep = Sh(Feedrate("report " + run + " " + (dir / "dlio") + " -o " + html));
  ASSERT_EQ(rep.code, 0) << rep.output;
  const std::string page = test::ReadFile(html);
  const std::string md = test::ReadFile(dir / "out/report.md");
  EXPECT_NE(md.find("dlio run | unet3d | 8 | 91.80"), std::string::npos) << md;
  // Run: AU per epoch (mean/min/max x 3 epochs), MiB/s (3), epoch 1's stall timeline (mean and max per step);
  // DLIO: AU per epoch (5). Plus the run's stall histogram: 20 bars from steps.csv.
  const auto steps = ReadJson(run + "/summary.json")["feedrate"]["steps_per_epoch"].get<size_t>();
  ASSERT_TRUE(fs::exists(run + "/steps.csv"));
  // And the time series: MiB/s and stall % per interval, from timeseries.csv's "all" rows.
  size_t intervals = 0;
  {
    std::istringstream ts(test::ReadFile(run + "/timeseries.csv"));
    for (std::string line; std::getline(ts, line);) intervals += line.rfind("all,", 0) == 0 ? 1 : 0;
  }
  ASSERT_GT(intervals, 0u);
  const size_t points = 9 + 3 + 2 * steps + 5 + 2 * intervals;
  EXPECT_EQ(Count(page, "<circle class=\"pt\""), points);
  EXPECT_EQ(Count(page, "<rect class=\"bar\""), 20u);
  EXPECT_NE(page.find("kernel, data file system"), std::string::npos);

  if (std::string(FEEDRATE_CHROMIUM).empty()) GTEST_SKIP() << "chromium not installed: rendering not checked";
  const std::string chrome = std::string(FEEDRATE_CHROMIUM) +
                             " --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run"
                             " --disable-dev-shm-usage ";
  auto dom = Sh(chrome + "--dump-dom file://" + html + " 2>/dev/null");
  ASSERT_EQ(dom.code, 0) << dom.output;
  EXPECT_NE(dom.output.find("<h1>Feedrate report</h1>"), std::string::npos);
  EXPECT_EQ(Count(dom.output, "class=\"pt\""), points);  // the browser parsed every chart's points
  EXPECT_EQ(Count(dom.output, "class=\"bar\""), 20u);
  EXPECT_EQ(Count(dom.output, "<svg"), 7u);
  fs::create_directories(FEEDRATE_ARTIFACTS);
  const std::string shot = std::string(FEEDRATE_ARTIFACTS) + "/report.png";
  fs::remove(shot);
  auto png = Sh(chrome + "--window-size=1200,2400 --screenshot=" + shot + " file://" + html + " 2>/dev/null");
  ASSERT_EQ(png.code, 0) << png.output;
  const std::string bytes = test::ReadFile(shot);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
}

TEST(Report, MissingResultsAreAClearError) {
  test::TempDir dir;
  auto rep = Sh(Feedrate("report " + (dir / "none")));
  EXPECT_EQ(rep.code, 2);
  EXPECT_NE(rep.output.find("none: no sweep.json or summary.json"), std::string::npos) << rep.output;
}

}  // namespace
}  // namespace feedrate::it
