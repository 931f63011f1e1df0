// Setup-flag ladder for io_uring rings.
#include "loader/io/uring_setup.h"

#include <algorithm>

namespace feedrate {
namespace {

struct FlagStep {
  unsigned flags;
  const char* name;
};
constexpr FlagStep kLadder[] = {
    {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN"},
    {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN, "SINGLE_ISSUER|COOP_TASKRUN"},
    {IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"},
    {0, "no setup flags"},
};

}  // namespace

Result<std::string> InitRingWithLadder(io_uring& ring, unsigned entries) {
  int ret = -EINVAL;
  for (const auto& step : kLadder) {
    io_uring_params p {};
    p.flags = step.flags;
    ret = io_uring_queue_init_params(std::max(entries, 2u), &ring, &p);
    if (ret == 0) return std::string(step.name);
    if (ret != -EINVAL) break;  // only an unknown flag is worth another step
  }
  return Status::Errno("io_uring_queue_init failed", -ret);
}

}  // namespace feedrate
