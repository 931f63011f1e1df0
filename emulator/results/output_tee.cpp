// stdout/stderr copied into log files through pipes and one reader thread each.
#include "emulator/results/output_tee.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace feedrate {

namespace {

// Writes all of `n` bytes, retrying short writes and EINTR; false when the descriptor refuses.
bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Status OutputTee::StartStream(int target, const std::string& path, Stream* s) {
  s->target = target;
  s->file = UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!s->file.valid()) return Status::Errno("cannot create " + path, errno);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Status::Errno("cannot make a pipe for " + path, errno);
  UniqueFd read_end(p[0]), write_end(p[1]);
  s->saved = UniqueFd(::fcntl(target, F_DUPFD_CLOEXEC, 3));
  if (!s->saved.valid()) return Status::Errno("cannot save descriptor " + std::to_string(target), errno);
  if (::dup2(write_end.get(), target) < 0) return Status::Errno("cannot redirect descriptor " + std::to_string(target), errno);
  const int saved = s->saved.get(), file = s->file.get();
  // The reader ends when every write end is closed: the target's (dup2 back in StopStream) and this one's (here).
  s->reader = std::thread([rd = std::move(read_end), saved, file] {
    char buf[8192];
    bool to_file = true;
    for (;;) {
      const ssize_t n = ::read(rd.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      (void)WriteAll(saved, buf, static_cast<size_t>(n));  // the terminal keeps getting it even if the file fails
      if (to_file) to_file = WriteAll(file, buf, static_cast<size_t>(n));
    }
  });
  return Status::Ok();
}

Status OutputTee::Start(const std::string& stdout_path, const std::string& stderr_path) {
  std::fflush(stdout);
  std::fflush(stderr);
  started_ = true;
  Status st = StartStream(1, stdout_path, &out_);
  if (st.ok()) st = StartStream(2, stderr_path, &err_);
  if (!st.ok()) Stop();
  return st;
}

void OutputTee::StopStream(Stream* s) {
  if (s->saved.valid()) (void)::dup2(s->saved.get(), s->target);  // closes the pipe's last write end
  if (s->reader.joinable()) s->reader.join();
  s->saved.reset();
  s->file.reset();
}

void OutputTee::Stop() {
  if (!started_) return;
  started_ = false;
  std::fflush(stdout);
  std::fflush(stderr);
  StopStream(&out_);
  StopStream(&err_);
}

}  // namespace feedrate
