// Setup-flag ladder for io_uring rings.
#include "loader/io/uring_setup.h"

#include <atomic>
#include <latch>
#include <system_error>
#include <memory>

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

Status StartRingThreads(size_t n, std::function<Status(size_t)> setup, std::function<void(size_t)> run,
                        std::vector<std::thread>* threads) {
  struct Handshake {
    explicit Handshake(size_t n) : done(static_cast<std::ptrdiff_t>(n)), status(n) {}
    std::latch done;
    std::atomic<int> gate{0};  // 1: run, 2: a set-up failed, stop
    std::vector<Status> status;
  };
  auto h = std::make_shared<Handshake>(n);
  for (size_t i = 0; i < n; ++i) {
    try {
      threads->emplace_back([h, i, setup, run] {
        h->status[i] = setup(i);
        const bool ok = h->status[i].ok();
        h->done.count_down();
        if (!ok) return;
        h->gate.wait(0);
        if (h->gate.load() == 1) run(i);
      });
    } catch (const std::system_error& e) {  // the system refused a thread: the ones started stop, the error named
      h->status[i] = Status::Errno("cannot start I/O thread " + std::to_string(i + 1) + " of " + std::to_string(n) +
                                       " (a pids, thread or memory limit?)", e.code().value());
      h->done.count_down(static_cast<std::ptrdiff_t>(n - i));
      break;
    }
  }
  h->done.wait();
  Status failure;
  for (const Status& st : h->status) {
    if (!st.ok() && failure.ok()) failure = st;
  }
  h->gate.store(failure.ok() ? 1 : 2);
  h->gate.notify_all();
  if (!failure.ok()) {
    for (auto& t : *threads) t.join();
    threads->clear();
  }
  return failure;
}

}  // namespace feedrate
