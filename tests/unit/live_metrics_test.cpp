// The metrics endpoint's pieces: the listen address, the rendered text (histogram, labels, job figures) and the
// server's answers and its wait for a scrape.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "emulator/host/metrics_server.h"
#include "emulator/training/live_metrics.h"
#include "loader/util/clock.h"

namespace feedrate {
namespace {

TEST(LiveMetrics, ListenAddressTakesTheRanksOffset) {
  auto a = ParseListenAddress("127.0.0.1:9400", 2);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a.value().host, "127.0.0.1");
  EXPECT_EQ(a.value().port, 9402);
  auto any = ParseListenAddress(":9400", 0);
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any.value().host, "");
  auto v6 = ParseListenAddress("[::1]:80", 0);
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6.value().host, "::1");
  for (const char* bad : {"9400", "host:", "host:http", "host:65535x", "host:0"}) {
    auto r = ParseListenAddress(bad, 0);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().ToString().find(std::string("'") + bad + "'"), std::string::npos) << r.status().ToString();
  }
  EXPECT_NE(ParseListenAddress("h:65535", 1).status().ToString().find("65536 is outside"), std::string::npos);
}

// The value of the first line that starts with `series` (the sample's name and labels as rendered), or -1.
double ValueOf(const std::string& text, const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return -1;
}

TEST(LiveMetrics, TextHasCumulativeHistogramPhaseAndJob) {
  IoStats io(2);
  io.Record(0, 4096, 1500);        // 1.5 us: above 2^10 ns, below 2^11
  io.Record(1, 8192, 3'000'000);   // 3 ms
  LiveFigures f;
  f.io = io.Take();
  f.epoch = 2;
  f.steps = 10;
  const std::string l = "workload=\"w\",rank=\"1\",host=\"h\"";
  const std::string t = RenderLiveMetrics(f, RunPhase::kTraining, 4, l, "0.1.0", std::nullopt, 1.5, 0.5);
  EXPECT_EQ(ValueOf(t, "feedrate_read_bytes_total{" + l + "}"), 12288);
  EXPECT_EQ(ValueOf(t, "feedrate_reads_total{" + l + "}"), 2);
  EXPECT_EQ(ValueOf(t, "feedrate_read_latency_seconds_bucket{" + l + ",le=\"1.024e-06\"}"), 0);
  EXPECT_EQ(ValueOf(t, "feedrate_read_latency_seconds_bucket{" + l + ",le=\"2.048e-06\"}"), 1);
  EXPECT_EQ(ValueOf(t, "feedrate_read_latency_seconds_bucket{" + l + ",le=\"0.002097152\"}"), 1);
  EXPECT_EQ(ValueOf(t, "feedrate_read_latency_seconds_bucket{" + l + ",le=\"0.004194304\"}"), 2);
  EXPECT_EQ(ValueOf(t, "feedrate_read_latency_seconds_bucket{" + l + ",le=\"+Inf\"}"), 2);
  EXPECT_DOUBLE_EQ(ValueOf(t, "feedrate_read_latency_seconds_sum{" + l + "}"), 0.0030015);
  EXPECT_EQ(ValueOf(t, "feedrate_phase{" + l + ",phase=\"training\"}"), 1);
  EXPECT_EQ(ValueOf(t, "feedrate_phase{" + l + ",phase=\"setup\"}"), 0);
  EXPECT_EQ(ValueOf(t, "feedrate_cpu_seconds_total{" + l + ",mode=\"user\"}"), 1.5);
  EXPECT_EQ(t.find("feedrate_job_au_percent"), std::string::npos) << "no job figure before the job is judged";
  // Each family once, HELP and TYPE before its samples.
  EXPECT_NE(t.find("# TYPE feedrate_read_latency_seconds histogram\n"), std::string::npos);
  const JobFigures job{93.25, 90, 8, 123.5};
  const std::string done = RenderLiveMetrics(f, RunPhase::kPassed, 4, l, "0.1.0", job, 0, 0);
  EXPECT_EQ(ValueOf(done, "feedrate_job_au_percent{" + l + "}"), 93.25);
  EXPECT_EQ(ValueOf(done, "feedrate_job_samples_per_second{" + l + "}"), 123.5);
  EXPECT_EQ(ValueOf(done, "feedrate_phase{" + l + ",phase=\"passed\"}"), 1);
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(LiveMetrics, FrozenFiguresOutliveTheirSources) {
  LiveMetrics m({"w", "h", "0.1.0", 0}, 1);
  auto io = std::make_unique<IoStats>(1);
  auto progress = std::make_unique<TrainProgress>();
  auto live = std::make_unique<AcceleratorLive[]>(1);
  m.Attach(io.get(), progress.get(), live.get());
  io->Record(0, 100, 1000);
  progress->total_steps = 3;
  live[0].stall_ns = 2'000'000'000;
  m.Freeze();
  io.reset();
  progress.reset();
  live.reset();
  const std::string t = m.Render();
  EXPECT_NE(t.find("feedrate_read_bytes_total{workload=\"w\",rank=\"0\",host=\"h\"} 100\n"), std::string::npos) << t;
  EXPECT_NE(t.find("feedrate_steps_total{workload=\"w\",rank=\"0\",host=\"h\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("feedrate_stall_seconds_total{workload=\"w\",rank=\"0\",host=\"h\"} 2\n"), std::string::npos) << t;
}

// A plain HTTP GET of `target` on 127.0.0.1:port; the whole reply.
std::string Get(int port, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
    (void)!::write(fd, req.data(), req.size());
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

TEST(MetricsServer, AnswersMetricsCountsScrapesAndRefusesABusyPort) {
  int renders = 0;
  auto server = MetricsServer::Start({"127.0.0.1", 0}, [&] { return "up " + std::to_string(++renders) + "\n"; });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  MetricsServer& s = *server.value();
  const int port = std::stoi(s.address().substr(s.address().rfind(':') + 1));
  EXPECT_EQ(s.address(), "127.0.0.1:" + std::to_string(port));
  EXPECT_FALSE(s.WaitForScrape(s.begun(), 0.05)) << "no scrape yet";
  const std::string r = Get(port, "/metrics");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\nup 1\n"), std::string::npos) << r;
  EXPECT_TRUE(s.WaitForScrape(0, 1));
  EXPECT_EQ(Get(port, "/").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(s.begun(), 1u) << "a 404 renders nothing and is no scrape";
  EXPECT_EQ(s.delivered(), 1u);
  auto busy = MetricsServer::Start({"127.0.0.1", port}, [] { return std::string(); });
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.status().ToString().find("127.0.0.1:" + std::to_string(port)), std::string::npos) << busy.status().ToString();
  EXPECT_NE(busy.status().ToString().find("in use"), std::string::npos) << busy.status().ToString();
}

// A scraper that stops reading (its timeout passed, say) never gets the whole answer: the request was begun, not
// delivered, and a wait for a delivery does not end on it (the server's 2 s send limit ends the answer).
TEST(MetricsServer, AScraperThatGivesUpIsNotADelivery) {
  const std::string big(32 << 20, 'x');  // more than any socket buffers hold
  auto server = MetricsServer::Start({"127.0.0.1", 0}, [&] { return big; });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  MetricsServer& s = *server.value();
  const int port = std::stoi(s.address().substr(s.address().rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string req = "GET /metrics HTTP/1.1\r\n\r\n";
  ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  EXPECT_FALSE(s.WaitForScrape(0, 4)) << "never read, never delivered";
  EXPECT_EQ(s.begun(), 1u);
  EXPECT_EQ(s.delivered(), 0u);
  ::close(fd);
}

}  // namespace
}  // namespace feedrate
