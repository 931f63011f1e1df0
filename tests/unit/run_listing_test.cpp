// ShareListing (emulator/run/run_listing.h) across the three ranks of comm_test's job: rank 0's listing reaches
// every rank in chunks, each keeping only its own entries (and their sizes); rank 0's error and a listing of another
// length than the samplers' are every rank's error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/run/run_listing.h"

namespace feedrate {
extern const Comm* g_comm;  // comm_test.cpp
namespace {

// Entry i's path: long enough that 60,000 of them take two of the 4 MiB broadcasts.
std::string PathOf(size_t i) { return "train/img_" + std::to_string(i) + "_of_60000" + std::string(80, 'p') + ".npz"; }

ListingSource Listing(size_t count) {
  ListingSource src;
  src.count = count;
  src.append_path = [](size_t i, std::string* out) { out->append(PathOf(i)); };
  src.size = [](size_t i) { return uint64_t{1000} + i; };
  return src;
}

// Every third entry, starting at this rank's number.
std::vector<char> MyThird(size_t count, int rank) {
  std::vector<char> keep(count);
  for (size_t i = 0; i < count; ++i) keep[i] = static_cast<char>(i % 3 == static_cast<size_t>(rank));
  return keep;
}

TEST(RunListing, EveryRankKeepsItsOwnEntriesAndSizesAcrossChunks) {
  const Comm& c = *g_comm;
  constexpr size_t kCount = 60000;
  const Result<ListingSource> root = Listing(kCount);
  const auto keep = MyThird(kCount, c.rank());
  size_t sizes_seen = 0;
  bool sizes_right = true;
  auto got = ShareListing(c, c.root() ? &root : nullptr, keep, [&](size_t i, uint64_t size) {
    ++sizes_seen;
    sizes_right = sizes_right && size == 1000 + i && keep[i];
  });
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), kCount);
  EXPECT_EQ(got->held_count(), kCount / 3);
  for (size_t i = 0; i < kCount; ++i) {
    if (keep[i]) {
      ASSERT_EQ(got->view(i), PathOf(i)) << "entry " << i << " on rank " << c.rank();
    } else {
      ASSERT_FALSE(got->held(i)) << "entry " << i << " on rank " << c.rank();
    }
  }
  EXPECT_EQ(sizes_seen, kCount / 3);
  EXPECT_TRUE(sizes_right);
}

TEST(RunListing, RankZerosErrorIsEveryRanksError) {
  const Comm& c = *g_comm;
  const Result<ListingSource> root = Status::NotFound("s3://bucket/train/: no object under the prefix");
  const auto keep = MyThird(9, c.rank());
  auto got = ShareListing(c, c.root() ? &root : nullptr, keep);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("no object under the prefix"), std::string::npos) << got.status().message();
}

TEST(RunListing, AListingOfAnotherLengthIsRefusedOnEveryRank) {
  const Comm& c = *g_comm;
  const Result<ListingSource> root = Listing(10);
  const auto keep = MyThird(12, c.rank());  // the samplers were built for 12 files
  auto got = ShareListing(c, c.root() ? &root : nullptr, keep);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("the listing has 10 files, the samplers 12"), std::string::npos)
      << got.status().message();
}

}  // namespace
}  // namespace feedrate
