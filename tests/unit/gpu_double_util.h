// What the GPU unit tests share: environment overrides that point the loader at the test doubles
// (tests/gpu_double), and the doubles' own counters of what is still allocated or registered.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace feedrate::gpu {

// Points the loader at a library for one test and puts the environment back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? (void)::setenv(name_, old_.c_str(), 1) : (void)::unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// Keeps a double loaded for a test, so its counters outlive the loader's own dlopen/dlclose of it.
class Pinned {
 public:
  explicit Pinned(const char* path) : handle_(::dlopen(path, RTLD_NOW)) {}
  ~Pinned() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  bool ok() const { return handle_ != nullptr; }

 private:
  void* handle_;
};

struct CudaCounts {
  long device_allocs, pinned_allocs, streams, contexts;
  unsigned long long h2d_bytes;
};
inline CudaCounts FakeCudaCounts() {
  CudaCounts c{};
  void* lib = ::dlopen(FEEDRATE_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return c;
  auto fn = reinterpret_cast<void (*)(long*, long*, long*, long*, unsigned long long*)>(::dlsym(lib, "feedrate_fake_cuda_counts"));
  fn(&c.device_allocs, &c.pinned_allocs, &c.streams, &c.contexts, &c.h2d_bytes);
  ::dlclose(lib);
  return c;
}
struct CuFileCounts {
  long driver_opens, handles, buffers, batches;
  unsigned long long bytes;
};
inline CuFileCounts FakeCuFileCounts() {
  CuFileCounts c{};
  void* lib = ::dlopen(FEEDRATE_FAKE_CUFILE, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return c;
  auto fn = reinterpret_cast<void (*)(long*, long*, long*, long*, unsigned long long*)>(::dlsym(lib, "feedrate_fake_cufile_counts"));
  fn(&c.driver_opens, &c.handles, &c.buffers, &c.batches, &c.bytes);
  ::dlclose(lib);
  return c;
}
struct CuFileReads {
  unsigned long long registered, unregistered, buffered_handles, registrations;
};
inline CuFileReads FakeCuFileReads() {
  CuFileReads c{};
  void* lib = ::dlopen(FEEDRATE_FAKE_CUFILE, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return c;
  auto fn = reinterpret_cast<void (*)(unsigned long long*, unsigned long long*, unsigned long long*, unsigned long long*)>(
      ::dlsym(lib, "feedrate_fake_cufile_reads"));
  fn(&c.registered, &c.unregistered, &c.buffered_handles, &c.registrations);
  ::dlclose(lib);
  return c;
}

}  // namespace feedrate::gpu
