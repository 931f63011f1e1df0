// Multi-host runs on emulated hosts (tests/multihost/mh.sh: network, UTS and mount namespaces on a private bridge,
// OpenMPI across them without sshd): hostnames, per-host figures, the equal-hosts rule, the hierarchical step
// barrier, a stopped host named by the watchdog, and a sweep over sshfs through shaped links with a known answer.
// Root only; each test skips with mh.sh's reason where namespaces (or sshfs) are unavailable. Run alone
// (RUN_SERIAL): the hosts share fixed names and addresses, and the sweep's answer needs idle CPUs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "emulated_hosts.h"
#include "harness.h"

namespace feedrate::it {
namespace {

const std::string kMh = std::string(FEEDRATE_MULTIHOST_DIR) + "/mh.sh";

// Brings hosts up for one test and always takes them down; `skip` holds mh.sh's reason when it skipped (exit 77).
class Hosts {
 public:
  explicit Hosts(const std::string& args) {
    auto r = Sh(kMh + " up " + args, 60);
    if (r.code != 0 && r.code != 77) {  // once more: the previous test's namespaces may still be going away
      std::this_thread::sleep_for(std::chrono::seconds(2));
      r = Sh(kMh + " up " + args, 60);
    }
    if (r.code == 77) {
      skip = r.output.empty() ? "mh.sh skipped" : r.output;
    } else {
      up_error = r.code == 0 ? "" : "mh.sh up " + args + " failed (" + std::to_string(r.code) + "): " + r.output;
    }
  }
  ~Hosts() { Sh(kMh + " down", 60); }
  Hosts(const Hosts&) = delete;
  Hosts& operator=(const Hosts&) = delete;
  // `cmd` run on `host` (its network, hostname and mounts).
  static std::string On(const std::string& host, const std::string& cmd) { return kMh + " exec " + host + " " + cmd; }
  static std::string Mpirun() { return Sh(kMh + " mpirun").output; }
  std::string skip, up_error;
};

TEST(MultiHost, ThreeHostsWithTwoTwoOneRanks) {
  test::TempDir dir("/var/tmp");
  const std::string data = dir / "data", res = dir / "res";
  {
    Hosts hosts("3");
    EMULATED_HOSTS_UP(hosts);
    const std::string launch = " --mpirun '" + Trim(Hosts::Mpirun()) + "'";
    // Every host sees its own name.
    EXPECT_EQ(Trim(Sh(Hosts::On("frh2", "hostname")).output), "frh2");
    // datagen across the hosts (one rank each), then a run with 2+2+1 ranks.
    auto gen = Sh(Hosts::On("frh1", std::string(FEEDRATE_BIN) + " datagen -w unet3d_h100 --data-dir " + data +
                                        kHostsShape + " --hosts frh1:1,frh2:1,frh3:1" + launch));
    ASSERT_EQ(gen.code, 0) << gen.output;
    EXPECT_NE(gen.output.find("3 rank(s)"), std::string::npos) << gen.output;
    auto run =
        Sh(Hosts::On("frh1", std::string(FEEDRATE_BIN) + " run -q -w unet3d_h100 --data-dir " + data + kHostsShape +
                                 " --results-dir " + res + " --hosts frh1:2,frh2:2,frh3:1" + launch));
    ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;  // AU is not what this test is about
    auto s = ReadJson(res + "/summary.json");
    EXPECT_EQ(s["num_hosts"], 3);
    EXPECT_EQ(s["num_accelerators"], 5);
    const auto& h = s["feedrate"]["hosts"];
    ASSERT_EQ(h.size(), 3u) << h.dump(2);
    const std::vector<std::pair<std::string, int>> want = {{"frh1", 2}, {"frh2", 2}, {"frh3", 1}};
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(h[i]["hostname"], want[i].first);
      EXPECT_EQ(h[i]["ranks"], want[i].second);
      EXPECT_EQ(h[i]["accelerators"], want[i].second);
      EXPECT_GT(h[i]["read_mib_per_s"].get<double>(), 0);
      EXPECT_GT(h[i]["au_mean_pct"].get<double>(), 0);
      EXPECT_GE(h[i]["start_skew_seconds"].get<double>(), 0);
      EXPECT_LT(h[i]["start_skew_seconds"].get<double>(), 5);
    }
    std::set<std::string> rank_hosts;
    for (const auto& a : s["feedrate"]["cpu_affinity"]) rank_hosts.insert(a["host"].get<std::string>());
    EXPECT_EQ(rank_hosts, (std::set<std::string>{"frh1", "frh2", "frh3"}));
    // Unequal accelerators per host break the rules.
    EXPECT_NE(s["feedrate"]["validity"]["reasons"].dump().find("hosts run different accelerator counts"), std::string::npos);
    // Several hosts with several ranks on one: the hierarchical step barrier, both ways calibrated.
    const auto& b = s["feedrate"]["step_barrier"];
    EXPECT_EQ(b["mode"], "hierarchical");
    EXPECT_EQ(b["hosts"], 3);
    EXPECT_EQ(b["calibration_flat_us"]["count"], 200);
    EXPECT_EQ(b["calibration_hierarchical_us"]["count"], 200);
    EXPECT_GT(b["calibration_flat_us"]["p50"].get<double>(), 0);
  }
  // Teardown removed everything it created.
  EXPECT_EQ(Sh("ip netns list | grep -c '^fr' || true").output, "0\n");
  EXPECT_NE(Sh("ip link show frbr0").code, 0);
  EXPECT_NE(Sh("ip -o link show | grep -c ': frv' || true").output.substr(0, 1), "1");
  EXPECT_FALSE(std::filesystem::exists("/run/feedrate-mh"));
}

TEST(MultiHost, HostfileAndFlatBarrierWithEqualHosts) {
  test::TempDir dir("/var/tmp");
  const std::string data = dir / "data", res = dir / "res";
  Hosts hosts("3");
  EMULATED_HOSTS_UP(hosts);
  {
    std::ofstream hf(dir / "hostfile");
    hf << "# three emulated hosts\nfrh1 slots=1\nfrh2 slots=1 max_slots=4\nfrh3\n";
  }
  auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + kHostsShape));
  ASSERT_EQ(gen.code, 0) << gen.output;
  auto run = Sh(Hosts::On("frh1", std::string(FEEDRATE_BIN) + " run -q -w unet3d_h100 --data-dir " + data +
                                      kHostsShape + " --step-barrier flat --results-dir " + res + " --hostfile " +
                                      (dir / "hostfile") + " --mpirun '" + Trim(Hosts::Mpirun()) + "'"));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;
  auto s = ReadJson(res + "/summary.json");
  EXPECT_EQ(s["num_hosts"], 3);
  for (const auto& h : s["feedrate"]["hosts"]) EXPECT_EQ(h["ranks"], 1);
  EXPECT_EQ(s["feedrate"]["validity"]["reasons"].dump().find("different accelerator counts"), std::string::npos);
  EXPECT_EQ(s["feedrate"]["step_barrier"]["mode"], "flat");
  // The command line recorded is the ranks' (without the launch options).
  EXPECT_EQ(s["feedrate"]["host_facts"]["command_line"].get<std::string>().find("--hostfile"), std::string::npos);
}

