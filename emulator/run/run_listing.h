// One listing per job: rank 0 lists a split (a folder, or an S3 prefix) and hands it to the other ranks in chunks;
// every rank keeps only the paths (and object sizes) of the files its accelerators read. Internal to emulator/run.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "emulator/host/comm.h"
#include "loader/status.h"
#include "loader/util/path_list.h"

namespace feedrate {

// What rank 0 found: `count` entries in DLIO's order; entry i's path appended to a string on demand; with
// `size` set, each entry's size too (S3 objects: the listing has them).
struct ListingSource {
  size_t count = 0;
  std::function<void(size_t, std::string*)> append_path;
  std::function<uint64_t(size_t)> size;
};

// Collective: every rank calls it, in the same order, whatever failed on it before (a rank that does not would
// leave the others waiting). Rank 0 (or a single rank) passes its listing or the error that stopped it; the
// others pass nullptr. Returns on every rank the paths `keep` marks (keep.size() entries: a listing of another
// length is an error on every rank), the others absent; when sizes were sent, on_size(i, size) runs for every
// kept entry. Rank 0's error is every rank's.
Result<PathList> ShareListing(const Comm& comm, const Result<ListingSource>* root, std::span<const char> keep,
                              const std::function<void(size_t, uint64_t)>& on_size = {});

}  // namespace feedrate
