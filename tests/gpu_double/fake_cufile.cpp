// A test double of libcufile.so.0 over host memory: registration, cuFileRead and the batch API as cufile.h
// declares them, reads done with pread into the "device" memory of the fake libcuda. Loaded through
// FEEDRATE_LIBCUFILE. FEEDRATE_FAKE_CUFILE_DRIVER=fail makes cuFileDriverOpen fail as it does without the nvidia-fs
// module (and compat mode off); FEEDRATE_FAKE_CUFILE_HANDLE=fail makes every handle registration fail as on a file
// system cuFile does not take; FEEDRATE_FAKE_CUFILE_NVFS=<major.minor> is the nvidia-fs version the driver
// properties report (default 2.17; 0.0: compat mode). feedrate_fake_cufile_counts says what is still registered,
// feedrate_fake_cufile_reads how reads and registrations went, FEEDRATE_FAKE_CUFILE_REPORT=<file> both at unload.
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <map>
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
              kBatchFull = 5037, kIoNotSupported = 5008, kPinningFailed = 5036;
constexpr int kComplete = 0x10, kFailed = 0x40;

std::mutex g_mu;
std::map<const char*, size_t> g_buffers;  // registered base -> bytes
std::map<const void*, int> g_streams;     // streams registered with cuFileStreamRegister
std::atomic<long> g_handles{0}, g_batches{0}, g_driver_opens{0};
std::atomic<unsigned long long> g_bytes{0}, g_registered_reads{0}, g_unregistered_reads{0}, g_buffered_handles{0},
    g_registrations{0};

bool EnvIs(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

// Whether [base + offset, + size) lies in one registered buffer whose base is `base` (cuFile's rule for registered
// memory: the registration's base and an offset into it).
bool InRegistered(const void* base, off_t offset, size_t size) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_buffers.find(static_cast<const char*>(base));
  return it != g_buffers.end() && offset >= 0 && static_cast<size_t>(offset) <= it->second &&
         size <= it->second - static_cast<size_t>(offset);
}

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
  if (EnvIs("FEEDRATE_FAKE_CUFILE_DRIVER", "fail")) return Err(kDriverNotInitialized);
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
  if (EnvIs("FEEDRATE_FAKE_CUFILE_HANDLE", "fail")) return Err(kIoNotSupported);
  const int flags = ::fcntl(d->handle.fd, F_GETFL);
  if (flags < 0) return Err(kInvalidValue);
  if ((flags & O_DIRECT) == 0) ++g_buffered_handles;
  ++g_registrations;
  *fh = new Handle{d->handle.fd};
  ++g_handles;
  return Ok();
}
void cuFileHandleDeregister(void* fh) {
  delete static_cast<Handle*>(fh);
  --g_handles;
}
Error cuFileBufRegister(const void* base, size_t bytes, int) {
  if (EnvIs("FEEDRATE_FAKE_CUFILE_BUF", "fail")) return Err(kPinningFailed);  // (the GPU's BAR space exhausted)
  std::lock_guard<std::mutex> lock(g_mu);
  return g_buffers.emplace(static_cast<const char*>(base), bytes).second ? Ok() : Err(kAlreadyRegistered);
}
Error cuFileBufDeregister(const void* base) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_buffers.erase(static_cast<const char*>(base)) == 1 ? Ok() : Err(kNotRegistered);
}
ssize_t cuFileRead(void* fh, void* base, size_t size, off_t file_offset, off_t buf_offset) {
  if (fh == nullptr) return -kInvalidValue;
  ++(InRegistered(base, buf_offset, size) ? g_registered_reads : g_unregistered_reads);
  return ReadAt(static_cast<Handle*>(fh), base, size, file_offset, buf_offset);
}

