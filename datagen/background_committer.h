// Durable commits off the writer threads: with `datagen --fsync`, each finished temporary file is handed to one
// thread that fsyncs, closes and renames it, so writers go on generating while the device drains the last file.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "datagen/temp_file.h"

namespace feedrate {

class BackgroundCommitter {
 public:
  // At most `max_pending` files wait for their fsync; a writer submitting one more waits (bounds open descriptors
  // and how far generation runs ahead of the device).
  explicit BackgroundCommitter(size_t max_pending);
  ~BackgroundCommitter();  // Finish()es; files not yet committed after a failure are removed, never renamed
  BackgroundCommitter(const BackgroundCommitter&) = delete;
  BackgroundCommitter& operator=(const BackgroundCommitter&) = delete;

  // Queues `file` for fsync + close + rename, in submission order (an index lands before the file it belongs to
  // when it is submitted first). Returns the first commit error seen so far, if any.
  Status Submit(TempFile file);
  // Waits for every queued file, stops the thread; the first error (naming the file), or Ok.
  Status Finish();

 private:
  void Run();

  const size_t max_pending_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<TempFile> queue_;
  bool stopping_ = false;
  Status error_;
  std::thread thread_;
};

}  // namespace feedrate
