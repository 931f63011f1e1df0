// Engine selection with the io_uring -> POSIX fallback.
#include "loader/io/engine_factory.h"

#include <cstdlib>

#include "loader/io/posix_engine.h"
#include "loader/io/uring_engine.h"

namespace feedrate {

Result<EngineChoice> MakeEngine(const std::string& kind, const FileTable& files, const EngineOptions& requested) {
  EngineChoice c;
  EngineOptions options = requested;
  if (const char* spec = std::getenv("FEEDRATE_TEST_FAULTS")) {  // test hook: see FaultPlan
    auto plan = ParseFaultPlan(spec);
    if (!plan.ok()) return plan.status();
    options.faults = *plan;
  }
  if (kind == "uring" || kind == "auto") {
    auto u = UringEngine::Create(files, options);
    if (u.ok()) {
      c.description = std::string("uring (") + (*u)->setup_description() + ")";
      c.engine = std::move(*u);
      return c;
    }
    if (kind == "uring") return u.status().WithContext("--engine uring: io_uring is unavailable");
    c.fallback_reason = u.status().ToString();
  } else if (kind != "posix") {
    return Status::InvalidArgument("unknown engine '" + kind + "' (auto, uring or posix)");
  }
  c.engine = std::make_unique<PosixEngine>(files, options);
  c.description = c.fallback_reason.empty() ? "posix" : "posix (io_uring unavailable: " + c.fallback_reason + ")";
  return c;
}

uint64_t EngineBufferBytes(const std::string& kind, const EngineOptions& o) {
  uint64_t per_thread = o.transfer_size * (kind == "posix" ? 1 : o.queue_depth);
  return per_thread * o.threads;
}

}  // namespace feedrate
