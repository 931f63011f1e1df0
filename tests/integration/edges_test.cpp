// The edges of issue 36: a results folder belongs to one run, a summary is never success-shaped after a failure, and
// no credential reaches any file a command writes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"
#include "loader/config/workload_config.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kMarker = "FeedrateMarkerSecret7f3a";

struct Edge {
  test::TempDir dir;
  std::string data() const { return dir / "data"; }
  std::string results() const { return dir / "results"; }
  std::string small() const { return SmallDatasetParams(4, 20000) + " --param reader.batch_size=1 --param train.computation_time=0.001"; }
  void Generate() {
    auto r = Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + data() + " " + SmallDatasetParams(4, 20000)));
    ASSERT_EQ(r.code, 0) << r.output;
  }
  CmdResult Run(const std::string& extra = "") const {
    return Sh(Feedrate("run -w unet3d_h100 --data-dir " + data() + " " + small() + " --results-dir " + results() + " " + extra));
  }
};

// Every regular file under `root` that contains `needle`.
std::vector<std::string> FilesContaining(const fs::path& root, const std::string& needle) {
  std::vector<std::string> hits;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec || !it->is_regular_file()) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().find(needle) != std::string::npos) hits.push_back(it->path().string());
  }
  return hits;
}

// A credential under any spelling, through --param, a Hydra override or a workload file, is refused by every
// command (exit 2, the key named, the value never printed), and no file any of them wrote holds it.
TEST(Edges, CredentialsNeverReachAnOutput) {
  Edge e;
  e.Generate();
  const std::string m = kMarker;
  const std::vector<std::string> spellings = {
      "--param storage.storage_options.aws_secret_access_key=" + m, "--param storage.storage_options.secret=" + m,
      "--param storage.storage_options.password=" + m, "--param storage.storage_options.token=" + m,
      "++workload.storage.storage_options.Session_Token=" + m, "--param storage.storage_options.access_key_id=" + m};
  const std::string yaml = e.dir / "w.yaml";
  test::WriteFile(yaml, "model: {name: unet3d}\nframework: pytorch\nworkflow: {train: true}\ndataset: {format: npz}\n"
                        "storage: {storage_type: local_fs, storage_options: {api_key: " + m + "}}\n");
  std::vector<std::string> commands;
  for (const auto& s : spellings) {
    commands.push_back("run -w unet3d_h100 --data-dir " + e.data() + " " + e.small() + " --results-dir " + e.results() + " " + s);
    commands.push_back("datagen -w unet3d_h100 --data-dir " + (e.dir / "gen") + " " + SmallDatasetParams(2, 2000) + " " + s);
    commands.push_back("sweep -w unet3d_h100 --data-dir " + e.data() + " " + e.small() + " --results-dir " + (e.dir / "sweep") + " " + s);
    commands.push_back("checkpoint -w llama3_8b --dir " + (e.dir / "ckpt") + " --results-dir " + (e.dir / "ck") + " " + s);
  }
  commands.push_back("run -w " + yaml + " --data-dir " + e.data() + " --results-dir " + e.results());
  for (const auto& c : commands) {
    SCOPED_TRACE(c);
    auto r = Sh(Feedrate(c));
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("credential"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(m), std::string::npos) << r.output;
  }
  EXPECT_EQ(FilesContaining(e.dir.path(), m), std::vector<std::string>{yaml});
}

