// The engine a rank's run reads with: DLIO's reader calls replayed (the DlioEngine, its planner and lanes), the S3
// engine, the cuFile engine, or the coalesced engines, and why (summary.json's access_pattern and its reason).
#pragma once

#include "emulator/host/comm.h"
#include "emulator/run/read_plan.h"
#include "emulator/run/run_setup.h"

namespace feedrate {

// What set-up learned that the read plan depends on (read_plan.h's ReadFacts), built once. REQUIRES: the sample table
// indexed, the content keys and the staging chosen; `engine` is ResolveEngineOptions's answer for this run.
ReadFacts FactsOf(const WorkloadConfig& cfg, const ResolvedEngine& engine, const Setup& s);

// The file table, fault injection, I/O statistics, the read plan (read_plan.h: s->plan, its warnings appended to
// s->warnings) and the engine it names for this rank; where the DlioEngine cannot run (no io_uring), the coalesced
// plan, or for images that only its lanes can decode an error saying what to change. REQUIRES: PrepareRank's earlier
// phases done (the sample table indexed, the samplers built, the staging chosen, the buffer-memory check made);
// `facts` is FactsOf's answer for this rank.
Status OpenEngine(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, const ReadFacts& facts, Setup* s);

}  // namespace feedrate