TEST(MultiHost, StoppedHostIsNamedByTheWatchdog) {
  test::TempDir dir("/var/tmp");
  const std::string data = dir / "data", log = dir / "run.log";
  Hosts hosts("3");
  EMULATED_HOSTS_UP(hosts);
  auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + kHostsShape));
  ASSERT_EQ(gen.code, 0) << gen.output;
  // A long run (200 epochs) in the background, progress as JSON lines.
  const std::string run = Hosts::On(
      "frh1", std::string(FEEDRATE_BIN) + " run --json-events -w unet3d_h100 --data-dir " + data + kHostsShape +
                  " --param train.epochs=200 --collective-timeout 4" + " --results-dir " + (dir / "res") +
                  " --hosts frh1:1,frh2:1,frh3:1" + " --mpirun '" + Trim(Hosts::Mpirun()) + "'");
  Sh("(" + run + " > " + log + " 2>&1; echo \"exit=$?\" >> " + log + ") > /dev/null 2>&1 &");
  // Training has started once rank 0 reports progress.
  ASSERT_TRUE(LogShows(log, "'\"progress\"'", 300)) << Sh("cat " + log).output;
  const std::string pids = Trim(Sh(kMh + " pids frh2 feedrate").output);
  ASSERT_FALSE(pids.empty()) << "no feedrate process on frh2";
  Sh("kill -STOP " + pids);
  const bool ended = LogShows(log, "'^exit='", 600);
  Sh("kill -CONT " + pids + " 2>/dev/null; kill -KILL " + pids + " 2>/dev/null");
  const std::string out = Sh("cat " + log).output;
  ASSERT_TRUE(ended) << out;
  EXPECT_EQ(out.find("exit=0"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 1 (frh2) did not answer"), std::string::npos) << out;
}

// --hosts watches mpirun instead of becoming it (issue 51): start-up is bounded and names the hosts, and a job whose
// ranks ended is ended when mpirun waits for a lost host's daemon.
std::string RunOnHosts(const std::string& data, const std::string& results, const std::string& hosts,
                       const std::string& mpirun, const std::string& extra) {
  return Hosts::On("frh1", std::string(FEEDRATE_BIN) + " run -w unet3d_h100 --data-dir " + data + kHostsShape +
                               " --results-dir " + results + " --hosts " + hosts + " --mpirun '" + mpirun + "' " +
                               extra);
}

// A host whose daemon never comes up (its ssh hangs: here an rsh agent that sleeps for frh3): no rank can start,
// and the command ends after --launch-timeout saying so, where it waited silently until killed.
TEST(MultiHost, AHostThatNeverAnswersEndsTheStartWithinTheBound) {
  test::TempDir dir("/var/tmp");
  Hosts hosts("3");
  EMULATED_HOSTS_UP(hosts);
  const std::string agent = dir / "hang-rsh";
  std::ofstream(agent) << "#!/bin/sh\n[ \"$1\" = frh3 ] && exec sleep 60\nexec " << FEEDRATE_MULTIHOST_DIR << "/mh-rsh \"$@\"\n";
  Sh("chmod +x " + agent);
  std::string mpirun = Trim(Hosts::Mpirun());
  mpirun.replace(mpirun.find("plm_rsh_agent ") + 14, mpirun.find(' ', mpirun.find("plm_rsh_agent ") + 14) -
                                                          (mpirun.find("plm_rsh_agent ") + 14), agent);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Sh(RunOnHosts(dir / "nodata", dir / "res", "frh1:1,frh2:1,frh3:1", mpirun, "--launch-timeout 6"), 120);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_LT(secs, 30) << r.output;
  EXPECT_NE(r.output.find("did not start within 6 s (--launch-timeout): no rank started"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("frh3 (rank 2)"), std::string::npos) << r.output;
}

// A host whose feedrate is not this one and exits before joining MPI (an old install: here a script bound over the
// binary in frh2's mount namespace): named, and the command ends.
TEST(MultiHost, AHostWhoseFeedrateExitsBeforeJoiningIsNamed) {
  test::TempDir dir("/var/tmp");
  const std::string data = dir / "data";
  Hosts hosts("3");
  EMULATED_HOSTS_UP(hosts);
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + kHostsShape)).code, 0);
  const std::string fake = dir / "old-feedrate";
  std::ofstream(fake) << "#!/bin/sh\necho 'feedrate 0.1: unknown option --collective-timeout' >&2\nexit 2\n";
  Sh("chmod +x " + fake);
  auto bind = Sh(Hosts::On("frh2", "mount --bind " + fake + " " + std::string(FEEDRATE_BIN)));
  ASSERT_EQ(bind.code, 0) << bind.output;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Sh(RunOnHosts(data, dir / "res", "frh1:1,frh2:1,frh3:1", Trim(Hosts::Mpirun()), "--launch-timeout 20"), 120);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_LT(secs, 60) << r.output;
  EXPECT_NE(r.output.find("never started on frh2 (rank 1)"), std::string::npos) << r.output;
}

