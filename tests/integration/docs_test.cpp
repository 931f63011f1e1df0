// The docs and --help agree (issue 50, item 6): every option README.md and docs/*.md name is one that some
// command's --help lists (or another tool's, listed here with whose), and every option of the main commands is
// documented somewhere a user reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "harness.h"

namespace feedrate::it {
namespace {

namespace fs = std::filesystem;

const char* const kOption = R"(--[a-z][a-z0-9_-]*[a-z0-9])";

std::set<std::string> OptionsIn(const std::string& text, bool after_separator) {
  std::set<std::string> found;
  const std::regex rx(after_separator ? std::string(R"((?:^|[\s`(\[=,;|])()") + kOption + ")" : std::string("(") + kOption + ")");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), rx); it != std::sregex_iterator(); ++it) {
    found.insert((*it)[1].str());
  }
  return found;
}

// Every option README.md and docs/*.md name, with the first file that names it.
std::map<std::string, std::string> DocumentedOptions() {
  std::vector<fs::path> files = {fs::path(FEEDRATE_SOURCE_DIR) / "README.md"};
  for (const auto& e : fs::directory_iterator(fs::path(FEEDRATE_SOURCE_DIR) / "docs")) {
    if (e.path().extension() == ".md") files.push_back(e.path());
  }
  std::map<std::string, std::string> named;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    for (const auto& o : OptionsIn(ss.str(), true)) named.emplace(o, f.filename().string());
  }
  return named;
}

std::set<std::string> HelpOptions(const std::string& command) {
  const auto r = Sh(Feedrate(command + " --help"));
  EXPECT_EQ(r.code, 0) << command << ": " << r.output;
  return OptionsIn(r.output, false);
}

// Options the docs quote from the tools beside Feedrate, each with whose it is.
const std::map<std::string, std::string> kOtherTools = {{"--allow-run-as-root", "mpirun"},
                                                        {"--oversubscribe", "mpirun"},
                                                        {"--host", "mpirun"},
                                                        {"--map-by", "mpirun"},
                                                        {"--build", "cmake"},
                                                        {"--preset", "cmake"},
                                                        {"--install", "cmake"},
                                                        {"--dlio-bin-path", "mlpstorage"},
                                                        {"--num-processes", "mlpstorage"},
                                                        {"--dump-dom", "chromium"},
                                                        {"--headless", "chromium"},
                                                        {"--end_fsync", "fio"},
                                                        {"--rate-mbit", "tests/multihost/mh.sh"},
                                                        {"--build-arg", "podman"},
                                                        {"--privileged", "podman"},
                                                        {"--rm", "podman"},
                                                        {"--ulimit", "podman"},
                                                        {"--mpi", "srun"},
                                                        {"--ntasks-per-node", "srun"},
                                                        {"--nodes", "sbatch"},
                                                        {"--cpus-per-task", "srun"},
                                                        {"--job-name", "sbatch"},
                                                        {"--time", "sbatch"},
                                                        {"--wait", "sbatch"},
                                                        {"--variant", "debootstrap"}};

TEST(Docs, EveryDocumentedOptionIsInHelpAndTheMainCommandsAreDocumented) {
  std::set<std::string> help = HelpOptions("");
  for (const char* c : {"run", "sweep", "datagen", "checkpoint", "iobench", "inspect", "datasize", "report", "workloads", "dlio"}) {
    const auto mine = HelpOptions(c);
    help.insert(mine.begin(), mine.end());
  }
  const auto documented = DocumentedOptions();
  ASSERT_GT(documented.size(), 50u) << "the docs were not read";
  for (const auto& [option, file] : documented) {
    if (kOtherTools.count(option) != 0) continue;
    EXPECT_TRUE(help.count(option) != 0) << file << " names " << option << ", which no command's --help lists";
  }
  for (const auto& [option, tool] : kOtherTools) {
    EXPECT_TRUE(help.count(option) == 0) << option << " is Feedrate's now, not only " << tool << "'s: take it off the list";
  }
  for (const char* c : {"run", "sweep", "datagen", "checkpoint"}) {
    for (const auto& option : HelpOptions(c)) {
      EXPECT_TRUE(documented.count(option) != 0) << c << " --help lists " << option << ", which no doc names";
    }
  }
}

}  // namespace
}  // namespace feedrate::it
