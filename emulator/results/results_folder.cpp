// Where a command's record goes and who may write there: default folders, the claim on a folder (a folder Feedrate
// did not create is the user's), and how an unfinished run ends on rank 0.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "emulator/results/results.h"
#include "loader/io/safe_file.h"

namespace feedrate {

std::string ResultsDirOr(const std::string& given, const std::string& name) {
  std::string plain = name;  // (a workload's name is the user's: one path component, '/' and controls as '_')
  for (char& c : plain) c = c == '/' || static_cast<unsigned char>(c) < 0x20 ? '_' : c;
  return given.empty() ? "feedrate-results/" + NowCompact() + "_" + plain : given;
}

Status CreateResultsDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Errno("cannot create results directory " + dir, ec.value());
  return Status::Ok();
}

const std::vector<std::string>& RunRecordFiles() {
  static const std::vector<std::string> files = {"summary.json", "config.yaml", "per_epoch.csv", "steps.csv",
                                                 "timeseries.csv", "report.md"};
  return files;
}

namespace {

// mkdir of the last component alone: EEXIST says another run (or anything) has the name.
int MakeDir(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  return ::mkdir(dir.c_str(), 0755) == 0 ? 0 : errno;
}

// Whether `file` (summary.json, sweep.json) is a Feedrate record: a JSON object with a "feedrate" object (runs,
// checkpoints) or a sweep's answer (accelerators_supported). A symlink, FIFO or anything unreadable there is not.
bool IsFeedrateRecord(const std::string& file) {
  const Result<std::string> text = ReadSmallRegularFile(file);
  if (!text.ok()) return false;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  return (j.contains("feedrate") && j["feedrate"].is_object()) || j.contains("accelerators_supported");
}

// A --results-dir that exists: empty (ours), an earlier Feedrate record (ours after Commit), or the user's (refused,
// naming a few of what it holds).
Result<bool> NamedFolderHoldsRecord(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) return Status::Errno("cannot list results directory " + dir, ec.value());
  if (names.empty()) return false;
  if (IsFeedrateRecord(dir + "/summary.json") || IsFeedrateRecord(dir + "/sweep.json")) return true;
  std::sort(names.begin(), names.end());
  std::string some;
  for (size_t i = 0; i < names.size() && i < 3; ++i) some += (i ? ", " : "") + names[i];
  if (names.size() > 3) some += ", ... (" + std::to_string(names.size()) + " entries)";
  return Status::InvalidArgument("results directory " + dir + " holds files that are not a Feedrate record (" + some +
                                 "): Feedrate writes its record only into a new or empty folder, or one an earlier "
                                 "Feedrate run wrote; give another --results-dir");
}

}  // namespace

Result<ResultsDirClaim> ClaimResultsDir(const std::string& dir, ResultsFolder kind) {
  ResultsDirClaim claim;
  claim.dir_ = dir;
  bool earlier_record = false;
  if (kind == ResultsFolder::kNew) {
    int err = MakeDir(dir);
    for (int k = 2; err == EEXIST && k < 1000; ++k) err = MakeDir(claim.dir_ = dir + "-" + std::to_string(k));
    if (err != 0) return Status::Errno("cannot create results directory " + claim.dir_, err);
  } else {
    std::error_code ec;
    const bool existed = std::filesystem::exists(dir, ec);
    if (existed && !std::filesystem::is_directory(dir, ec)) {
      return Status::InvalidArgument("results directory " + dir + " exists and is not a directory");
    }
    FEEDRATE_RETURN_IF_ERROR(CreateResultsDir(dir));
    earlier_record = existed && kind == ResultsFolder::kNamed;  // (what it holds is looked at under the lock)
  }
  claim.lock_ = UniqueFd(::open(claim.dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!claim.lock_.valid()) return Status::Errno("cannot open results directory " + claim.dir_, errno);
  if (::flock(claim.lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Status::InvalidArgument("results directory " + claim.dir_ + " is in use by another Feedrate run; give "
                                     "each run its own --results-dir");
    }
    return Status::Errno("cannot lock results directory " + claim.dir_, errno);
  }
  if (earlier_record) {
    FEEDRATE_ASSIGN_OR_RETURN(earlier_record, NamedFolderHoldsRecord(claim.dir_));
  }
  claim.committed_ = !earlier_record;
  return claim;
}

Status ResultsDirClaim::Commit() {
  if (committed_) return Status::Ok();
  std::string removed;
  for (const auto& name : RunRecordFiles()) {
    const std::string p = dir_ + "/" + name;
    if (::unlink(p.c_str()) == 0) {
      removed += (removed.empty() ? "" : ", ") + name;
    } else if (errno != ENOENT) {
      return Status::Errno("cannot remove the earlier run's " + p, errno);
    }
  }
  if (!removed.empty()) std::fprintf(stderr, "feedrate: note: %s held an earlier run's record; replacing it (%s)\n", dir_.c_str(), removed.c_str());
  committed_ = true;
  return Status::Ok();
}

void ReportUnfinishedRun(const std::string& dir, const std::string& status, const std::string& error,
                         const std::function<Status()>& write_summary) {
  std::fprintf(stderr, "feedrate: %s: %s\n", status == "failed" ? "error" : status.c_str(), error.c_str());
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return;
  Status w = write_summary();
  if (!w.ok()) std::fprintf(stderr, "feedrate: error: %s\n", w.ToString().c_str());
}

}  // namespace feedrate
