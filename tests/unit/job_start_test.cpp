// The start-of-job agreement's pieces: the build identity, the workload fingerprint, the record and rank 0's verdict.
#include "emulator/host/job_start.h"

#include <gtest/gtest.h>

namespace feedrate {
namespace {

std::string Who(int r) { return "rank " + std::to_string(r) + " (h" + std::to_string(r) + ")"; }

RankStart Good(uint64_t workload = 7, const std::string& build = "0.1.0 (build ab)") { return {build, workload, ""}; }

TEST(JobStart, BuildIdentityNamesTheVersionAndThisBinarysBuildId) {
  const std::string id = BuildIdentity("9.9.9");
  EXPECT_EQ(id.rfind("9.9.9 (", 0), 0u) << id;
  // Debian's toolchain links a GNU build ID into every program: 20 bytes (SHA-1) as 40 hex digits.
  ASSERT_NE(id.find("(build "), std::string::npos) << id;
  EXPECT_EQ(id.size(), std::string("9.9.9 (build )").size() + 40) << id;
  EXPECT_EQ(id, BuildIdentity("9.9.9"));
}

TEST(JobStart, FingerprintIsFnv1aOfTheText) {
  EXPECT_EQ(WorkloadFingerprint(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(WorkloadFingerprint("a"), 0xaf63dc4c8601ec8cULL);  // FNV-1a 64's published value for "a"
  EXPECT_NE(WorkloadFingerprint("reader: {batch_size: 2}"), WorkloadFingerprint("reader: {batch_size: 3}"));
}

TEST(JobStart, RecordRoundTripsAndAStrangerIsNamed) {
  const RankStart s{"0.1.0 (build ff)", 0xfedcba9876543210ULL, "line one\nline two"};
  const RankStart d = DecodeRankStart(EncodeRankStart(s));
  EXPECT_EQ(d.build, s.build);
  EXPECT_EQ(d.workload, s.workload);
  EXPECT_EQ(d.error, s.error);
  EXPECT_EQ(DecodeRankStart("garbage").error, "sent an unreadable start record");
}

TEST(JobStart, AgreementIsSilent) {
  EXPECT_EQ(StartVerdict({Good(), Good(), Good()}, Who), "");
  EXPECT_EQ(StartVerdict({Good()}, Who), "");
}

TEST(JobStart, RankZerosErrorIsEveryonesAndSaidAsItIs) {
  RankStart bad;
  bad.error = "w.yaml: no such workload";
  EXPECT_EQ(StartVerdict({bad, bad}, Who), "w.yaml: no such workload");
  EXPECT_EQ(StartVerdict({bad}, Who), "w.yaml: no such workload");
}

TEST(JobStart, ARankThatCouldNotLoadIsNamedFirst) {
  RankStart bad;
  bad.error = "/etc/w.yaml: cannot open";
  const std::string v = StartVerdict({Good(), Good(9), bad}, Who);
  EXPECT_EQ(v, "rank 2 (h2) could not load the workload that rank 0 (h0) loaded: /etc/w.yaml: cannot open");
}

TEST(JobStart, AnotherBuildIsNamedBeforeAnotherWorkload) {
  const std::string v = StartVerdict({Good(), Good(9), Good(7, "0.1.0 (build cd)")}, Who);
  EXPECT_EQ(v, "rank 2 (h2) runs feedrate 0.1.0 (build cd), rank 0 (h0) runs 0.1.0 (build ab): install one build on "
               "every host");
}

TEST(JobStart, AnotherWorkloadNamesAtMostFourRanks) {
  std::vector<RankStart> ranks{Good(1)};
  for (int r = 1; r <= 6; ++r) ranks.push_back(Good(2));
  const std::string v = StartVerdict(ranks, Who);
  EXPECT_EQ(v, "the resolved workload on rank 1 (h1), rank 2 (h2), rank 3 (h3), rank 4 (h4) and 2 more differs from "
               "rank 0 (h0)'s (fingerprint 0000000000000002, not 0000000000000001): each host reads its own workload "
               "file and built-in workloads; make them the same there");
}

}  // namespace
}  // namespace feedrate