// The stream-ordered API: the double reads at once (its streams have nothing queued before a read) and refuses a
// stream that was not registered, so a test sees that Feedrate registers its streams.
Error cuFileStreamRegister(void* stream, unsigned) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_streams.emplace(stream, 1).second ? Ok() : Err(kInvalidValue);
}
Error cuFileStreamDeregister(void* stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_streams.erase(stream) == 1 ? Ok() : Err(kInvalidValue);
}
Error cuFileReadAsync(void* fh, void* base, size_t* size_p, off_t* file_offset_p, off_t* buf_offset_p,
                      ssize_t* bytes_read_p, void* stream) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_streams.count(stream) == 0) return Err(kInvalidValue);
  }
  if (fh == nullptr || size_p == nullptr || file_offset_p == nullptr || buf_offset_p == nullptr || bytes_read_p == nullptr) {
    return Err(kInvalidValue);
  }
  *bytes_read_p = cuFileRead(fh, base, *size_p, *file_offset_p, *buf_offset_p);
  return Ok();
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

// CUfileDrvProps_t as cufile.h lays it out (56 bytes on LP64).
struct DrvProps {
  struct {
    unsigned major_version, minor_version;
    size_t poll_thresh_size, max_direct_io_size;
    unsigned dstatusflags, dcontrolflags;
  } nvfs;
  unsigned fflags, max_device_cache_size, per_buffer_cache_size, max_device_pinned_mem_size, max_batch_io_size,
      max_batch_io_timeout_msecs;
};
Error cuFileDriverGetProperties(DrvProps* p) {
  if (p == nullptr) return Err(kInvalidValue);
  *p = DrvProps{};
  unsigned major = 2, minor = 17;
  if (const char* v = std::getenv("FEEDRATE_FAKE_CUFILE_NVFS")) std::sscanf(v, "%u.%u", &major, &minor);
  p->nvfs.major_version = major;
  p->nvfs.minor_version = minor;
  p->nvfs.max_direct_io_size = 16u << 20;
  p->nvfs.dstatusflags = major > 0 ? (1u << 4) | (1u << 2) : 0;  // NVMe, NFS
  p->nvfs.dcontrolflags = 1u << 1;                                 // compat mode allowed
  p->fflags = 1u << 1;                                             // batch API
  p->max_batch_io_size = 128;
  return Ok();
}

// For the tests: reads into registered memory (base and offset inside a registration) and elsewhere, handles
// registered on descriptors without O_DIRECT, and handle registrations in all.
void feedrate_fake_cufile_reads(unsigned long long* registered, unsigned long long* unregistered,
                                unsigned long long* buffered_handles, unsigned long long* registrations) {
  *registered = g_registered_reads;
  *unregistered = g_unregistered_reads;
  *buffered_handles = g_buffered_handles;
  *registrations = g_registrations;
}

// For the tests: open driver sessions, registered handles, buffers and batches, and the bytes read.
void feedrate_fake_cufile_counts(long* driver_opens, long* handles, long* buffers, long* batches,
                                 unsigned long long* bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  *driver_opens = g_driver_opens;
  *handles = g_handles + static_cast<long>(g_streams.size());  // a stream left registered counts as a handle
  *buffers = static_cast<long>(g_buffers.size());
  *batches = g_batches;
  *bytes = g_bytes;
}

}  // extern "C"

// FEEDRATE_FAKE_CUFILE_REPORT=<file>: when the library is unloaded, one line with what is still open or registered
// and how the reads went, so a test of a whole `feedrate` process can check both.
__attribute__((destructor)) static void ReportAtUnload() {
  const char* path = std::getenv("FEEDRATE_FAKE_CUFILE_REPORT");
  if (path == nullptr || g_registrations == 0) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "driver_opens=%ld handles=%ld buffers=%zu bytes=%llu registered_reads=%llu unregistered_reads=%llu "
                    "buffered_handles=%llu registrations=%llu\n",
                 g_driver_opens.load(), g_handles.load(), g_buffers.size(), g_bytes.load(), g_registered_reads.load(),
                 g_unregistered_reads.load(), g_buffered_handles.load(), g_registrations.load());
    std::fclose(f);
  }
}
