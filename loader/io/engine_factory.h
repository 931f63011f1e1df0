// Engine selection: "auto" (io_uring, falling back to POSIX when a ring cannot be set up), "uring", "posix".
#pragma once

#include <memory>
#include <string>

#include "loader/io/io_engine.h"
#include "loader/status.h"

namespace feedrate {

struct EngineChoice {
  std::unique_ptr<IoEngine> engine;
  std::string description;      // e.g. "uring (SINGLE_ISSUER|DEFER_TASKRUN, registered buffers)"
  std::string fallback_reason;  // non-empty when "auto" fell back to POSIX
};

// Errors: an unknown kind, or an explicit "uring" whose rings cannot be set up (with the reason).
Result<EngineChoice> MakeEngine(const std::string& kind, const FileTable& files, const EngineOptions& options);
// Upper bound of the buffer memory an engine of `kind` takes with `options` (for the memory check).
uint64_t EngineBufferBytes(const std::string& kind, const EngineOptions& options);

}  // namespace feedrate
