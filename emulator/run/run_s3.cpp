// The S3 side of a run's setup (see run_s3.h).
#include "emulator/run/run_s3.h"

#include "emulator/training/interrupt.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "emulator/run/run_listing.h"

namespace feedrate {
namespace {

// The store, a client, and the checks that only make sense for files.
Status ConnectS3(const WorkloadConfig& cfg, CacheMode cache, S3RunSetup* s) {
  if (cfg.odirect) {
    return Status::InvalidArgument("reader.odirect applies to files; an S3 dataset (" + cfg.DataLocation() +
                                   ") is read with ranged GETs");
  }
  if (cache != CacheMode::kKeep) {
    return Status::InvalidArgument("--cache " + std::string(CacheModeName(cache)) + ": an S3 dataset has no client page cache to drop (epoch 1 is "
                                   "the first touch, later epochs repeat reads: summary.json reports them apart)");
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto store, S3StoreFor(cfg));
  s->store = std::move(store);
  s->store.stop = InterruptFlag();  // a listing that never ends still stops at SIGINT
  FEEDRATE_ASSIGN_OR_RETURN(auto client, s->store.Connect(4));
  s->client = std::move(client);
  return Status::Ok();
}

}  // namespace

void PrepareS3(const WorkloadConfig& cfg, CacheMode cache, S3RunSetup* s) {
  s->connected = ConnectS3(cfg, cache, s);
}

Result<PathList> ListS3Split(const WorkloadConfig& cfg, const Comm& comm, const std::string& split, uint64_t n,
                             uint64_t subfolders, std::span<const char> keep, S3RunSetup* s) {
  std::vector<std::string> keys;
  S3SizeMap all_sizes;
  std::optional<Result<ListingSource>> src;  // rank 0's listing (or why there is none); the other ranks have none
  if (comm.root()) {
    Status st = s->connected;
    if (st.ok()) {
      auto listed = DiscoverS3Objects(*s->client, s->store, split, cfg.format, n, subfolders, &all_sizes);
      if (listed.ok()) keys = std::move(*listed);
      st = listed.status();
    }
    if (st.ok()) {
      src.emplace(ListingSource{keys.size(), [&](size_t i, std::string* out) { out->append(keys[i]); },
                                [&](size_t i) { return all_sizes[keys[i]]; }});
    } else {
      src.emplace(st);
    }
  }
  // The kept keys' sizes, by index until the keys are known.
  std::vector<std::pair<size_t, uint64_t>> sizes;
  auto kept = ShareListing(comm, src ? &*src : nullptr, keep,
                           [&](size_t i, uint64_t size) { sizes.emplace_back(i, size); });
  if (!s->connected.ok()) return s->connected;  // (after the broadcasts: nobody waits for this rank)
  if (!kept.ok()) return kept.status();
  for (const auto& [i, size] : sizes) s->sizes[std::string(kept->view(i))] = size;
  return kept;
}

void AddS3Facts(const S3RunSetup& s, const S3EngineFigures& f, nlohmann::json* storage) {
  (*storage)["kind"] = "s3";
  (*storage)["device"] = s.store.endpoint.url;
  (*storage)["model"] = "bucket " + s.store.bucket;
  (*storage)["s3"] = {{"get_requests", f.get_requests}, {"retries", f.retries}, {"max_gets_in_flight", f.max_in_flight}};
}

Result<uint64_t> ReadS3ContentMarker(S3RunSetup& s) {
  const std::string key = s.store.Key(".feedrate-content");
  FEEDRATE_ASSIGN_OR_RETURN(auto text, GetS3Text(*s.client, key));
  return ParseContentMarker(text, s.store.Url(key));
}

}  // namespace feedrate