// An endpoint URL carrying user:password is refused like any credential, without printing it; and what a record
// keeps of a command line is redacted by the same rule (RedactSecrets), whatever reached it.
TEST(Edges, AnEndpointWithAPasswordIsRefusedAndCommandLinesAreRedacted) {
  Edge e;
  e.Generate();
  auto r = Sh(Feedrate("run -w unet3d_h100 --data-dir " + e.data() + " " + e.small() + " --results-dir " + e.results() +
                       " --endpoint http://user:" + kMarker + "@127.0.0.1:1"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("credential"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(kMarker), std::string::npos) << r.output;
  EXPECT_TRUE(FilesContaining(e.dir.path(), kMarker).empty());
  // The same rule for every command that takes an endpoint (iobench and inspect took it, and iobench wrote it).
  for (const std::string& cmd : std::vector<std::string>{"iobench --path s3://b/k --rw read --object-size 4k --results-dir " + (e.dir / "io"),
                                "inspect s3://b/train/x.npz", "datagen -w unet3d_h100 --storage s3://b/p"}) {
    auto c = Sh(Feedrate(cmd + " --endpoint http://user:" + kMarker + "@127.0.0.1:1"));
    EXPECT_EQ(c.code, 2) << cmd << "\n" << c.output;
    EXPECT_NE(c.output.find("credential"), std::string::npos) << cmd << "\n" << c.output;
    EXPECT_EQ(c.output.find(kMarker), std::string::npos) << cmd << "\n" << c.output;
  }
  EXPECT_TRUE(FilesContaining(e.dir.path(), kMarker).empty());
  EXPECT_EQ(RedactSecrets(std::string("feedrate run --param a.password=") + kMarker + " --endpoint https://u:" + kMarker +
                          "@h:1/x ++workload.reader.batch_size=4"),
            "feedrate run --param a.password=<redacted> --endpoint https://<redacted>@h:1/x ++workload.reader.batch_size=4");
}

// A folder another run holds is refused, exit 2, and what that run wrote is untouched.
TEST(Edges, AResultsFolderInUseIsRefused) {
  Edge e;
  e.Generate();
  fs::create_directories(e.results());
  test::WriteFile(e.results() + "/summary.json", "{\"feedrate\": {\"status\": \"running\"}}\n");
  const int fd = ::open(e.results().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // as a running Feedrate holds it
  auto r = e.Run();
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("is in use by another Feedrate run"), std::string::npos) << r.output;
  EXPECT_EQ(test::ReadFile(e.results() + "/summary.json"), "{\"feedrate\": {\"status\": \"running\"}}\n");
  auto ck = Sh(Feedrate("checkpoint -w llama3_8b --dir " + (e.dir / "ckpt") + " --results-dir " + e.results() +
                        " --param checkpoint.num_checkpoints_write=0"));
  EXPECT_EQ(ck.code, 2) << ck.output;
  EXPECT_EQ(test::ReadFile(e.results() + "/summary.json"), "{\"feedrate\": {\"status\": \"running\"}}\n");
  ::close(fd);
}

// A folder Feedrate did not create is the user's: a run into one holding other files is refused before any work, even
// when it would fail at once, and touches nothing there (checkpoint and sweep alike).
TEST(Edges, AUsersFolderIsNeverCleared) {
  Edge e;
  e.Generate();
  fs::create_directories(e.results());
  const std::vector<std::string> theirs = {"config.yaml", "report.md", "steps.csv", "summary.json", "notes.txt"};
  for (const auto& f : theirs) test::WriteFile(e.results() + "/" + f, "the user's " + f + "\n");
  for (const std::string& data : {e.data(), std::string("/nonexistent")}) {
    auto r = Sh(Feedrate("run -w unet3d_h100 --data-dir " + data + " " + e.small() + " --results-dir " + e.results()));
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("holds files that are not a Feedrate record"), std::string::npos) << r.output;
  }
  auto ck = Sh(Feedrate("checkpoint -w llama3_8b --dir " + (e.dir / "ckpt") + " --results-dir " + e.results() +
                        " --param checkpoint.num_checkpoints_write=0"));
  EXPECT_EQ(ck.code, 2) << ck.output;
  auto sw = Sh(Feedrate("sweep -w unet3d_h100 --data-dir " + e.data() + " " + e.small() + " --results-dir " + e.results()));
  EXPECT_EQ(sw.code, 2) << sw.output;
  for (const auto& f : theirs) EXPECT_EQ(test::ReadFile(e.results() + "/" + f), "the user's " + f + "\n") << f;
}

// A folder an earlier run wrote is this run's only once its set-up succeeded: a run that fails in set-up leaves the
// earlier record whole; one that gets past it replaces that record and says so.
TEST(Edges, AnEarlierRecordIsReplacedOnlyAfterSetUp) {
  Edge e;
  e.Generate();
  const int first = e.Run().code;
  ASSERT_TRUE(first == 0 || first == 3) << first;  // completed (3: the AU bar missed on a busy machine)
  const std::string before = test::ReadFile(e.results() + "/summary.json");
  ASSERT_TRUE(fs::exists(e.results() + "/steps.csv"));
  auto failed = Sh(Feedrate("run -w unet3d_h100 --data-dir /nonexistent " + e.small() + " --results-dir " + e.results()));
  EXPECT_EQ(failed.code, 2) << failed.output;
  EXPECT_EQ(test::ReadFile(e.results() + "/summary.json"), before);
  EXPECT_TRUE(fs::exists(e.results() + "/steps.csv"));
  auto again = e.Run();
  EXPECT_TRUE(again.code == 0 || again.code == 3) << again.output;
  EXPECT_NE(again.output.find("held an earlier run's record; replacing it"), std::string::npos) << again.output;
  EXPECT_NE(test::ReadFile(e.results() + "/summary.json"), before);
}

// `feedrate dlio` writes only DLIO's file names into hydra.run.dir (mlpstorage's or the user's folder) and removes
// nothing there.
TEST(Edges, ADlioRunFolderKeepsWhatDlioDoesNotWrite) {
  Edge e;
  e.Generate();
  const std::string run = e.dir / "hydra";
  fs::create_directories(run);
  for (const char* f : {"config.yaml", "steps.csv", "per_epoch.csv", "report.md", "mine.txt"}) test::WriteFile(run + "/" + f, "keep\n");
  auto r = Sh(Feedrate("dlio workload=unet3d_h100 ++workload.dataset.data_folder=" + e.data() +
                       " ++workload.dataset.num_files_train=4 ++workload.dataset.record_length_bytes=20000"
                       " ++workload.dataset.record_length_bytes_stdev=5000"
                       " ++workload.reader.batch_size=1 ++workload.train.computation_time=0.001 ++hydra.run.dir=" + run));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::exists(run + "/0_output.json")) << r.output;
  for (const char* f : {"config.yaml", "steps.csv", "per_epoch.csv", "report.md", "mine.txt"}) {
    EXPECT_EQ(test::ReadFile(run + "/" + f), "keep\n") << f;
  }
  EXPECT_FALSE(fs::exists(run + "/timeseries.csv"));
}

