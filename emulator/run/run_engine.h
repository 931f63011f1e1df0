// The engine a rank's run reads with: DLIO's reader calls replayed (the DlioEngine, its planner and lanes), the S3
// engine, the cuFile engine, or the coalesced engines, and why (summary.json's access_pattern and its reason).
#pragma once

#include "emulator/host/comm.h"
#include "emulator/run/run_setup.h"

namespace feedrate {

// feedrate.decode on JPEG/PNG where the run replays DLIO's reader calls: each image is decoded in its lane, which
// needs no size before training, so set-up opens no image file (DLIO opens none either). Decided from the
// configuration alone, before set-up indexes anything; OpenEngine fails the run, saying what to change, where the
// DLIO engine then cannot run (no io_uring).
bool DecodesInLanes(const WorkloadConfig& cfg, const RunOptions& opt, bool s3);

// The file table, fault injection, I/O statistics and the engine for this rank. REQUIRES: PrepareRank's earlier
// phases done (the sample table indexed, the samplers built, the buffer-memory check made).
Status OpenEngine(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, Setup* s);

}  // namespace feedrate
