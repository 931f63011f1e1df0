// latencyfs: a read-only FUSE file system that passes a directory through and delays every open and read request by
// a set time, counting requests and requests in flight: the "storage where each request waits" of tests and benches.
//
//   latencyfs SRC MNT [--open-delay-ms X] [--read-delay-ms Y] [--page-cache] [--max-read KiB] [-o fuse options]
//
// Runs in the foreground until unmounted (fusermount3 -u MNT). Replies are delayed by a timer, not by a sleeping
// thread, so any number of requests can wait at once. `MNT/.latencyfs_stats` (not delayed, not counted) reads as
// one JSON object: opens, reads, read_bytes, other (lookups, getattrs, ...), in_flight, max_in_flight (since the
// previous open of the stats file: a test opens it when the phase it measures begins). Without
// --page-cache every open is direct_io (each read(2) reaches this process; no readahead, no cache). A lookup of
// `MNT/.latencyfs_hold_K` arms a one-shot hold: replies wait until K requests are in flight at once (30 s at most);
// a lookup of `MNT/.latencyfs_release` lets them go at once (a test's stalled storage, ended when the test is done).
#define FUSE_USE_VERSION 34
#include <fuse3/fuse_lowlevel.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kStatsName = ".latencyfs_stats";
constexpr fuse_ino_t kStatsIno = 0x7fffffffffffULL;

struct Options {
  std::string src;
  double open_delay_ms = 0, read_delay_ms = 0;
  bool page_cache = false;
  unsigned max_read_kib = 1024;
};
Options g_opt;

std::atomic<uint64_t> g_opens{0}, g_reads{0}, g_read_bytes{0}, g_other{0}, g_in_flight{0}, g_max_in_flight{0};

// A one-shot hold (a test's synchronisation point, not a delay): armed by a lookup of `.latencyfs_hold_K`, it withholds
// every reply until K requests are in flight at once (or 30 s pass), then lets them all go on with their delays. A
// client that keeps K requests outstanding reaches K; one that keeps fewer stays below it, whatever the timing.
constexpr const char* kHoldPrefix = ".latencyfs_hold_";
constexpr const char* kReleaseName = ".latencyfs_release";  // a lookup lets what is held go at once
std::mutex g_hold_mu;
uint64_t g_hold_until = 0;  // 0: not armed
uint64_t g_hold_gen = 0;    // which arming a timeout belongs to
std::vector<std::pair<double, std::function<void()>>> g_held;  // (delay, reply) withheld
void ReleaseHeld();

void Enter() {
  const uint64_t now = g_in_flight.fetch_add(1) + 1;
  uint64_t seen = g_max_in_flight.load();
  while (now > seen && !g_max_in_flight.compare_exchange_weak(seen, now)) {
  }
}
void Leave() { g_in_flight.fetch_sub(1); }

std::string StatsJson() {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"opens\": %lu, \"reads\": %lu, \"read_bytes\": %lu, \"other\": %lu, \"in_flight\": %lu, "
                "\"max_in_flight\": %lu}\n",
                static_cast<unsigned long>(g_opens.load()), static_cast<unsigned long>(g_reads.load()),
                static_cast<unsigned long>(g_read_bytes.load()), static_cast<unsigned long>(g_other.load()),
                static_cast<unsigned long>(g_in_flight.load()), static_cast<unsigned long>(g_max_in_flight.load()));
  return buf;
}

