// The S3 side of a run's setup (see run_s3.h).
#include "emulator/run/run_s3.h"

#include <nlohmann/json.hpp>

namespace feedrate {
namespace {

// The store, a client, and the checks that only make sense for files.
Status ConnectS3(const WorkloadConfig& cfg, CacheMode cache, const std::string& cache_arg, S3RunSetup* s) {
  if (cfg.odirect) {
    return Status::InvalidArgument("reader.odirect applies to files; an S3 dataset (" + cfg.DataLocation() +
                                   ") is read with ranged GETs");
  }
  if (cache != CacheMode::kKeep) {
    return Status::InvalidArgument("--cache " + cache_arg + ": an S3 dataset has no client page cache to drop (epoch 1 is "
                                   "the first touch, later epochs repeat reads: summary.json reports them apart)");
  }
  FEEDRATE_ASSIGN_OR_RETURN(auto store, S3StoreFor(cfg));
  s->store = std::move(store);
  FEEDRATE_ASSIGN_OR_RETURN(auto client, s->store.Connect(4));
  s->client = std::move(client);
  return Status::Ok();
}

// Rank 0 lists the dataset (train, and valid when evaluating) and broadcasts the keys and sizes, so a job
// sends one set of ListObjectsV2 requests, not one per rank (listings are paged by 1000 keys, and stores
// rate-limit them). Every rank takes part even when its own connection failed, so nobody waits for it.
Status ListS3Dataset(const WorkloadConfig& cfg, const Comm& comm, Status local, S3RunSetup* s) {
  nlohmann::json doc;
  if (comm.root()) {
    auto list = [&](const std::string& split, uint64_t n, uint64_t sub) -> Status {
      S3SizeMap sizes;
      FEEDRATE_ASSIGN_OR_RETURN(auto keys, DiscoverS3Objects(*s->client, s->store, split, cfg.format, n, sub, &sizes));
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& k : keys) arr.push_back({k, sizes[k]});
      doc[split] = std::move(arr);
      return Status::Ok();
    };
    Status st = local;
    if (st.ok()) st = list("train", cfg.num_files_train, cfg.num_subfolders_train);
    if (st.ok() && cfg.do_eval && cfg.num_files_eval > 0) st = list("valid", cfg.num_files_eval, cfg.num_subfolders_eval);
    if (!st.ok()) doc = {{"error", st.ToString()}};
  }
  const std::string text = comm.Broadcast(comm.root() ? doc.dump() : std::string(), 0);
  if (!local.ok()) return local;
  doc = nlohmann::json::parse(text);
  if (doc.contains("error")) return Status::IoError(doc["error"].get<std::string>());  // (every rank: rank 0's error)
  for (const char* split : {"train", "valid"}) {
    if (!doc.contains(split)) continue;
    auto& out = std::string(split) == "train" ? s->train : s->valid;
    for (const auto& e : doc[split]) {
      out.push_back(e[0].get<std::string>());
      s->sizes[out.back()] = e[1].get<uint64_t>();
    }
  }
  return Status::Ok();
}

}  // namespace

Status PrepareS3(const WorkloadConfig& cfg, const Comm& comm, CacheMode cache, const std::string& cache_arg, S3RunSetup* s) {
  return ListS3Dataset(cfg, comm, ConnectS3(cfg, cache, cache_arg, s), s);
}

void AddS3Facts(const S3RunSetup& s, uint64_t get_requests, uint64_t retries, nlohmann::json* storage) {
  (*storage)["kind"] = "s3";
  (*storage)["device"] = s.store.endpoint.url;
  (*storage)["model"] = "bucket " + s.store.bucket;
  (*storage)["s3"] = {{"get_requests", get_requests}, {"retries", retries}};
}

Result<uint64_t> ReadS3ContentMarker(S3RunSetup& s) {
  const std::string key = s.store.Key(".feedrate-content");
  FEEDRATE_ASSIGN_OR_RETURN(auto text, GetS3Text(*s.client, key));
  return ParseContentMarker(text, s.store.Url(key));
}

}  // namespace feedrate
