// The live metrics endpoint (--metrics-listen) as users watch it: a real Prometheus server (Debian's) scrapes a
// two-rank run every second, and its queries at the end equal summary.json's figures.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "harness.h"

namespace feedrate::it {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A loopback port nobody listens on, with the one after it free too (a host's second rank serves PORT+1).
int FreePortPair() {
  for (int tries = 0; tries < 50; ++tries) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    const int port = ntohs(a.sin_port);
    const int next = ::socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons(static_cast<uint16_t>(port + 1));
    const bool free = port < 65535 && ::bind(next, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(next);
    ::close(fd);
    if (free) return port;
  }
  return 0;
}

// A Prometheus server on 127.0.0.1:`port` scraping `targets` every second, stopped when this goes.
class Prometheus {
 public:
  Prometheus(const test::TempDir& dir, int port, const std::vector<std::string>& targets) : port_(port) {
    std::string list;
    for (const auto& t : targets) list += (list.empty() ? "'" : ", '") + t + "'";
    test::WriteFile(dir / "prometheus.yml", "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
                                            "scrape_configs:\n  - job_name: feedrate\n    static_configs:\n"
                                            "      - targets: [" + list + "]\n");
    const auto r = Sh(std::string(FEEDRATE_PROMETHEUS) + " --config.file=" + (dir / "prometheus.yml") +
                      " --storage.tsdb.path=" + (dir / "tsdb") + " --web.listen-address=127.0.0.1:" +
                      std::to_string(port) + " --log.level=warn > " + (dir / "prometheus.log") + " 2>&1 & echo $!");
    pid_ = std::atoi(r.output.c_str());
  }
  ~Prometheus() {
    if (pid_ > 0) Sh("kill " + std::to_string(pid_) + "; sleep 0.5; kill -9 " + std::to_string(pid_) + " 2>/dev/null; true");
  }
  bool Ready() const {
    for (int i = 0; i < 60; ++i) {
      if (Sh("curl -sf http://127.0.0.1:" + std::to_string(port_) + "/-/ready").code == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return false;
  }
  // The one value of an instant PromQL query (NaN when it has none).
  double Query(const std::string& promql) const {
    const auto r = Sh("curl -sf http://127.0.0.1:" + std::to_string(port_) + "/api/v1/query --data-urlencode 'query=" +
                      promql + "'");
    const auto j = nlohmann::json::parse(r.output, nullptr, false);
    if (j.is_discarded() || j["data"]["result"].size() != 1) return std::nan("");
    return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
  }

 private:
  int port_;
  int pid_ = 0;
};

TEST(MetricsEndpoint, PrometheusQueriesEqualTheSummary) {
  if (std::string(FEEDRATE_PROMETHEUS).empty()) GTEST_SKIP() << "prometheus not installed (scripts/install-test-extras.sh)";
  test::TempDir dir;
  const int port = FreePortPair(), prom_port = FreePortPair();
  ASSERT_GT(port, 0);
  ASSERT_GT(prom_port, 0);
  Prometheus prom(dir, prom_port, {"127.0.0.1:" + std::to_string(port), "127.0.0.1:" + std::to_string(port + 1)});
  ASSERT_TRUE(prom.Ready()) << Sh("cat " + (dir / "prometheus.log")).output;
  const std::string shape = SmallDatasetParams(16, 65536);
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + (dir / "data") + " " + shape)).code, 0);
  // 4 accelerators over 2 ranks, 2 steps an epoch of 0.5 s, 8 epochs: about 8 scrapes a rank while training (the
  // first can come a scrape interval after the endpoint opens), then the one the run waits for.
  const auto run = Sh(MpiFeedrate(2, "run -w unet3d_h100 --data-dir " + (dir / "data") + " " + shape +
                                          " --param reader.batch_size=2 --param train.epochs=8 --param train.computation_time=0.5"
                                         " -n 2 --quiet --results-dir " + (dir / "r") + " --metrics-listen 127.0.0.1:" +
                                         std::to_string(port) + " --metrics-hold 30"), 120);
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  EXPECT_NE(run.output.find("metrics at http://127.0.0.1:" + std::to_string(port) + "/metrics"), std::string::npos) << run.output;
  const auto s = ReadJson(dir / "r/summary.json");
  ASSERT_FALSE(s.is_null());
  const auto& f = s["feedrate"];
  EXPECT_EQ(prom.Query("count(last_over_time(feedrate_info{workload=\"unet3d_h100\"}[10m]))"), 2);
  // What the storage served: the epochs' batches and v3.0's pre-warm passes outside the window.
  EXPECT_EQ(prom.Query("sum(last_over_time(feedrate_read_bytes_total[10m]))"),
            f["bytes_read"].get<double>() + f["prewarm"]["bytes"].get<double>());
  EXPECT_EQ(prom.Query("sum(last_over_time(feedrate_delivered_bytes_total[10m]))"), f["bytes_read"].get<double>());
  EXPECT_EQ(prom.Query("sum(last_over_time(feedrate_reads_total[10m]))"), f["read_latency_us"]["count"].get<double>());
  EXPECT_EQ(prom.Query("sum(last_over_time(feedrate_read_latency_seconds_count[10m]))"), f["read_latency_us"]["count"].get<double>());
  EXPECT_EQ(prom.Query("sum(last_over_time(feedrate_steps_total[10m]))"), f["stall_seconds"]["count"].get<double>());
  EXPECT_EQ(prom.Query("sum(last_over_time(feedrate_accelerators[10m]))"), s["num_accelerators"].get<double>());
  // The job's figures, from rank 0's endpoint, as the summary has them (17 significant digits: exact). Each query
  // takes the last sample of its series: once a rank has exited, its next failed scrape marks its series stale, and
  // a plain instant query no longer sees them.
  EXPECT_EQ(prom.Query("last_over_time(feedrate_job_au_percent{rank=\"0\"}[10m])"), s["metric"]["train_au_mean_percentage"].get<double>());
  EXPECT_EQ(prom.Query("last_over_time(feedrate_job_samples_per_second{rank=\"0\"}[10m])"),
            s["metric"]["train_throughput_mean_samples_per_second"].get<double>());
  const std::string verdict = run.code == 0 ? "passed" : "missed_au";
  EXPECT_EQ(prom.Query("sum(last_over_time(feedrate_phase{phase=\"" + verdict + "\"}[10m]))"), 2);
  // Scraped while it trained, not only at the end.
  EXPECT_EQ(prom.Query("sum(max_over_time(feedrate_phase{phase=\"training\"}[10m]))"), 2);
  const double p50 = prom.Query("histogram_quantile(0.5, sum by (le) (last_over_time(feedrate_read_latency_seconds_bucket[10m])))");
  EXPECT_GT(p50, 0);
  EXPECT_LE(p50, f["read_latency_us"]["max"].get<double>() / 1e6 * 2) << "within the bucket above the slowest read";
}

// The value of the sample line that starts with `series` in Prometheus text (NaN when absent).
double Sample(const std::string& text, const std::string& series) {
  for (size_t at = text.find(series); at != std::string::npos; at = text.find(series, at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(text.find(' ', at + series.size()) + 1));
  }
  return std::nan("");
}

// --metrics-textfile: node_exporter's collector form, one file per rank, final figures at the end, each file what
// Prometheus's own linter (promtool, from the same package) accepts, and no temporary file left beside them.
TEST(MetricsEndpoint, TextfilePerRankHoldsTheFinalFigures) {
  if (std::string(FEEDRATE_PROMETHEUS).empty()) GTEST_SKIP() << "prometheus (promtool) not installed (scripts/install-test-extras.sh)";
  test::TempDir dir;
  const std::string shape = SmallDatasetParams(16, 65536);
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + (dir / "data") + " " + shape)).code, 0);
  ASSERT_EQ(Sh("mkdir " + (dir / "textfiles")).code, 0);
  const auto run = Sh(MpiFeedrate(2, "run -w unet3d_h100 --data-dir " + (dir / "data") + " " + shape +
                                         " --param reader.batch_size=2 --param train.epochs=2 --param train.computation_time=0.01"
                                         " -n 2 --quiet --results-dir " + (dir / "r") + " --metrics-textfile " + (dir / "textfiles")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  const auto s = ReadJson(dir / "r/summary.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(Trim(Sh("ls -A " + (dir / "textfiles")).output), "feedrate_rank0.prom\nfeedrate_rank1.prom");
  const std::string promtool = std::string(FEEDRATE_PROMETHEUS).substr(0, std::string(FEEDRATE_PROMETHEUS).rfind('/') + 1) + "promtool";
  double bytes = 0;
  for (int r = 0; r < 2; ++r) {
    const std::string file = dir / ("textfiles/feedrate_rank" + std::to_string(r) + ".prom");
    const auto lint = Sh(promtool + " check metrics < " + file);
    EXPECT_EQ(lint.code, 0) << lint.output;
    const std::string text = Sh("cat " + file).output;
    const std::string labels = "{workload=\"unet3d_h100\",rank=\"" + std::to_string(r) + "\",host=\"";
    bytes += Sample(text, "feedrate_read_bytes_total" + labels);
    const std::string verdict = run.code == 0 ? "passed" : "missed_au";
    EXPECT_NE(text.find(",phase=\"" + verdict + "\"} 1\n"), std::string::npos) << text;
  }
  EXPECT_EQ(bytes, s["feedrate"]["bytes_read"].get<double>() + s["feedrate"]["prewarm"]["bytes"].get<double>());
}

// A port another process holds (or a textfile folder that is not there) is named before any work, on every rank, with exit 2 and no success-shaped result.
TEST(MetricsEndpoint, ABusyPortIsRefusedBeforeAnyWork) {
  test::TempDir dir;
  const int port = FreePortPair();
  ASSERT_GT(port, 0);
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  const std::string shape = SmallDatasetParams(4, 20000);
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + (dir / "data") + " " + shape)).code, 0);
  const auto r = Sh(Feedrate("run -w unet3d_h100 --data-dir " + (dir / "data") + " " + shape + " --results-dir " +
                             (dir / "r") + " --metrics-listen 127.0.0.1:" + std::to_string(port)));
  ::close(held);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("127.0.0.1:" + std::to_string(port) + ": cannot listen there"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("in use"), std::string::npos) << r.output;
  const auto bad = Sh(Feedrate("run -w unet3d_h100 --data-dir " + (dir / "data") + " " + shape + " --results-dir " +
                               (dir / "r2") + " --metrics-listen localhost"));
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--metrics-listen 'localhost': no port"), std::string::npos) << bad.output;
  const auto nowhere = Sh(Feedrate("run -w unet3d_h100 --data-dir " + (dir / "data") + " " + shape + " --results-dir " +
                                   (dir / "r3") + " --metrics-textfile " + (dir / "no-such-folder")));
  EXPECT_EQ(nowhere.code, 2) << nowhere.output;
  EXPECT_NE(nowhere.output.find(dir / "no-such-folder/feedrate_rank0.prom"), std::string::npos) << nowhere.output;
}

}  // namespace
}  // namespace feedrate::it
