// A test double of libcuda.so.1 over host memory: the CUDA driver entry points Feedrate's loader/gpu binds, with
// "device" memory from malloc, copies done at once, kernels that keep their stream busy for the time they were
// asked to run (only feedrate_spin, from a module whose PTX text declares it), and counters the tests read. Loaded
// through FEEDRATE_LIBCUDA. FEEDRATE_FAKE_CUDA_DEVICES=N (default 1) sets the device count; 0 makes cuInit fail
// with CUDA_ERROR_NO_DEVICE.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNotInitialized = 3, kNoDevice = 100,
              kInvalidDevice = 101, kInvalidImage = 200, kInvalidContext = 201, kInvalidPtx = 218, kNotFound = 500;

std::atomic<bool> g_inited{false};
std::atomic<long> g_device_allocs{0}, g_pinned_allocs{0}, g_streams{0}, g_contexts{0}, g_events{0};
std::atomic<unsigned long long> g_h2d_bytes{0}, g_launches{0}, g_kernel_ns{0};
std::atomic<long> g_modules{0};
// Device allocations by base and size, so a kernel's memory argument can be checked.
std::mutex g_alloc_mu;
std::map<unsigned long long, size_t> g_allocs;
// Each thread's current context, as the driver keeps it. Not a thread_local: ThreadSanitizer (gcc 12 with glibc
// 2.36) can fail to map shadow for a dlopen'ed library's dynamic TLS block when a new thread first touches it
// ("failed to allocate 0x1ec4... bytes"), and I/O threads are exactly such threads here.
std::mutex g_current_mu;
std::map<pthread_t, void*> g_current;
void SetCurrent(void* ctx) {
  std::lock_guard<std::mutex> lock(g_current_mu);
  g_current[pthread_self()] = ctx;
}
bool HasCurrent() {
  std::lock_guard<std::mutex> lock(g_current_mu);
  auto it = g_current.find(pthread_self());
  return it != g_current.end() && it->second != nullptr;
}

// Page-aligned, as the real allocations are (O_DIRECT reads land in them).
void* PageAligned(size_t bytes) { return std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096 + (bytes == 0 ? 4096 : 0)); }

int Devices() {
  const char* v = std::getenv("FEEDRATE_FAKE_CUDA_DEVICES");
  return v != nullptr ? std::atoi(v) : 1;
}

long long NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// One context object per device (the primary context), identified by its address.
char g_context_tokens[16];

// A stream: the time its queued work (kernels) ends; copies complete at once.
struct FakeStream {
  std::atomic<long long> busy_until{0};
};
struct FakeModule {
  bool has_spin;
};
constexpr int kSms = 4;  // the double's multiprocessor count

void WaitUntil(long long t) {
  const long long left = t - NowNs();
  if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
}

}  // namespace