// A host lost mid-run (its link down: no FIN, no RST): the watchdog names it, rank 0 writes the failed record, and
// the command ends, where mpirun waited for the lost daemon forever.
TEST(MultiHost, AHostLostMidRunEndsTheCommandWithinTheBound) {
  test::TempDir dir("/var/tmp");
  const std::string data = dir / "data", log = dir / "run.log";
  Hosts hosts("3");
  EMULATED_HOSTS_UP(hosts);
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + kHostsShape)).code, 0);
  const std::string run = RunOnHosts(data, dir / "res", "frh1:1,frh2:1,frh3:1", Trim(Hosts::Mpirun()),
                                     "--json-events --param train.epochs=200 --collective-timeout 3");
  Sh("(" + run + " > " + log + " 2>&1; echo \"exit=$?\" >> " + log + ") > /dev/null 2>&1 &");
  ASSERT_TRUE(LogShows(log, "'\"progress\"'", 300)) << Sh("cat " + log).output;
  Sh("ip link set frvh2 down");
  const auto t0 = std::chrono::steady_clock::now();
  const bool ended = LogShows(log, "'^exit='", 900);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const char* name : {"feedrate", "orted"}) Sh("kill -KILL " + Trim(Sh(kMh + " pids frh2 " + name).output) + " 2>/dev/null");
  const std::string out = Sh("cat " + log).output;
  ASSERT_TRUE(ended) << out;
  EXPECT_LT(secs, 60) << out;
  EXPECT_NE(out.find("exit=2"), std::string::npos) << out;
  EXPECT_NE(out.find("(frh2) did not answer"), std::string::npos) << out;
  EXPECT_EQ(ReadJson((dir / "res") + "/summary.json")["feedrate"]["status"], "failed");
}

