// Feedrate launched by Slurm on the emulated hosts (tests/multihost/slurm.sh: slurmctld, one slurmd per host,
// Debian's slurm-wlm with its PMIx plugin), as users launch it: `srun --mpi=pmix`, `sbatch`, `salloc` + mpirun, a
// sweep inside an allocation; the
// host table equal to a --hosts run's; a node lost mid-run named and the step ended within a bound. Root only; run
// alone with the other MultiHost tests (the same names and addresses).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "emulated_hosts.h"
#include "harness.h"

namespace feedrate::it {
namespace {

const std::string kMhDir = FEEDRATE_MULTIHOST_DIR;
const std::string kSlurm = kMhDir + "/slurm.sh";

// A three-node cluster for one test, always taken down; `skip` holds slurm.sh's reason when it skipped (exit 77).
class Cluster {
 public:
  Cluster() {
    auto r = Sh(kSlurm + " up 3", 90);
    if (r.code == 77) {
      skip = r.output.empty() ? "slurm.sh skipped" : r.output;
    } else if (r.code != 0) {
      up_error = "slurm.sh up 3 failed (" + std::to_string(r.code) + "): " + r.output;
    }
  }
  ~Cluster() { Sh(kSlurm + " down", 60); }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  // `cmd` on frh1, the node users submit from, with Slurm's configuration.
  static std::string OnFrh1(const std::string& cmd) {
    return kMhDir + "/mh.sh exec frh1 env " + Trim(Sh(kSlurm + " env").output) + " " + cmd;  // SLURM_CONF=...
  }
  std::string skip, up_error;
};

std::string SlurmRun(const std::string& data, const std::string& res, const std::string& extra = "") {
  return std::string(FEEDRATE_BIN) + " run -q -w unet3d_h100 --data-dir " + data + kHostsShape + " --results-dir " +
         res + " " + extra;
}

// hostname, ranks and accelerators of each host, in the summary's order.
std::vector<std::tuple<std::string, int, int>> HostTable(const std::string& res) {
  std::vector<std::tuple<std::string, int, int>> t;
  const auto summary = ReadJson(res + "/summary.json");  // (held: a range-for over a temporary's member dangles)
  for (const auto& h : summary["feedrate"]["hosts"]) {
    t.emplace_back(h["hostname"].get<std::string>(), h["ranks"].get<int>(), h["accelerators"].get<int>());
  }
  return t;
}

TEST(MultiHost, SlurmSrunSbatchAndSallocRunWithTheHostsTableOfAHostsRun) {
  test::TempDir dir("/var/tmp");
  const std::string data = dir / "data";
  Cluster cluster;
  EMULATED_HOSTS_UP(cluster);
  const std::string srun = "srun --mpi=pmix -N 3 ";
  auto gen = Sh(Cluster::OnFrh1(srun + "--ntasks-per-node=1 " + FEEDRATE_BIN + " datagen -w unet3d_h100 --data-dir " +
                                data + kHostsShape));
  ASSERT_EQ(gen.code, 0) << gen.output;
  EXPECT_NE(gen.output.find("3 rank(s)"), std::string::npos) << gen.output;
  // srun, two ranks a node: the per-host figures and the hierarchical step barrier.
  auto run = Sh(Cluster::OnFrh1(srun + "--ntasks-per-node=2 " + SlurmRun(data, dir / "srun")));
  ASSERT_TRUE(run.code == 0 || run.code == 3) << run.output;  // (srun's exit is the tasks' highest)
  const std::vector<std::tuple<std::string, int, int>> want = {{"frh1", 2, 2}, {"frh2", 2, 2}, {"frh3", 2, 2}};
  EXPECT_EQ(HostTable(dir / "srun"), want);
  auto s = ReadJson((dir / "srun") + "/summary.json");
  EXPECT_EQ(s["num_hosts"], 3);
  EXPECT_EQ(s["feedrate"]["step_barrier"]["mode"], "hierarchical");
  for (const auto& h : s["feedrate"]["hosts"]) EXPECT_GT(h["read_mib_per_s"].get<double>(), 0) << h.dump();
  // The same layout through --hosts (Feedrate's own mpirun) gives the same host table.
  const std::string mpirun = Trim(Sh(kMhDir + "/mh.sh mpirun").output);
  auto hosts = Sh(kMhDir + "/mh.sh exec frh1 " +
                  SlurmRun(data, dir / "hosts", "--hosts frh1:2,frh2:2,frh3:2 --mpirun '" + mpirun + "'"));
  ASSERT_TRUE(hosts.code == 0 || hosts.code == 3) << hosts.output;
  EXPECT_EQ(HostTable(dir / "hosts"), want);
  // sbatch of a job script (srun inside), waited for: its exit is the job's.
  {
    std::ofstream job(dir / "job.sh");
    job << "#!/bin/sh\n#SBATCH --nodes=3\n#SBATCH --ntasks-per-node=1\n#SBATCH --output=" << (dir / "job.out")
        << "\nsrun --mpi=pmix " << SlurmRun(data, dir / "sbatch") << "\n";
  }
  auto batch = Sh(Cluster::OnFrh1("sbatch --wait " + (dir / "job.sh")));
  EXPECT_TRUE(batch.code == 0 || batch.code == 3) << batch.output << Sh("cat " + (dir / "job.out")).output;
  EXPECT_EQ(HostTable(dir / "sbatch"),
            (std::vector<std::tuple<std::string, int, int>>{{"frh1", 1, 1}, {"frh2", 1, 1}, {"frh3", 1, 1}}));
  // salloc, then OpenMPI's mpirun inside the allocation (it starts its daemons through srun).
  auto alloc =
      Sh(Cluster::OnFrh1("salloc -N 3 --ntasks-per-node=1 mpirun --allow-run-as-root --bind-to none --mca "
                         "oob_tcp_if_include 10.213.77.0/24 --mca btl_tcp_if_include 10.213.77.0/24 " +
                         SlurmRun(data, dir / "salloc")));
  EXPECT_TRUE(alloc.code == 0 || alloc.code == 3) << alloc.output;
  EXPECT_EQ(HostTable(dir / "salloc"),
            (std::vector<std::tuple<std::string, int, int>>{{"frh1", 1, 1}, {"frh2", 1, 1}, {"frh3", 1, 1}}));
  // A sweep inside an allocation, its points on the allocation's nodes (their names from Slurm, inside the
  // allocation's shell: hence the escaped $) through mpirun.
  const std::string sweep =
      std::string(FEEDRATE_BIN) + " sweep -w unet3d_h100 --data-dir " + data + kHostsShape +
      " --min 1 --max 1 --repeats 1 --results-dir " + (dir / "sweep") +
      " --hosts \\$(scontrol show hostnames \\$SLURM_JOB_NODELIST | paste -sd,) --mpirun 'mpirun "
      "--allow-run-as-root --bind-to none --mca oob_tcp_if_include 10.213.77.0/24 --mca btl_tcp_if_include "
      "10.213.77.0/24'";
  auto swept = Sh(Cluster::OnFrh1("salloc -N 3 --ntasks-per-node=1 sh -c \"" + sweep + "\""));
  EXPECT_TRUE(swept.code == 0 || swept.code == 3) << swept.output;
  EXPECT_EQ(HostTable((dir / "sweep") + "/n3_r1"),
            (std::vector<std::tuple<std::string, int, int>>{{"frh1", 1, 1}, {"frh2", 1, 1}, {"frh3", 1, 1}}))
      << swept.output;
  // A checkpoint under srun: every rank writes and reads its part.
  auto ck = Sh(Cluster::OnFrh1(srun + "--ntasks-per-node=1 " + FEEDRATE_BIN + " checkpoint -w llama3_8b --dir " +
                               (dir / "ckpt") + " --scale 0.0005 --time-between 0 -q --results-dir " + (dir / "ck")));
  EXPECT_EQ(ck.code, 0) << ck.output;
  EXPECT_EQ(ReadJson((dir / "ck") + "/summary.json")["num_hosts"], 3) << ck.output;
}

TEST(MultiHost, SlurmNodeLostMidRunEndsTheStepWithinTheBound) {
  test::TempDir dir("/var/tmp");
  const std::string data = dir / "data", log = dir / "run.log";
  Cluster cluster;
  EMULATED_HOSTS_UP(cluster);
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data + kHostsShape)).code, 0);
  // (-u: srun passes each line on as it comes, so the progress events arrive during the run)
  const std::string run = Cluster::OnFrh1("srun -u --mpi=pmix -N 3 --ntasks-per-node=1 " +
                                          SlurmRun(data, dir / "res",
                                                   "--json-events --param train.epochs=200 "
                                                   "--collective-timeout 3"));
  Sh("(" + run + " > " + log + " 2>&1; echo \"exit=$?\" >> " + log + ") > /dev/null 2>&1 &");
  ASSERT_TRUE(LogShows(log, "'\"training_start\"'", 300)) << Sh("cat " + log).output;
  Sh("ip link set frvh2 down");
  const auto t0 = std::chrono::steady_clock::now();
  const bool ended = LogShows(log, "'^exit='", 900);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string out = Sh("cat " + log).output;
  ASSERT_TRUE(ended) << out;
  // The watchdog (3 s + the roll call's 5 s) names the node; srun ends the step within its kill wait.
  EXPECT_LT(secs, 60) << out;
  EXPECT_NE(out.find("exit=2"), std::string::npos) << out;
  EXPECT_NE(out.find("(frh2) did not answer"), std::string::npos) << out;
  EXPECT_EQ(ReadJson((dir / "res") + "/summary.json")["feedrate"]["status"], "failed");
}

}  // namespace
}  // namespace feedrate::it