extern "C" {

int cuInit(unsigned) {
  if (Devices() <= 0) return kNoDevice;
  g_inited = true;
  return kSuccess;
}
int cuDriverGetVersion(int* v) {
  *v = 12040;
  return kSuccess;
}
int cuDeviceGetCount(int* n) {
  if (!g_inited) return kNotInitialized;
  *n = Devices();
  return kSuccess;
}
int cuDeviceGet(int* d, int ordinal) {
  if (ordinal < 0 || ordinal >= Devices() || ordinal >= 16) return kInvalidDevice;
  *d = ordinal;
  return kSuccess;
}
int cuDeviceGetName(char* name, int len, int d) {
  if (len <= 0) return kInvalidValue;
  std::strncpy(name, "Feedrate test double GPU", static_cast<size_t>(len) - 1);
  name[len - 1] = '\0';
  (void)d;
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void** ctx, int d) {
  if (d < 0 || d >= 16) return kInvalidDevice;
  *ctx = &g_context_tokens[d];
  ++g_contexts;
  return kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int) {
  --g_contexts;
  return kSuccess;
}
int cuCtxSetCurrent(void* ctx) {
  SetCurrent(ctx);
  return kSuccess;
}
int cuMemAlloc_v2(unsigned long long* ptr, size_t bytes) {
  if (!HasCurrent()) return kInvalidContext;
  void* p = PageAligned(bytes);
  if (p == nullptr) return kOutOfMemory;
  *ptr = reinterpret_cast<unsigned long long>(p);
  ++g_device_allocs;
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  g_allocs[*ptr] = bytes;
  return kSuccess;
}
int cuMemFree_v2(unsigned long long ptr) {
  {
    std::lock_guard<std::mutex> lock(g_alloc_mu);
    g_allocs.erase(ptr);
  }
  std::free(reinterpret_cast<void*>(ptr));
  --g_device_allocs;
  return kSuccess;
}
int cuMemHostAlloc(void** ptr, size_t bytes, unsigned) {
  *ptr = PageAligned(bytes);
  if (*ptr == nullptr) return kOutOfMemory;
  ++g_pinned_allocs;
  return kSuccess;
}
int cuMemFreeHost(void* ptr) {
  std::free(ptr);
  --g_pinned_allocs;
  return kSuccess;
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t bytes, void*) {
  if (!HasCurrent()) return kInvalidContext;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  g_h2d_bytes += bytes;
  return kSuccess;
}
int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return kSuccess;
}
int cuStreamCreate(void** stream, unsigned) {
  if (!HasCurrent()) return kInvalidContext;
  *stream = new FakeStream;
  ++g_streams;
  return kSuccess;
}
int cuStreamSynchronize(void* stream) {
  if (stream != nullptr) WaitUntil(static_cast<FakeStream*>(stream)->busy_until.load());
  return kSuccess;
}
int cuStreamDestroy_v2(void* stream) {
  delete static_cast<FakeStream*>(stream);
  --g_streams;
  return kSuccess;
}
// Events: an event holds the time the work queued before it ends (now, or the end of the stream's last kernel).
int cuEventCreate(void** event, unsigned) {
  if (!HasCurrent()) return kInvalidContext;
  *event = new long long(0);
  ++g_events;
  return kSuccess;
}
int cuEventRecord(void* event, void* stream) {
  if (!HasCurrent()) return kInvalidContext;
  const long long busy = stream != nullptr ? static_cast<FakeStream*>(stream)->busy_until.load() : 0;
  *static_cast<long long*>(event) = std::max(NowNs(), busy);
  return kSuccess;
}
int cuEventSynchronize(void* event) {
  WaitUntil(*static_cast<long long*>(event));
  return kSuccess;
}
int cuEventElapsedTime(float* ms, void* start, void* end) {
  *ms = static_cast<float>(static_cast<double>(*static_cast<long long*>(end) - *static_cast<long long*>(start)) / 1e6);
  return kSuccess;
}
int cuEventDestroy_v2(void* event) {
  delete static_cast<long long*>(event);
  --g_events;
  return kSuccess;
}
int cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (device < 0 || device >= Devices()) return kInvalidDevice;
  if (attribute != 16) return kInvalidValue;  // only CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT is asked for
  *value = kSms;
  return kSuccess;
}
// PTX text only: the header the driver's JIT needs, and whether it declares feedrate_spin.
int cuModuleLoadData(void** module, const void* image) {
  if (!HasCurrent()) return kInvalidContext;
  if (image == nullptr) return kInvalidImage;
  const std::string ptx(static_cast<const char*>(image));
  if (ptx.find(".version ") == std::string::npos || ptx.find(".target sm_") == std::string::npos ||
      ptx.find(".address_size 64") == std::string::npos) {
    return kInvalidPtx;
  }
  *module = new FakeModule{ptx.find(".visible .entry feedrate_spin(") != std::string::npos};
  ++g_modules;
  return kSuccess;
}
int cuModuleUnload(void* module) {
  delete static_cast<FakeModule*>(module);
  --g_modules;
  return kSuccess;
}
int cuModuleGetFunction(void** fn, void* module, const char* name) {
  if (module == nullptr || name == nullptr) return kInvalidValue;
  if (!static_cast<FakeModule*>(module)->has_spin || std::strcmp(name, "feedrate_spin") != 0) return kNotFound;
  *fn = module;
  return kSuccess;
}
// feedrate_spin(duration_ns, buf, words): its stream is busy for duration_ns after what was queued before; the
// memory argument must be a whole allocation's words and no thread may start past its end (the kernel's contract),
// and every word is touched once, so a bad pointer shows under the sanitizers.
int cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned,
                   void* stream, void** params, void** extra) {
  if (!HasCurrent()) return kInvalidContext;
  if (fn == nullptr || params == nullptr || extra != nullptr || gx * gy * gz == 0 || bx * by * bz == 0 || bx > 1024) {
    return kInvalidValue;
  }
  const long long launched = NowNs();  // the kernel's time starts here, not after the double touches its memory
  const unsigned long long duration = *static_cast<unsigned long long*>(params[0]);
  const unsigned long long buf = *static_cast<unsigned long long*>(params[1]);
  const unsigned long long words = *static_cast<unsigned long long*>(params[2]);
  if (buf != 0) {
    std::lock_guard<std::mutex> lock(g_alloc_mu);
    auto it = g_allocs.find(buf);
    if (it == g_allocs.end() || words * 8 > it->second || static_cast<unsigned long long>(gx) * bx > words) return kInvalidValue;
    auto* w = reinterpret_cast<unsigned long long*>(buf);
    for (unsigned long long i = 0; i < words; ++i) ++w[i];
  }
  auto* s = static_cast<FakeStream*>(stream);
  if (s != nullptr) s->busy_until.store(std::max(launched, s->busy_until.load()) + static_cast<long long>(duration));
  ++g_launches;
  g_kernel_ns += duration;
  return kSuccess;
}
int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case kSuccess: *name = "CUDA_SUCCESS"; return kSuccess;
    case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; return kSuccess;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return kSuccess;
    case kNotInitialized: *name = "CUDA_ERROR_NOT_INITIALIZED"; return kSuccess;
    case kNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; return kSuccess;
    case kInvalidDevice: *name = "CUDA_ERROR_INVALID_DEVICE"; return kSuccess;
    case kInvalidContext: *name = "CUDA_ERROR_INVALID_CONTEXT"; return kSuccess;
    case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; return kSuccess;
    case kInvalidPtx: *name = "CUDA_ERROR_INVALID_PTX"; return kSuccess;
    case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; return kSuccess;
    default: *name = nullptr; return kInvalidValue;
  }
}

