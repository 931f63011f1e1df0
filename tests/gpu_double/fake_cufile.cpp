// A test double of libcufile.so.0 over host memory: registration, cuFileRead and the batch API as cufile.h
// declares them, reads done with pread into the "device" memory of the fake libcuda. Loaded through
// FEEDRATE_LIBCUFILE. FEEDRATE_FAKE_CUFILE_DRIVER=fail makes cuFileDriverOpen fail as it does without the nvidia-fs
// module (and compat mode off); feedrate_fake_cufile_counts says what is still registered.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <vector>

namespace {

struct Error {
  int err;
  int cu_err;
};
struct Descr {
  int type;
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;
};
struct IoParams {
  int mode;
  union {
    struct {
      void* devPtr_base;
      off_t file_offset;
      off_t devPtr_offset;
      size_t size;
    } batch;
  } u;
  void* fh;
  int opcode;
  void* cookie;
};
struct IoEvent {
  void* cookie;
  int status;
  size_t ret;
};
struct Handle {
  int fd;
};
struct Batch {
  unsigned capacity;
  std::vector<IoEvent> done;  // completed, not yet collected
  unsigned in_flight = 0;
};

constexpr int kInvalidValue = 5022, kDriverNotInitialized = 5001, kAlreadyRegistered = 5023, kNotRegistered = 5024,
              kBatchFull = 5037;
constexpr int kComplete = 0x10, kFailed = 0x40;

std::mutex g_mu;
std::set<const void*> g_buffers;
std::atomic<long> g_handles{0}, g_batches{0}, g_driver_opens{0};
std::atomic<unsigned long long> g_bytes{0};

Error Ok() { return {0, 0}; }
Error Err(int e) { return {e, 0}; }

// One read into "device" memory, as the real library does it in compat mode.
ssize_t ReadAt(const Handle* h, void* base, size_t size, off_t file_offset, off_t buf_offset) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(h->fd, static_cast<char*>(base) + buf_offset + got, size - got, file_offset + static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  g_bytes += got;
  return static_cast<ssize_t>(got);
}

}  // namespace

extern "C" {

Error cuFileDriverOpen() {
  const char* mode = std::getenv("FEEDRATE_FAKE_CUFILE_DRIVER");
  if (mode != nullptr && std::strcmp(mode, "fail") == 0) return Err(kDriverNotInitialized);
  ++g_driver_opens;
  return Ok();
}
Error cuFileDriverClose() {
  --g_driver_opens;
  return Ok();
}
Error cuFileDriverClose_v2() { return cuFileDriverClose(); }

Error cuFileHandleRegister(void** fh, Descr* d) {
  if (d == nullptr || d->type != 1 || d->fs_ops != nullptr || d->handle.fd < 0) return Err(kInvalidValue);
  *fh = new Handle{d->handle.fd};
  ++g_handles;
  return Ok();
}
void cuFileHandleDeregister(void* fh) {
  delete static_cast<Handle*>(fh);
  --g_handles;
}
Error cuFileBufRegister(const void* base, size_t, int) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_buffers.insert(base).second ? Ok() : Err(kAlreadyRegistered);
}
Error cuFileBufDeregister(const void* base) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_buffers.erase(base) == 1 ? Ok() : Err(kNotRegistered);
}
ssize_t cuFileRead(void* fh, void* base, size_t size, off_t file_offset, off_t buf_offset) {
  if (fh == nullptr) return -kInvalidValue;
  return ReadAt(static_cast<Handle*>(fh), base, size, file_offset, buf_offset);
}

Error cuFileBatchIOSetUp(void** batch, unsigned capacity) {
  if (capacity == 0) return Err(kInvalidValue);
  *batch = new Batch{capacity, {}, 0};
  ++g_batches;
  return Ok();
}
// Every request is read at once; its completion waits in the batch until cuFileBatchIOGetStatus collects it.
Error cuFileBatchIOSubmit(void* batch, unsigned n, IoParams* params, unsigned) {
  auto* b = static_cast<Batch*>(batch);
  if (b->in_flight + n > b->capacity) return Err(kBatchFull);
  for (unsigned i = 0; i < n; ++i) {
    const IoParams& p = params[i];
    if (p.mode != 1 || p.opcode != 0 || p.fh == nullptr) return Err(kInvalidValue);
    const ssize_t got = ReadAt(static_cast<Handle*>(p.fh), p.u.batch.devPtr_base, p.u.batch.size, p.u.batch.file_offset,
                               p.u.batch.devPtr_offset);
    b->done.push_back({p.cookie, got >= 0 ? kComplete : kFailed, static_cast<size_t>(got >= 0 ? got : -errno)});
  }
  b->in_flight += n;
  return Ok();
}
Error cuFileBatchIOGetStatus(void* batch, unsigned min_nr, unsigned* nr, IoEvent* events, struct timespec*) {
  auto* b = static_cast<Batch*>(batch);
  if (min_nr > b->done.size()) return Err(kInvalidValue);  // everything submitted has completed already
  const unsigned n = std::min<unsigned>(*nr, static_cast<unsigned>(b->done.size()));
  for (unsigned i = 0; i < n; ++i) events[i] = b->done[i];
  b->done.erase(b->done.begin(), b->done.begin() + n);
  b->in_flight -= n;
  *nr = n;
  return Ok();
}
void cuFileBatchIODestroy(void* batch) {
  delete static_cast<Batch*>(batch);
  --g_batches;
}

// For the tests: open driver sessions, registered handles, buffers and batches, and the bytes read.
void feedrate_fake_cufile_counts(long* driver_opens, long* handles, long* buffers, long* batches,
                                 unsigned long long* bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  *driver_opens = g_driver_opens;
  *handles = g_handles;
  *buffers = static_cast<long>(g_buffers.size());
  *batches = g_batches;
  *bytes = g_bytes;
}

}  // extern "C"
