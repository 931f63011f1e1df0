// BackgroundCommitter: one thread, a bounded FIFO of finished temporary files.
#include "datagen/background_committer.h"

namespace feedrate {

BackgroundCommitter::BackgroundCommitter(size_t max_pending)
    : max_pending_(max_pending == 0 ? 1 : max_pending), thread_([this] { Run(); }) {}

BackgroundCommitter::~BackgroundCommitter() { (void)Finish(); }

Status BackgroundCommitter::Submit(TempFile file) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return queue_.size() < max_pending_ || !error_.ok(); });
  if (!error_.ok()) return error_;  // `file` is dropped here: its destructor removes the temporary file
  queue_.push_back(std::move(file));
  changed_.notify_all();
  return Status::Ok();
}

Status BackgroundCommitter::Finish() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void BackgroundCommitter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;
    TempFile file = std::move(queue_.front());
    queue_.pop_front();
    changed_.notify_all();
    if (!error_.ok()) continue;  // after a failure, drop (remove) what is left rather than renaming it
    lock.unlock();
    Status s = file.CommitNow();
    lock.lock();
    if (!s.ok() && error_.ok()) {
      error_ = s;
      changed_.notify_all();
    }
  }
}

}  // namespace feedrate