// Every string and number a summary, a DLIO summary or a sweep holds replaced by an injection marker (markup, a line
// break and a heading, ESC and C1 controls, a spreadsheet formula): the report, its markdown and results.csv carry
// none of it as syntax, and the command ends cleanly.
TEST(Edges, NoOutputCarriesAnUnescapedValue) {
  Edge e;
  e.Generate();
  const int first = e.Run().code;
  ASSERT_TRUE(first == 0 || first == 3) << first;
  const std::string mark = "<img src=x onerror=alert(1)>\n# heading \x1b[31m\xc2\x9b=HYPERLINK(\"x\")|`*_";
  bool numbers_too = true;  // first every number a formula too (refused or read as missing), then strings only
  std::function<json(const json&)> poison = [&](const json& j) -> json {
    if (j.is_object()) {
      json o = json::object();
      for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = poison(it.value());
      return o;
    }
    if (j.is_array()) {
      json a = json::array();
      for (const auto& v : j) a.push_back(poison(v));
      return a;
    }
    if (j.is_number()) return numbers_too ? json("=HYPERLINK(\"x\")") : j;
    return j.is_string() ? json(j.get<std::string>().empty() ? mark : "=" + mark) : j;
  };
  const json summary = ReadJson(e.results() + "/summary.json");
  const std::string run = e.dir / "in/run", dlio = e.dir / "in/dlio", sweep = e.dir / "in/sweep";
  for (const auto& d : {run, dlio, sweep}) fs::create_directories(d);
  json theirs = summary;
  theirs.erase("feedrate");
  const json sw = {{"workload", "w"}, {"accelerators_supported", 4}, {"lower_bound_only", false}, {"au_bar_pct", 90},
                   {"validity", {{"category", "OPEN"}, {"reasons", {"r"}}}}, {"bottleneck", {{"limit", "l"}, {"explanation", "x"}}},
                   {"points", {{{"accelerators", 4}, {"runs", {{{"repeat", 1}, {"au_pct", 99}, {"exit_code", 0}, {"results_dir", run}}}}}}}};
  const std::string out = e.dir / "out/report.html";
  const std::string report = Feedrate("report " + run + " " + dlio + " " + sweep + " -o " + out);
  for (const bool numbers : {true, false}) {
    numbers_too = numbers;
    test::WriteFile(run + "/summary.json", poison(summary).dump(2));
    test::WriteFile(dlio + "/summary.json", poison(theirs).dump(2));
    test::WriteFile(sweep + "/sweep.json", poison(sw).dump(2));
    auto r = Sh(report);
    if (numbers) {
      EXPECT_TRUE(r.code == 0 || r.code == 2) << r.output;  // a clean end either way, never a crash
    } else {
      ASSERT_EQ(r.code, 0) << r.output;
    }
  }
  const std::string html = test::ReadFile(out), md = test::ReadFile(e.dir / "out/report.md");
  const std::string csv = test::ReadFile(e.dir / "out/results.csv");
  for (const auto& [name, text] : {std::pair{"report.html", html}, std::pair{"report.md", md}, std::pair{"results.csv", csv}}) {
    if (std::string(name) != "results.csv") {
      EXPECT_EQ(text.find("<img"), std::string::npos) << name;  // (markup is text in CSV)
    }
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << name;
    EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << name;
  }
  EXPECT_EQ(md.find("\n# heading"), std::string::npos);
  bool quoted = false, cell_start = true;  // every cell's first character (inside its quotes) is not a formula's
  for (size_t i = 0; i < csv.size(); ++i) {
    const char c = csv[i];
    if (cell_start && c == '"' && !quoted) {
      quoted = true;
      continue;
    }
    if (cell_start) {
      EXPECT_TRUE(c != '=' && c != '@' && c != '+') << "a cell starting with a formula at " << i;
    }
    const bool opened_here = cell_start;
    cell_start = false;
    if (c == '"' && !opened_here) quoted = !quoted;
    if (!quoted && (c == ',' || c == '\n')) cell_start = true;
  }
}