// For the tests: what is still allocated, and the bytes copied to the "device".
void feedrate_fake_cuda_counts(long* device_allocs, long* pinned_allocs, long* streams, long* contexts,
                               unsigned long long* h2d_bytes) {
  *device_allocs = g_device_allocs;
  *pinned_allocs = g_pinned_allocs;
  *streams = g_streams;
  *contexts = g_contexts;
  *h2d_bytes = g_h2d_bytes;
}

}  // extern "C"

// FEEDRATE_FAKE_CUDA_REPORT=<file>: when the library is unloaded (dlclose or process exit), one line is appended
// with what is still allocated and the bytes copied, so a test of a whole `feedrate` process can check that every
// buffer, stream and event was freed and that the copies it reports were made.
__attribute__((destructor)) static void ReportAtUnload() {
  const char* path = std::getenv("FEEDRATE_FAKE_CUDA_REPORT");
  if (path == nullptr || !g_inited) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "device_allocs=%ld pinned_allocs=%ld streams=%ld events=%ld contexts=%ld h2d_bytes=%llu "
                    "modules=%ld launches=%llu kernel_ns=%llu\n",
                 g_device_allocs.load(), g_pinned_allocs.load(), g_streams.load(), g_events.load(), g_contexts.load(),
                 g_h2d_bytes.load(), g_modules.load(), g_launches.load(), g_kernel_ns.load());
    std::fclose(f);
  }
}