// Delayed work: a timer thread moves due tasks to a few workers, which do the real open/pread and reply.
class Delayer {
 public:
  explicit Delayer(size_t workers) {
    timer_ = std::thread([this] { TimerLoop(); });
    for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkLoop(); });
  }
  ~Delayer() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_timer_.notify_all();
    cv_work_.notify_all();
    timer_.join();
    for (auto& w : workers_) w.join();
  }
  void After(double ms, std::function<void()> task) {
    {
      std::unique_lock<std::mutex> l(g_hold_mu);
      if (g_hold_until > 0) {
        g_held.emplace_back(ms, std::move(task));
        const bool reached = g_in_flight.load() >= g_hold_until;
        l.unlock();
        if (reached) ReleaseHeld();
        return;
      }
    }
    Schedule(ms, std::move(task));
  }
  void Schedule(double ms, std::function<void()> task) {
    if (ms <= 0) {
      task();
      return;
    }
    const auto due = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
    {
      std::lock_guard<std::mutex> l(mu_);
      timed_.push({due, seq_++, std::move(task)});
    }
    cv_timer_.notify_one();
  }

 private:
  struct Timed {
    Clock::time_point due;
    uint64_t seq;
    std::function<void()> task;
    bool operator>(const Timed& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  void TimerLoop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      if (timed_.empty()) {
        cv_timer_.wait(l);
        continue;
      }
      const auto due = timed_.top().due;
      if (Clock::now() < due) {
        cv_timer_.wait_until(l, due);
        continue;
      }
      ready_.push(std::move(const_cast<Timed&>(timed_.top()).task));
      timed_.pop();
      cv_work_.notify_one();
    }
  }
  void WorkLoop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_work_.wait(l, [this] { return stop_ || !ready_.empty(); });
      if (stop_) return;
      auto task = std::move(ready_.front());
      ready_.pop();
      l.unlock();
      task();
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_timer_, cv_work_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> timed_;
  std::queue<std::function<void()>> ready_;
  uint64_t seq_ = 0;
  bool stop_ = false;
  std::thread timer_;
  std::vector<std::thread> workers_;
};
Delayer* g_delayer = nullptr;

void ReleaseHeld() {
  std::vector<std::pair<double, std::function<void()>>> held;
  {
    std::lock_guard<std::mutex> l(g_hold_mu);
    g_hold_until = 0;
    held.swap(g_held);
  }
  for (auto& [ms, task] : held) g_delayer->Schedule(ms, std::move(task));
}

// `.latencyfs_hold_K`: arms the hold for K requests in flight; a 30 s timer releases it anyway.
void ArmHold(const char* name) {
  const uint64_t k = std::strtoull(name + std::strlen(kHoldPrefix), nullptr, 10);
  if (k == 0) return;
  uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> l(g_hold_mu);
    g_hold_until = k;
    gen = ++g_hold_gen;
  }
  g_delayer->Schedule(30000, [gen] {
    bool mine = false;
    {
      std::lock_guard<std::mutex> l(g_hold_mu);
      mine = gen == g_hold_gen && g_hold_until > 0;
    }
    if (mine) ReleaseHeld();
  });
  if (g_in_flight.load() >= k) ReleaseHeld();
}

// Inode numbers of our own (path <-> ino), so the source's numbering never collides with the root's or the stats
// file's.
std::mutex g_ino_mu;
std::unordered_map<fuse_ino_t, std::string> g_path_of{{FUSE_ROOT_ID, ""}};
std::unordered_map<std::string, fuse_ino_t> g_ino_of{{"", FUSE_ROOT_ID}};
fuse_ino_t g_next_ino = 2;

std::string PathOf(fuse_ino_t ino) {
  std::lock_guard<std::mutex> l(g_ino_mu);
  auto it = g_path_of.find(ino);
  return it == g_path_of.end() ? std::string("\x01") : it->second;
}
fuse_ino_t InoOf(const std::string& rel) {
  std::lock_guard<std::mutex> l(g_ino_mu);
  auto [it, added] = g_ino_of.emplace(rel, g_next_ino);
  if (added) g_path_of[g_next_ino++] = rel;
  return it->second;
}
std::string Full(const std::string& rel) { return rel.empty() ? g_opt.src : g_opt.src + "/" + rel; }

bool StatOf(fuse_ino_t ino, struct stat* st) {
  if (ino == kStatsIno) {
    *st = {};
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = 4096;
    st->st_ino = ino;
    return true;
  }
  const std::string rel = PathOf(ino);
  if (rel == "\x01" || ::lstat(Full(rel).c_str(), st) != 0) return false;
  st->st_ino = ino;
  return true;
}

void DoLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  g_other.fetch_add(1);
  fuse_entry_param e{};
  if (parent == FUSE_ROOT_ID && std::strcmp(name, kStatsName) == 0) {
    e.ino = kStatsIno;
    StatOf(kStatsIno, &e.attr);
    fuse_reply_entry(req, &e);
    return;
  }
  if (parent == FUSE_ROOT_ID && std::strcmp(name, kReleaseName) == 0) {
    ReleaseHeld();
    e.ino = 0;
    fuse_reply_entry(req, &e);
    return;
  }
  if (parent == FUSE_ROOT_ID && std::strncmp(name, kHoldPrefix, std::strlen(kHoldPrefix)) == 0) {
    ArmHold(name);
    e.ino = 0;  // a negative entry, not cached: each lookup reaches this process
    fuse_reply_entry(req, &e);
    return;
  }
  const std::string prel = PathOf(parent);
  const std::string rel = prel.empty() ? name : prel + "/" + name;
  struct stat st {};
  if (::lstat(Full(rel).c_str(), &st) != 0) {
    fuse_reply_err(req, errno);
    return;
  }
  e.ino = InoOf(rel);
  st.st_ino = e.ino;
  e.attr = st;
  e.attr_timeout = e.entry_timeout = 3600;
  fuse_reply_entry(req, &e);
}

void DoGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  g_other.fetch_add(1);
  struct stat st {};
  if (!StatOf(ino, &st)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_reply_attr(req, &st, ino == kStatsIno ? 0 : 3600);
}

void DoOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if ((fi->flags & O_ACCMODE) != O_RDONLY) {
    fuse_reply_err(req, EROFS);
    return;
  }
  if (ino == kStatsIno) {  // a snapshot of the counters, taken at open; max_in_flight starts again from here
    fi->direct_io = 1;
    fi->fh = reinterpret_cast<uint64_t>(new std::string(StatsJson()));
    g_max_in_flight.store(g_in_flight.load());
    fuse_reply_open(req, fi);
    return;
  }
  g_opens.fetch_add(1);
  Enter();
  const std::string path = Full(PathOf(ino));
  const int flags = fi->flags & ~(O_DIRECT | O_CREAT | O_TRUNC);
  fuse_file_info reply = *fi;
  g_delayer->After(g_opt.open_delay_ms, [req, path, flags, reply]() mutable {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    Leave();
    if (fd < 0) {
      fuse_reply_err(req, errno);
      return;
    }
    reply.fh = static_cast<uint64_t>(fd) << 1 | 1;  // low bit: a real file
    reply.direct_io = g_opt.page_cache ? 0 : 1;
    reply.keep_cache = g_opt.page_cache ? 1 : 0;
    fuse_reply_open(req, &reply);
  });
}

void DoRead(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  if ((fi->fh & 1) == 0) {  // the stats file
    const std::string* s = reinterpret_cast<const std::string*>(fi->fh);
    const size_t o = std::min<size_t>(static_cast<size_t>(off), s->size());
    fuse_reply_buf(req, s->data() + o, std::min(size, s->size() - o));
    return;
  }
  g_reads.fetch_add(1);
  Enter();
  const int fd = static_cast<int>(fi->fh >> 1);
  g_delayer->After(g_opt.read_delay_ms, [req, fd, size, off] {
    std::vector<char> buf(size);
    const ssize_t n = ::pread(fd, buf.data(), size, off);
    Leave();
    if (n < 0) {
      fuse_reply_err(req, errno);
      return;
    }
    g_read_bytes.fetch_add(static_cast<uint64_t>(n));
    fuse_reply_buf(req, buf.data(), static_cast<size_t>(n));
  });
}

void DoRelease(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  if ((fi->fh & 1) == 0) {
    delete reinterpret_cast<std::string*>(fi->fh);
  } else {
    ::close(static_cast<int>(fi->fh >> 1));
  }
  fuse_reply_err(req, 0);
}

void DoOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  g_other.fetch_add(1);
  DIR* d = ::opendir(Full(PathOf(ino)).c_str());
  if (d == nullptr) {
    fuse_reply_err(req, errno);
    return;
  }
  fi->fh = reinterpret_cast<uint64_t>(d);
  fuse_reply_open(req, fi);
}

