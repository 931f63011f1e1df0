// The start of a job: every rank must run the same binary on the same resolved workload before any collective
// whose shape depends on them (a host with another workload file once ended in "MPI Error in NBC subrequest").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace feedrate {

class Comm;

// What one rank brings to the start of a job.
struct RankStart {
  std::string build;      // BuildIdentity(): the version and the binary's build ID
  uint64_t workload = 0;  // WorkloadFingerprint() of the resolved workload
  std::string error;      // non-empty: this rank could not load its workload (the fields above then unset)
};

// "0.1.0 (build 1f3a…)": the version and the running binary's GNU build ID (hex; "no build ID" where the linker
// wrote none), read from the loaded program's notes (no file read). Two builds of one version differ here.
std::string BuildIdentity(const std::string& version);
// FNV-1a (64-bit) of the resolved workload's YAML text: the same on every rank that read the same workload.
uint64_t WorkloadFingerprint(const std::string& resolved_yaml);

// One line per field, the error last (it may hold newlines); Decode(Encode(s)) == s.
std::string EncodeRankStart(const RankStart& s);
RankStart DecodeRankStart(const std::string& text);

// Rank 0's verdict over every rank's start (index = rank; `who(r)` names rank r, e.g. "rank 3 (node7)"): "" when
// every rank loaded the same workload with the same build; otherwise one message naming what differs and the ranks
// (at most 4 named, then how many more): a rank 0 load error verbatim (every rank shares it as a rule), else the
// first failure class in this order: load errors on other ranks, builds that differ from rank 0's, workloads that do.
std::string StartVerdict(const std::vector<RankStart>& ranks, const std::function<std::string(int)>& who);

// Collective, before any other of the job: every rank's start to rank 0 (one gather, shaped by nothing the ranks
// may disagree on) and the verdict back to every rank (a broadcast). "" when they agree.
std::string AgreeOnStart(const Comm& comm, const RankStart& mine);

}  // namespace feedrate