// A folder name that is not UTF-8 (Latin-1, legal on Linux) runs: the summary is valid JSON with U+FFFD in its place
// and names the field; a summary.json that is a FIFO is refused by report at once instead of waited on.
TEST(Edges, ANameThatIsNotUtf8RunsAndAFifoIsNotWaitedOn) {
  Edge e;
  const std::string data = e.dir / "daten_\xe9";
  auto g = Sh(Feedrate("datagen -w unet3d_h100 --data-dir '" + data + "' " + SmallDatasetParams(4, 20000)));
  ASSERT_EQ(g.code, 0) << g.output;
  auto r = Sh(Feedrate("run -w unet3d_h100 --data-dir '" + data + "' " + e.small() + " --results-dir " + e.results()));
  EXPECT_TRUE(r.code == 0 || r.code == 3) << r.output;
  EXPECT_NE(r.output.find("not valid UTF-8"), std::string::npos) << r.output;
  const json s = json::parse(test::ReadFile(e.results() + "/summary.json"));  // (throws on invalid UTF-8)
  const std::string warnings = s["feedrate"]["warnings"].dump();
  EXPECT_NE(warnings.find("not valid UTF-8"), std::string::npos) << warnings;
  const std::string fifo = e.dir / "fifo";
  fs::create_directories(fifo);
  ASSERT_EQ(::mkfifo((fifo + "/summary.json").c_str(), 0644), 0);
  auto rep = Sh(Feedrate("report " + fifo + " -o " + (e.dir / "rep/report.html")), 20);
  EXPECT_EQ(rep.code, 2) << rep.output;
  EXPECT_NE(rep.output.find("a FIFO"), std::string::npos) << rep.output;
}

