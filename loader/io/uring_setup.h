// Ring setup shared by the loader's UringEngine and iobench: the setup-flag ladder, most efficient first.
#pragma once

#include <liburing.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "loader/status.h"

namespace feedrate {

// Initialises `ring` with `entries` entries, trying SINGLE_ISSUER|DEFER_TASKRUN, then SINGLE_ISSUER|COOP_TASKRUN,
// COOP_TASKRUN and finally no flags, each dropped only on EINVAL (an older kernel). Returns the flags used, by
// name. Any other failure (EPERM, ENOSYS, ENOMEM) is returned at once: the caller decides whether to fall back.
// DEFER_TASKRUN runs completion work only when the issuing thread asks for completions, which spares a 2-core
// client the interrupts that otherwise cost a quarter of the IOPS at 4 KiB (measured in results/).
Result<std::string> InitRingWithLadder(io_uring& ring, unsigned entries);

// Starts `n` I/O threads, each of which creates its own ring in setup(i) (SINGLE_ISSUER: the ring belongs to the
// thread that submits to it); once every set-up has returned, either all of them go on to run(i), or, when any
// failed, none does and all are joined. Returns the first failure by index. `threads` gets the running threads
// (none on failure). `setup` and `run` are copied into the threads (what they refer to must outlive them).
Status StartRingThreads(size_t n, std::function<Status(size_t)> setup, std::function<void(size_t)> run,
                        std::vector<std::thread>* threads);

}  // namespace feedrate
