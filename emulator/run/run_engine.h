// The engine a rank's run reads with: DLIO's reader calls replayed (the DlioEngine, its planner and lanes), the S3
// engine, the cuFile engine, or the coalesced engines, and why (summary.json's access_pattern and its reason).
#pragma once

#include "emulator/host/comm.h"
#include "emulator/run/read_plan.h"
#include "emulator/run/run_setup.h"

namespace feedrate {

// The file table, fault injection, I/O statistics and the engine s->plan names for this rank (its warnings appended
// to s->warnings); where the DlioEngine cannot run (no io_uring), the coalesced plan (its read buffers checked again),
// or for images that only its lanes can decode an error saying what to change. REQUIRES: PrepareRank's earlier
// phases done (the sample table indexed, the samplers built, the staging chosen, s->plan made from `facts` and its
// read buffers checked).
Status OpenEngine(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, const ReadFacts& facts, Setup* s);

}  // namespace feedrate