// A thread the system refuses (a pids cgroup of 40 tasks, 64 accelerators): the run ends with the cause named, exit 2
// and a failed record, where it aborted ("terminate called without an active exception") with summary.json left
// "running". Needs root for the cgroup (CI and the test command run as root).
TEST(Edges, AThreadTheSystemRefusesEndsTheRunNamingIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "a pids cgroup needs root";
  Edge e;
  const std::string shape = SmallDatasetParams(128, 4096) + " --param reader.batch_size=1 --param train.computation_time=0.001";
  ASSERT_EQ(Sh(Feedrate("datagen -w unet3d_h100 --data-dir " + e.data() + " " + shape)).code, 0);
  std::string group = "/sys/fs/cgroup/pids/feedrate-test-" + std::to_string(::getpid());
  if (!fs::exists("/sys/fs/cgroup/pids")) group = "/sys/fs/cgroup/unified/feedrate-test-" + std::to_string(::getpid());
  ASSERT_TRUE(fs::create_directory(group)) << group;
  test::WriteFile(group + "/pids.max", "40\n");
  auto r = Sh("sh -c 'echo $$ > " + group + "/cgroup.procs && exec " +
              Feedrate("run -w unet3d_h100 --data-dir " + e.data() + " " + shape + " -n 64 --results-dir " + e.results()) + "'");
  // The cgroup empties once the run's exiting threads are reaped, a moment after the shell returned: rmdir until then.
  std::error_code gone;
  for (int i = 0; i < 200 && !fs::remove(group, gone) && gone == std::errc::device_or_resource_busy; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_FALSE(gone) << group << ": " << gone.message();
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot start"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("thread"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  EXPECT_EQ(ReadJson(e.results() + "/summary.json")["feedrate"]["status"], "failed");
}

// An https endpoint signed by a private CA (an in-house object store): refused by default (the system's trust store),
// accepted with AWS_CA_BUNDLE naming its certificate, as the AWS CLI reads it; an unreadable bundle is named.
// A loopback `openssl s_server` with a throwaway self-signed certificate stands for the store.
TEST(Edges, APrivateCaIsTrustedThroughAwsCaBundle) {
  test::TempDir dir;
  const std::string key = dir / "key.pem", cert = dir / "cert.pem";
  ASSERT_EQ(Sh("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1"
               " -keyout " + key + " -out " + cert + " 2>&1").code, 0);
  const int port = 20000 + ::getpid() % 20000;
  const std::string server = "openssl s_server -quiet -www -accept 127.0.0.1:" + std::to_string(port) + " -key " + key +
                             " -cert " + cert;
  // (A run's listing GETs: `s_server -www` answers a GET with its status page, never a HEAD.)
  const std::string inspect = Feedrate("run -w unet3d_h100 --storage s3://bucket/ds --results-dir " + (dir / "r") +
                                       " --endpoint https://127.0.0.1:" + std::to_string(port));
  // The server lives for the three commands (a shell runs it in the background and stops it); they start once it
  // accepts a connection (a loaded CI machine takes over a second to start it: a fixed wait once lost the race).
  const std::string listening = "for i in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) +
                                ") 2>/dev/null && break; sleep 0.05; done; ";
  const std::string script =
      server + " >/dev/null 2>&1 & s=$!; " + listening + "AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b " + inspect +
      "; echo rc1=$?; "
      "AWS_CA_BUNDLE=" +
      cert + " AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b " + inspect +
      "; echo rc2=$?; "
      "AWS_CA_BUNDLE=" +
      (dir / "none.pem") + " AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b " + inspect + "; echo rc3=$?; kill $s";
  auto r = Sh("bash -c '" + script + "'", 60);
  const size_t rc1 = r.output.find("rc1="), rc2 = r.output.find("rc2="), rc3 = r.output.find("rc3=");
  ASSERT_TRUE(rc1 != std::string::npos && rc2 != std::string::npos && rc3 != std::string::npos) << r.output;
  const std::string without = r.output.substr(0, rc1), with = r.output.substr(rc1, rc2 - rc1), none = r.output.substr(rc2, rc3 - rc2);
  EXPECT_NE(without.find("certificate"), std::string::npos) << without;  // the system's store does not know it
  EXPECT_EQ(with.find("certificate"), std::string::npos) << with;        // TLS passes; what follows is HTTP's answer
  EXPECT_NE(with.find("not a ListBucketResult"), std::string::npos) << with;
  EXPECT_NE(none.find("none.pem"), std::string::npos) << none;
  EXPECT_NE(none.find("AWS_CA_BUNDLE"), std::string::npos) << none;
}

// Two runs with the default folder started in the same second get two folders.
TEST(Edges, DefaultFoldersNeverCollide) {
  Edge e;
  e.Generate();
  const std::string cmd = "cd " + e.dir.path() + " && " +
                          Feedrate("run -w unet3d_h100 --data-dir " + e.data() + " " + e.small() + " -q");
  auto r = Sh(cmd + " & " + cmd + " & wait");
  ASSERT_NE(r.code, 124) << r.output;
  size_t folders = 0;
  EXPECT_FALSE(fs::exists(e.dir / "results")) << "default folders go under feedrate-results/, not results/";
  for (const auto& d : fs::directory_iterator(e.dir / "feedrate-results")) {
    ++folders;
    const std::string status = ReadJson((d.path() / "summary.json").string())["feedrate"]["status"];
    EXPECT_TRUE(status == "success" || status == "missed_au") << d.path() << ": " << status;  // completed (AU aside)
  }
  EXPECT_EQ(folders, 2u);
}

// A results disk that fills up while the record is written: exit 2 and no summary that says success (issue 36: a
// 16 KiB tmpfs). Needs root for the mount (CI and the test command run as root).
TEST(Edges, AFullResultsDiskLeavesNoSuccessShapedSummary) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  Edge e;
  e.Generate();
  fs::create_directories(e.results());
  ASSERT_EQ(::mount("tmpfs", e.results().c_str(), "tmpfs", 0, "size=16k"), 0) << std::strerror(errno);
  auto r = Sh(Feedrate("run -w unet3d_h100 --data-dir " + e.data() + " " + e.small() + " --param train.epochs=40 "
                       "--results-dir " + e.results() + "/r"));
  const auto s = ReadJson(e.results() + "/r/summary.json");
  ::umount(e.results().c_str());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("No space left"), std::string::npos) << r.output;
  if (!s.is_null()) {
    EXPECT_NE(s["feedrate"]["status"], "success") << s.dump(2).substr(0, 400);
  }
}

