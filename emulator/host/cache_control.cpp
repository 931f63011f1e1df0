// Page-cache control around epochs.
#include "emulator/host/cache_control.h"

#include <algorithm>

#include "loader/util/clock.h"

namespace feedrate {

Result<CacheMode> ParseCacheMode(const std::string& s) {
  if (s == "keep") return CacheMode::kKeep;
  if (s == "drop") return CacheMode::kDrop;
  if (s == "drop-once") return CacheMode::kDropOnce;
  if (s == "direct") return CacheMode::kDirect;
  return Status::InvalidArgument("--cache: '" + s + "' is not one of keep, drop, drop-once, direct");
}

const char* CacheModeName(CacheMode m) {
  switch (m) {
    case CacheMode::kKeep: return "keep";
    case CacheMode::kDrop: return "drop";
    case CacheMode::kDropOnce: return "drop-once";
    case CacheMode::kDirect: return "direct";
  }
  return "?";
}

CacheControl::CacheControl(CacheMode mode, std::vector<std::string> files, size_t rank_files, bool system_drop,
                           bool host_leader)
    : mode_(mode), rank_files_(rank_files), files_(std::move(files)), system_drop_(system_drop), host_leader_(host_leader) {
  if (system_drop_) system_drop_result_ = host_leader_ ? "not yet" : "done by another rank of this host";
}

std::vector<size_t> CacheControl::SampleFiles() const {
  std::vector<size_t> which;
  const size_t n = std::min<size_t>(16, files_.size());
  for (size_t i = 0; i < n; ++i) which.push_back(i * files_.size() / n);
  return which;
}

Residency CacheControl::Probe(const std::vector<size_t>& which) const {
  Residency r;
  for (size_t i : which) {
    auto one = ProbeFileResidency(files_[i]);
    if (one.ok()) r += *one;
  }
  return r;
}

Status CacheControl::BeforeEpoch(uint64_t epoch) {
  if (!DropsBefore(epoch)) return Status::Ok();
  const int64_t t0 = NowNs();
  const bool first = drops_ == 0;
  std::vector<size_t> sample;
  if (first && !prefer_system_) {  // (the node-wide drop opens no file: nothing is sampled either)
    sample = SampleFiles();
    before_ = Probe(sample);
  }
  if (prefer_system_ && !system_failed_) {
    Status st = host_leader_ ? DropSystemCaches(/*sync_first=*/false) : Status::Ok();  // (as DLIO: no sync)
    if (st.ok()) {
      system_drop_result_ = host_leader_ ? "done (the node's page cache, as the emulated DLIO flushes it)" : "done by another rank of this host";
      return Finished(first, sample, t0);
    }
    system_failed_ = true;
    system_drop_result_ = st.message();
    warnings_.push_back("the emulated DLIO drops the node's page cache before every epoch; here " + st.message() +
                        ": the dataset's files are evicted one by one instead (an open each)");
  }
  for (const auto& f : files_) {
    // Dirty pages cannot be dropped: the first pass writes them back (a dataset generated just now is dirty).
    Status st = EvictFromPageCache(f, first);
    if (!st.ok()) return st.WithContext("--cache " + std::string(CacheModeName(mode_)));
  }
  if (system_drop_ && host_leader_) {
    Status st = DropSystemCaches();
    system_drop_result_ = st.ok() ? "done" : st.message();
    if (!st.ok() && first) warnings_.push_back("--drop-system-caches: " + st.message() + "; the per-file eviction still ran");
  }
  return Finished(first, sample, t0);
}

// The first drop's check (the sampled files' residency after it) and the drop's count and time.
Status CacheControl::Finished(bool first, const std::vector<size_t>& sample, int64_t t0) {
  if (first && !sample.empty()) {
    after_ = Probe(sample);
    checked_ = true;
    if (after_.bytes > 0 && after_.fraction() > 0.02) {
      warnings_.push_back("--cache " + std::string(CacheModeName(mode_)) + " did not empty the page cache: " +
                          std::to_string(static_cast<int>(100 * after_.fraction() + 0.5)) +
                          "% of the sampled files stayed resident after the drop (tmpfs and ramfs keep files in "
                          "memory; locked or mapped pages stay)");
    }
  }
  ++drops_;
  drop_seconds_ += static_cast<double>(NowNs() - t0) / 1e9;
  return Status::Ok();
}

nlohmann::json CacheControl::ToJson() const {
  nlohmann::json j = {{"drops", drops_}, {"drop_seconds", drop_seconds_}, {"files", rank_files_},
                      {"system_drop", system_drop_result_}, {"warnings", warnings_}};
  if (checked_) {
    j["checked_bytes"] = before_.bytes;
    j["resident_before"] = before_.resident_bytes;
    j["resident_after"] = after_.resident_bytes;
  }
  return j;
}

}  // namespace feedrate
