// The S3 side of a run's setup: the store and a client, the checks that only apply to files, the dataset listed
// once by rank 0 and shared (each rank keeping its objects' keys and sizes), and the content marker object.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "emulator/host/cache_control.h"
#include "emulator/host/comm.h"
#include "loader/config/workload_config.h"
#include "loader/s3/s3_dataset.h"
#include "loader/util/content_pattern.h"
#include "loader/util/path_list.h"

namespace feedrate {

struct S3RunSetup {
  S3Store store;
  std::unique_ptr<S3Client> client;  // listing and markers
  Status connected;                  // this rank's connection; the listing's broadcasts run even when it failed
  S3SizeMap sizes;                   // object sizes by key of the objects this rank reads, for the indexers
};

// The store and a client (and the checks that only apply to files); the outcome goes in s->connected, which
// ListS3Split returns after the listing's broadcasts, so no rank waits for one whose connection failed.
void PrepareS3(const WorkloadConfig& cfg, CacheMode cache, S3RunSetup* s);
// Collective (every rank, in the same order): rank 0 lists split `split` (one set of ListObjectsV2 requests per
// job: listings are paged by 1000 keys, and stores rate-limit them) and shares the keys and sizes; each rank
// keeps the keys `keep` marks (the objects it reads) and their sizes in s->sizes.
Result<PathList> ListS3Split(const WorkloadConfig& cfg, const Comm& comm, const std::string& split, uint64_t n,
                             uint64_t subfolders, std::span<const char> keep, S3RunSetup* s);
// The S3 engine's figures of one rank's training: GETs sent (retries included), retries, the most in flight at once.
struct S3EngineFigures {
  uint64_t get_requests = 0, retries = 0, max_in_flight = 0;
};
// This rank's storage facts for an S3 run (summary.json's devices and feedrate.s3): the endpoint, the bucket and
// the S3 engine's figures.
void AddS3Facts(const S3RunSetup& s, const S3EngineFigures& f, nlohmann::json* storage);
// The seed in the dataset's .feedrate-content object (run --verify).
Result<uint64_t> ReadS3ContentMarker(S3RunSetup& s);

}  // namespace feedrate