// A job its launcher ends: mpirun passes SIGTERM to the ranks and SIGKILLs them about 2 s later. The ranks, in a
// day-long compute step, stop at once and leave an "interrupted" record before that (it was an empty folder or a
// "running" summary). The bound is a hang detector; mpirun itself takes its ~2 s.
TEST(Edges, ARunItsLauncherEndsLeavesItsRecord) {
  Edge e;
  e.Generate();
  SignalPlan plan;
  plan.command = MpiFeedrate(2, "run -w unet3d_h100 --data-dir " + e.data() + " " + e.small() +
                                    " --param train.computation_time=86400 --json-events --results-dir " + e.results());
  plan.log = e.dir / "log";
  plan.marker = "\"event\":\"training_start\"";
  plan.signal = "TERM";
  const Signalled r = SignalOnMarker(plan);
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_GE(r.seconds, 0) << r.output;
  EXPECT_LT(r.seconds, 30) << r.output;
  const auto s = ReadJson(e.results() + "/summary.json");
  ASSERT_TRUE(s.is_object()) << r.output;
  EXPECT_EQ(s["feedrate"]["status"], "interrupted") << s.dump();
  EXPECT_FALSE(s.contains("metric"));
}

// An option a command refuses, given to several ranks: every rank leaves with exit 2 (rank 0 says why), none waits
// in a collective for the ones that left (checkpoint's ranks other than 0 waited 30 minutes).
TEST(Edges, EveryRankLeavesTogetherOnARefusedOption) {
  Edge e;
  const std::vector<std::string> refused = {
      "checkpoint -w llama3_8b --data-dir " + e.data() + " --dir " + (e.dir / "ck") + " --scale 0.001",
      "run -w unet3d_h100 --data-dir " + e.data() + " --param reader.batch_size=0 --results-dir " + e.results(),
      "datagen -w unet3d_h100 --data-dir " + e.data() + " --param dataset.num_files_train=-3",
  };
  for (const auto& args : refused) {
    SCOPED_TRACE(args);
    const auto r = Sh(MpiFeedrate(3, args), 90);
    EXPECT_EQ(r.code, 2) << r.output;  // 124: a rank was left waiting
  }
}

// Ranks that are not running one job (issue 51, item 6): a host whose workload file says something else, or whose
// workload file is missing, is named before the first collective that the difference would break, and every rank
// leaves with exit 2. MPMD mpirun gives each rank its own command line, as each host reads its own file; before, a
// differing workload ended in "MPI Error in NBC subrequest" and a missing one left rank 0 waiting in set-up.
TEST(Edges, RanksThatAreNotOneJobAreNamedBeforeTheyMeet) {
  Edge e;
  e.Generate();
  const std::string w = e.dir / "mine.yaml";
  fs::copy_file(std::string(FEEDRATE_SOURCE_DIR) + "/workloads/unet3d_h100.yaml", w);
  const std::string common = " --data-dir " + e.data() + " " + e.small() + " --collective-timeout 30 --results-dir " +
                             e.results();
  auto mpmd = [&](const std::string& rank1) {
    return std::string(FEEDRATE_MPIEXEC) + " --allow-run-as-root --oversubscribe -np 1 " +
           Feedrate("run -w " + w + common) + " : -np 1 " + Feedrate("run " + rank1 + common);
  };
  const auto agree = Sh(mpmd("-w " + w));  // the same file: one job
  EXPECT_TRUE(agree.code == 0 || agree.code == 3) << agree.output;

  fs::remove_all(e.results());
  const auto other = Sh(mpmd("-w " + w + " --param reader.read_threads=2"), 90);
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("the resolved workload on rank 1 ("), std::string::npos) << other.output;
  EXPECT_NE(other.output.find(") differs from rank 0 ("), std::string::npos) << other.output;
  EXPECT_FALSE(fs::exists(e.results())) << "nothing claimed for a job that never started";

  const auto missing = Sh(mpmd("-w " + (e.dir / "not-on-this-host.yaml")), 90);
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("rank 1 ("), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("could not load the workload that rank 0 ("), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("not-on-this-host.yaml"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace feedrate::it