// The storage is a directory on host frstore served over sshfs; each client host's link is shaped to 57 Mbit/s
// (tc tbf): 57e6/8 = 7.125 MB/s per host. Each accelerator needs 131072 B per 0.064 s = 2.048 MB/s, so the link
// arithmetic predicts 7.125/2.048 = 3.48 accelerators per host, 6.96 over two hosts; the sweep must land within
// +-1 of that (SSH and TCP framing take a few percent: 3 per host pass, 4 miss) and blame the network.
TEST(MultiHost, ShapedLinkSweepFindsTheLinkArithmeticAnswer) {
  test::TempDir dir("/var/tmp");
  const std::string data = dir / "export", res = dir / "sweep";
#ifdef FEEDRATE_SANITIZED
  // Sanitized builds check the answer's bounds only (below), so half the steps per point do.
  const std::string steps = "60";
#else
  const std::string steps = "120";
#endif
  const std::string shape = " --param dataset.num_files_train=1200 --param dataset.record_length_bytes=131072"
                            " --param dataset.record_length_bytes_stdev=0 --param reader.batch_size=1"
                            " --param train.computation_time=0.064 --param train.epochs=1"
                            " --param train.total_training_steps=" + steps;
  auto gen = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + shape));
  ASSERT_EQ(gen.code, 0) << gen.output;
  const double rate_mbit = 57;
  Hosts hosts("2 --storage " + data + " --rate-mbit " + std::to_string(static_cast<int>(rate_mbit)));
  EMULATED_HOSTS_UP(hosts);
  auto sweep = Sh(Hosts::On("frh1", std::string(FEEDRATE_BIN) + " sweep -w unet3d_h100 --data-dir /run/feedrate-mh/mnt" +
                                        shape + " --hosts frh1,frh2 --max 8 --results-dir " + res + " --mpirun '" +
                                        Trim(Hosts::Mpirun()) + "'"),
                  600);
  ASSERT_EQ(sweep.code, 0) << sweep.output;
  auto j = ReadJson(res + "/sweep.json");
  const double per_accelerator = 131072 / 0.064;           // bytes/s
  const double predicted = 2 * (rate_mbit * 1e6 / 8) / per_accelerator;  // 6.96
  const int measured = j["accelerators_supported"];
  for (const auto& p : j["points"]) {
    for (const auto& run : p["runs"]) {
      std::printf("point %d: AU %.1f%%, %.2f MiB/s\n", p["accelerators"].get<int>(), run["au_pct"].get<double>(),
                  run["read_mib_per_s"].get<double>());
    }
  }
#ifdef FEEDRATE_SANITIZED
  // A sanitized client (5-15x the CPU per read) can miss the bar at 3 per host, where the link is 86% busy: the
  // arithmetic is a release-build property (checked there); here the answer must not exceed it.
  EXPECT_GE(measured, 2) << sweep.output;
  EXPECT_LE(measured, predicted + 1.0) << sweep.output;
  std::printf("shaped-link sweep (sanitized build): predicted %.2f accelerators, measured %d\n", predicted, measured);
  return;
#endif
  EXPECT_LE(std::fabs(measured - predicted), 1.0) << "predicted " << predicted << ", measured " << measured << "\n"
                                                  << sweep.output;
  EXPECT_EQ(j["bottleneck"]["limit"], "network") << j["bottleneck"].dump(2);
  // The failing point's hosts each received close to their link's rate, with the client CPUs mostly idle.
  const auto& fail = j["bottleneck"]["first_fail"];
  ASSERT_TRUE(fail.is_object()) << j["bottleneck"].dump(2);
  EXPECT_LT(fail["client_cpu_utilisation"].get<double>(), 0.85);
  for (const auto& h : fail["hosts"]) {
    std::printf("failing point, %s: read %.2f MiB/s, network %.2f MiB/s\n", h["hostname"].get<std::string>().c_str(),
                h["read_mib_per_s"].get<double>(), h["net_rx_mib_per_s"].get<double>());
    EXPECT_GT(h["net_rx_mib_per_s"].get<double>(), 0.8 * rate_mbit * 1e6 / 8 / (1 << 20)) << h.dump();
    EXPECT_LT(h["net_rx_mib_per_s"].get<double>(), 1.05 * rate_mbit * 1e6 / 8 / (1 << 20)) << h.dump();
  }
  std::printf("shaped-link sweep: predicted %.2f accelerators, measured %d\n", predicted, measured);
}

}  // namespace
}  // namespace feedrate::it