// Offsets are entry indices (a rewind re-reads from the start).
void DoReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  g_other.fetch_add(1);
  DIR* d = reinterpret_cast<DIR*>(fi->fh);
  ::rewinddir(d);
  std::vector<char> buf(size);
  size_t used = 0;
  off_t index = 0;
  const std::string prel = PathOf(ino);
  while (dirent* e = ::readdir(d)) {
    if (index++ < off) continue;
    struct stat st {};
    st.st_mode = static_cast<mode_t>(e->d_type) << 12;
    const std::string name = e->d_name;
    st.st_ino = name == "." || name == ".." ? ino : InoOf(prel.empty() ? name : prel + "/" + name);
    const size_t need = fuse_add_direntry(req, buf.data() + used, size - used, e->d_name, &st, index);
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void DoReleasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  ::closedir(reinterpret_cast<DIR*>(fi->fh));
  fuse_reply_err(req, 0);
}

void DoInit(void*, fuse_conn_info* conn) {
  conn->max_write = g_opt.max_read_kib * 1024;  // libfuse derives max_pages from it: reads up to this size
  conn->max_readahead = g_opt.max_read_kib * 1024;
  // Asynchronous direct reads (io_uring's, libaio's) and readahead are FUSE "background" requests, which the kernel
  // caps at max_background (12 by default): raise it, as FUSE object stores let users do, so the requests a client
  // keeps in flight reach this process.
  conn->max_background = 4096;
  conn->congestion_threshold = 3072;
}

int Usage() {
  std::fprintf(stderr, "usage: latencyfs SRC MNT [--open-delay-ms X] [--read-delay-ms Y] [--page-cache] "
                       "[--max-read KiB] [-o opts]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> fargs = {argv[0]};
  std::string mnt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--open-delay-ms" || a == "--read-delay-ms" || a == "--max-read") {
      const char* v = value();
      if (v == nullptr) return Usage();
      char* end = nullptr;
      const double x = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(x >= 0)) return Usage();
      if (a == "--open-delay-ms") g_opt.open_delay_ms = x;
      else if (a == "--read-delay-ms") g_opt.read_delay_ms = x;
      else g_opt.max_read_kib = static_cast<unsigned>(x);
    } else if (a == "--page-cache") {
      g_opt.page_cache = true;
    } else if (a == "-o") {
      fargs.push_back(argv[i]);
      if (char* v = value()) fargs.push_back(v);
    } else if (g_opt.src.empty()) {
      g_opt.src = a;
    } else if (mnt.empty()) {
      mnt = a;
    } else {
      return Usage();
    }
  }
  if (g_opt.src.empty() || mnt.empty()) return Usage();
  char* real = ::realpath(g_opt.src.c_str(), nullptr);
  if (real == nullptr) {
    std::perror(g_opt.src.c_str());
    return 2;
  }
  g_opt.src = real;
  std::free(real);

  fuse_lowlevel_ops ops{};
  ops.init = DoInit;
  ops.lookup = DoLookup;
  ops.getattr = DoGetattr;
  ops.open = DoOpen;
  ops.read = DoRead;
  ops.release = DoRelease;
  ops.opendir = DoOpendir;
  ops.readdir = DoReaddir;
  ops.releasedir = DoReleasedir;
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(fargs.size()), fargs.data());
  Delayer delayer(4);
  g_delayer = &delayer;
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, nullptr);
  if (se == nullptr) return 1;
  int rc = 1;
  if (fuse_set_signal_handlers(se) == 0) {
    if (fuse_session_mount(se, mnt.c_str()) == 0) {
      fuse_loop_config* cfg = fuse_loop_cfg_create();
      fuse_loop_cfg_set_max_threads(cfg, 64);
      rc = fuse_session_loop_mt(se, cfg);
      fuse_loop_cfg_destroy(cfg);
      fuse_session_unmount(se);
    }
    fuse_remove_signal_handlers(se);
  }
  fuse_session_destroy(se);
  fuse_opt_free_args(&args);
  return rc == 0 ? 0 : 1;
}
