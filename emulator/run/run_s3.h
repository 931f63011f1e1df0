// The S3 side of a run's setup: the store and a client, the checks that only apply to files, the dataset listed
// once by rank 0 and broadcast, and the content marker object.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "emulator/host/cache_control.h"
#include "emulator/host/comm.h"
#include "loader/config/workload_config.h"
#include "loader/s3/s3_dataset.h"
#include "loader/util/content_pattern.h"

namespace feedrate {

struct S3RunSetup {
  S3Store store;
  std::unique_ptr<S3Client> client;       // listing and markers
  S3SizeMap sizes;                        // object sizes by key, for the indexers
  std::vector<std::string> train, valid;  // the keys rank 0 listed, in DLIO order
};

// Every rank connects; rank 0 lists train (and valid when evaluating) and broadcasts them. Every rank takes part
// in the broadcast even when its own set-up failed, so no rank waits for another; the errors name the cause.
Status PrepareS3(const WorkloadConfig& cfg, const Comm& comm, CacheMode cache, const std::string& cache_arg, S3RunSetup* s);
// This rank's storage facts for an S3 run (summary.json's devices and feedrate.s3): the endpoint, the bucket and
// the S3 engine's GETs and retries.
void AddS3Facts(const S3RunSetup& s, uint64_t get_requests, uint64_t retries, nlohmann::json* storage);
// The seed in the dataset's .feedrate-content object (run --verify).
Result<uint64_t> ReadS3ContentMarker(S3RunSetup& s);

}  // namespace feedrate
