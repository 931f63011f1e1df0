// --cache: what a client node does to its page cache around the epochs (drop before the run and between epochs,
// drop once before the run, keep, or bypass it with O_DIRECT), and proof of whether the drop worked.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loader/io/page_cache.h"
#include "loader/status.h"

namespace feedrate {

enum class CacheMode { kKeep, kDrop, kDropOnce, kDirect };
// "keep", "drop", "drop-once", "direct"; nullopt-like failure as InvalidArgument.
Result<CacheMode> ParseCacheMode(const std::string& s);
const char* CacheModeName(CacheMode m);

// One rank's cache control over the files it reads. Epoch hooks run inside the epoch-start barrier, before the
// ranks agree to start, so every node's drop is over before any accelerator reads.
class CacheControl {
 public:
  // `files`: the files this rank reads (may be empty in keep mode, which evicts nothing; `rank_files` counts
  // them for the summary). `system_drop`: also drop the host's whole page cache (/proc/sys/vm/drop_caches), done
  // by `host_leader` only.
  CacheControl(CacheMode mode, std::vector<std::string> files, size_t rank_files, bool system_drop, bool host_leader);
  // The emulated DLIO's own flush (MLPerf Storage v3.0's: `echo 3 > /proc/sys/vm/drop_caches` on rank 0's node):
  // the host leader drops the node's page cache and nothing is evicted file by file (no open per file, which on a
  // FUSE or network store is a request each between the epochs); where that is not permitted (not root) the files
  // are evicted one by one instead, said once. Call before the first epoch.
  void PreferSystemDrop() { prefer_system_ = true; }

  CacheMode mode() const { return mode_; }
  bool DropsBefore(uint64_t epoch) const {
    return mode_ == CacheMode::kDrop || (mode_ == CacheMode::kDropOnce && epoch == 1);
  }
  // Evicts this rank's files when the mode asks for it before `epoch`. The first drop is checked: whole-file
  // residency of up to 16 of the files (spread over the list) before and after. An eviction that fails is an error
  // naming the file; a system drop that is not permitted is a warning (the per-file eviction still ran).
  Status BeforeEpoch(uint64_t epoch);

  // For summary.json (rank-level; combined over ranks by the results writer).
  nlohmann::json ToJson() const;
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<size_t> SampleFiles() const;
  Status Finished(bool first, const std::vector<size_t>& sample, int64_t t0);
  Residency Probe(const std::vector<size_t>& which) const;

  CacheMode mode_;
  size_t rank_files_ = 0;
  std::vector<std::string> files_;
  bool system_drop_;
  bool host_leader_;
  bool prefer_system_ = false;
  bool system_failed_ = false;  // PreferSystemDrop: the drop was refused, so the files are evicted instead
  uint64_t drops_ = 0;
  double drop_seconds_ = 0;
  bool checked_ = false;
  Residency before_, after_;
  std::string system_drop_result_ = "not asked";
  std::vector<std::string> warnings_;
};

}  // namespace feedrate
