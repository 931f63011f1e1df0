// Copies of this process's stdout and stderr into files while a command runs (what mlpstorage keeps of DLIO's
// output as <mode>_<command>.stdout.log / .stderr.log), the terminal still getting everything.
#pragma once

#include <string>
#include <thread>

#include "loader/io/unique_fd.h"
#include "loader/status.h"

namespace feedrate {

// While alive, fd 1 and fd 2 are pipes whose readers copy each byte to the original descriptor and to its file.
// Start() once; the destructor (or Stop()) flushes stdio, puts the original descriptors back and joins the
// readers, so every byte written before is in both places. One per process (rank 0 of a job), never nested.
class OutputTee {
 public:
  OutputTee() = default;
  OutputTee(const OutputTee&) = delete;
  OutputTee& operator=(const OutputTee&) = delete;
  ~OutputTee() { Stop(); }
  // The files are created through the safe writer's rules (O_EXCL|O_NOFOLLOW: never a link someone placed).
  Status Start(const std::string& stdout_path, const std::string& stderr_path);
  void Stop();

 private:
  struct Stream {
    int target = -1;       // 1 or 2
    UniqueFd saved, file;  // the original descriptor, the log file
    std::thread reader;
  };
  Status StartStream(int target, const std::string& path, Stream* s);
  void StopStream(Stream* s);
  Stream out_, err_;
  bool started_ = false;
};

}  // namespace feedrate
